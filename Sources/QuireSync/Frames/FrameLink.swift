import QuireCore
import QuireCrypto

/// This device's end of the sealed link to its siblings: the session it
/// seals under, the replay guard frames are opened through, the chunks of
/// messages still arriving, and the state file both survive restarts in
/// (`SyncPersistentState`: our own session floor, the senders' floors).
///
/// Its rules: a session stamp is written down before frames of it leave
/// (at start and when a sibling makes us start a new one), so a restart can
/// never reuse one; and the floors the guard holds are written down before
/// anything a new session of a sender says is acted on, so after a crash
/// frames of it are refused as replays (`persistFloors`).
struct FrameLink {
    let me: FrameIdentity
    let maxFrameSize: Int
    /// Where the session floor and replay floors are kept (nil: nowhere).
    let statePath: String?
    private(set) var sealer: FrameSealer
    private(set) var replay: ReplayGuard
    private var chunks = ChunkAssembler()
    /// Partial messages given up so far that were already reported.
    private var reportedExpired = 0
    /// The floors as last written to `statePath`.
    private var persistedFloors: [DeviceID: UInt64]

    /// Reads the floors kept by the last run and starts a session after
    /// every one it ran, recording its stamp. A state file that cannot be
    /// written is not fatal: the stamp still follows the wall clock.
    init(me: FrameIdentity, maxFrameSize: Int, statePath: String?, startedAt: Timestamp, sessionID: [UInt8]) {
        self.me = me
        self.maxFrameSize = maxFrameSize
        self.statePath = statePath
        var persisted = statePath.map(SyncPersistentState.load) ?? SyncPersistentState()
        // Session stamps only grow, even across restarts within one second
        // or a clock that stepped back: a receiver must see this session as newer.
        let start = max(UInt64(max(startedAt.seconds, 0)) * 1000, persisted.ownSessionStart + 1)
        persisted.ownSessionStart = start
        var floors: [DeviceID: UInt64] = [:]
        for (hex, value) in persisted.replayFloors { if let id = ID16(hex: hex) { floors[id] = value } }
        replay = ReplayGuard(floors: floors)
        persistedFloors = floors
        sealer = FrameSealer(identity: me, session: sessionID, sessionStart: start, maxFrameSize: maxFrameSize)
        if let statePath { try? persisted.save(path: statePath) }
    }

    // MARK: Out

    /// The frames that carry `message` to a sibling (several chunks if large).
    mutating func seal(_ message: SyncMessage, to device: DeviceID, boxKey: BoxPublicKey,
                       messageID: @autoclosure () -> [UInt8]) -> [[UInt8]] {
        sealer.seal(message, to: device, boxKey: boxKey, messageID: messageID())
    }

    /// An introduction: sealed anonymously, since the sibling may not hold
    /// our certificate yet.
    mutating func sealIntroduction(_ payload: [UInt8], to device: DeviceID, boxKey: BoxPublicKey) -> [UInt8] {
        sealer.sealAnonymously(SyncMessage(subKind: .introduce, payload: payload), to: device, boxKey: boxKey)
    }

    /// What a sibling's guard said it accepted of ours is ahead of the
    /// session we run (we were put back from a copy, or it restarted and
    /// closed our session): starts a new session after it and writes its
    /// stamp down. nil: nothing to do. `saveError`: the stamp could not be
    /// written (the session still starts; stamps follow the clock).
    mutating func startSession(after seen: SessionSeen, now: Timestamp,
                               sessionID: () -> [UInt8]) -> (closedByRestart: Bool, saveError: (any Error)?)? {
        guard seen.isAhead(ofStart: sealer.sessionStart, id: sealer.session) else { return nil }
        let closedByRestart = seen.id == nil && seen.start == sealer.sessionStart
        let start = max(seen.start + 1, UInt64(max(now.seconds, 0)) * 1000)
        sealer = FrameSealer(identity: me, session: sessionID(), sessionStart: start, maxFrameSize: maxFrameSize)
        var saveError: (any Error)?
        if let statePath {
            var state = SyncPersistentState.load(path: statePath)
            state.ownSessionStart = max(state.ownSessionStart, start)
            do { try state.save(path: statePath) } catch { saveError = error }
        }
        return (closedByRestart, saveError)
    }

    // MARK: In

    /// Opens a frame in the fixed order of checks (`FrameOpener`); a fresh
    /// authenticated frame is recorded by the replay guard.
    mutating func open(_ bytes: [UInt8], roster: Roster) -> Result<InnerFrame, FrameDrop> {
        FrameOpener.open(bytes, maxSize: maxFrameSize, me: me, roster: roster, replay: &replay)
    }

    /// The revoked device that sealed a refused frame with its own key
    /// (nil: none did; format 1, where the sender is named, is answered
    /// only when its box opens with that sender's key).
    func revokedSender(of bytes: [UInt8], roster: Roster) -> DeviceID? {
        if OpaqueEnvelope.isOpaque(bytes) { return OpaqueEnvelope.revokedSender(bytes, me: me, roster: roster) }
        guard case .success(let envelope) = Envelope.parse(bytes, maxSize: maxFrameSize), envelope.boxKind == .authenticated,
              envelope.recipient == me.deviceID, let member = roster[envelope.claimedSender], member.isRevoked,
              (try? Box.open(envelope.box, from: member.boxKey, to: me.box)) != nil else { return nil }
        return member.deviceID
    }

    /// Adds a chunk of an authenticated frame: the whole message once its
    /// last chunk arrived, and how many partial messages were given up to
    /// make room or for their age.
    mutating func reassemble(_ chunk: Chunk, from sender: DeviceID, nowMs: UInt64) -> (message: SyncMessage?, expired: Int) {
        let whole = chunks.add(chunk, from: sender, nowMs: nowMs)
        return (whole, newlyExpired())
    }

    /// Drops partial messages that stopped arriving; returns how many.
    mutating func expireChunks(nowMs: UInt64) -> Int {
        chunks.expire(nowMs: nowMs)
        return newlyExpired()
    }

    /// Partial messages given up since the last report, by either way.
    private mutating func newlyExpired() -> Int {
        defer { reportedExpired = chunks.expired }
        return chunks.expired - reportedExpired
    }

    /// Partial messages wait for their other chunks.
    var isReassembling: Bool { !chunks.isEmpty }

    /// Whether a frame of this sibling ever opened here (now or before a
    /// restart): if so, it holds our certificate.
    func hasHeard(from device: DeviceID) -> Bool { replay.floors[device] != nil }

    /// The newest session of a sibling our guard accepted, told back to it.
    func newestSession(of device: DeviceID) -> SessionSeen? { replay.newestSession(of: device) }

    // MARK: Restarts

    /// Writes the guard's floors down when they moved since last written
    /// (with our own session floor, which only grows). Throws only when
    /// there is a state file and it cannot be written; the next call tries again.
    mutating func persistFloors() throws {
        guard let statePath else { return }
        let floors = replay.floors
        guard floors != persistedFloors else { return }
        var state = SyncPersistentState.load(path: statePath)
        state.replayFloors = Dictionary(uniqueKeysWithValues: floors.map { ($0.key.hex, $0.value) })
        state.ownSessionStart = max(state.ownSessionStart, sealer.sessionStart)
        try state.save(path: statePath)
        persistedFloors = floors
    }
}
