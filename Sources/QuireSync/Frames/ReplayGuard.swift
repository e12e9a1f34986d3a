import QuireCore

/// Refuses frames seen before. Each sender numbers its frames within a
/// session (random id, start stamp that only grows across its restarts); we
/// keep, per sender, the newest session and a 1,024-frame window of
/// sequence numbers, like IPsec's anti-replay window. A frame from an older
/// session, or one already marked in the window, is a replay. Reordering
/// inside the window is accepted: the relay may reorder by contract.
///
/// Replays are harmless to the replica (merges are idempotent and the
/// content is authentic); the guard keeps them from costing work and makes
/// them visible in the counters.
public struct ReplayGuard: Sendable {
    public static let windowSize: UInt64 = 1024

    struct SenderState: Sendable {
        var session: [UInt8]?
        var start: UInt64
        var highest: UInt64 = 0
        var seen: [UInt64] = Array(repeating: 0, count: Int(ReplayGuard.windowSize / 64))   // bit i: highest - i
        var hasAny = false
    }

    private var senders: [DeviceID: SenderState] = [:]

    public init() {}

    /// Session starts remembered from before a restart: anything older is refused.
    public init(floors: [DeviceID: UInt64]) {
        for (device, start) in floors { senders[device] = SenderState(session: nil, start: start) }
    }

    /// The newest session start seen per sender, to persist across restarts.
    public var floors: [DeviceID: UInt64] { senders.mapValues(\.start) }

    /// The newest session of `sender` this guard accepted (id nil: a floor
    /// from before our restart), told back to the sender in our digest.
    public func newestSession(of sender: DeviceID) -> SessionSeen? {
        senders[sender].map { SessionSeen(start: $0.start, id: $0.session) }
    }

    /// True if the frame is fresh (and records it); false for a replay.
    public mutating func accept(sender: DeviceID, session: [UInt8], start: UInt64, sequence: UInt64) -> Bool {
        guard var state = senders[sender] else {
            senders[sender] = Self.fresh(session: session, start: start, sequence: sequence)
            return true
        }
        if state.session != session {
            // A new session replaces the old one only if it started later;
            // equal stamps are ordered by session id so both ends agree.
            let newer: Bool
            if start != state.start {
                newer = start > state.start
            } else if let current = state.session {
                newer = current.lexicographicallyPrecedes(session)
            } else {
                // A floor from before our restart: its session is closed.
                // Its window was not kept, so any frame of it could be a
                // replay captured before the restart; the sender learns
                // from our digest (`SessionSeen` with no id) and starts a
                // new session, which is accepted.
                newer = false
            }
            guard newer else { return false }
            senders[sender] = Self.fresh(session: session, start: start, sequence: sequence)
            return true
        }
        if !state.hasAny || sequence > state.highest {
            let shift = state.hasAny ? sequence - state.highest : ReplayGuard.windowSize
            state.seen = Self.shifted(state.seen, by: shift)
            state.highest = sequence
            state.hasAny = true
            state.seen[0] |= 1
            senders[sender] = state
            return true
        }
        let age = state.highest - sequence
        guard age < ReplayGuard.windowSize else { return false }
        let word = Int(age / 64), bit = UInt64(1) << (age % 64)
        if state.seen[word] & bit != 0 { return false }
        state.seen[word] |= bit
        senders[sender] = state
        return true
    }

    private static func fresh(session: [UInt8], start: UInt64, sequence: UInt64) -> SenderState {
        var s = SenderState(session: session, start: start)
        s.highest = sequence
        s.hasAny = true
        s.seen[0] = 1
        return s
    }

    /// The bitmap after the window's top moved up by `n` (bit i means highest - i).
    private static func shifted(_ words: [UInt64], by n: UInt64) -> [UInt64] {
        if n >= ReplayGuard.windowSize { return Array(repeating: 0, count: words.count) }
        let wordShift = Int(n / 64), bitShift = n % 64
        var out = [UInt64](repeating: 0, count: words.count)
        for i in stride(from: words.count - 1, through: wordShift, by: -1) {
            var v = words[i - wordShift] << bitShift
            if bitShift > 0, i - wordShift - 1 >= 0 { v |= words[i - wordShift - 1] >> (64 - bitShift) }
            out[i] = v
        }
        return out
    }
}

/// A sender's session as a receiver's guard holds it. A sender told one
/// that is ahead of its own (`isAhead(ofStart:id:)`) has every frame refused
/// by that receiver as a replay: its directory was put back from a copy
/// (the session stamp in `sync-state.json` went back with it) under a clock
/// not yet past the session it started since.
public struct SessionSeen: Equatable, Sendable {
    public var start: UInt64
    public var id: [UInt8]?

    public init(start: UInt64, id: [UInt8]?) {
        self.start = start
        self.id = id
    }

    /// Whether the receiver refuses a session (start, id) for this one:
    /// a later start, or the same start under another id (the guard orders
    /// those by id; a sender never starts two sessions at one stamp unless
    /// it was put back, so it must move on rather than trust the coin).
    public func isAhead(ofStart start: UInt64, id: [UInt8]) -> Bool {
        if self.start != start { return self.start > start }
        // No id: the receiver restarted and closed the session it last saw
        // of ours; only a new session gets through.
        guard let seen = self.id else { return true }
        return seen != id
    }
}
