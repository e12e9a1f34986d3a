import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore

/// The sibling sync loop of one device: sealed frames over a relay, digest
/// advertisement, range-fingerprint pulls from both ends, storm guard.
///
/// Everything it touches is injected (store, identity, relay, clock,
/// randomness), so a simulator can drive a whole fleet in one process:
/// call `attach()` once, then `step()` whenever frames were delivered or
/// the fake clock moved. `start()` does the same on a thread of its own.
///
/// All state lives behind one lock; relay threads only enqueue bytes.
public final class SyncEngine: @unchecked Sendable {
    public struct Dependencies: Sendable {
        public var store: ReplicaStore
        public var identity: Identity
        public var relay: any Relay
        public var clock: any Clock
        public var random: any RandomSource
        /// This device's generation (prefs); read whenever a digest is built.
        public var generation: @Sendable () -> UInt64
        /// One line per notable event (storms, refusals, errors).
        public var log: @Sendable (String) -> Void
        /// Where to write the status snapshot (`<home>/sync-status.json`), if anywhere.
        public var statusPath: String?
        /// Where to keep replay floors across restarts (`<home>/sync-state.json`).
        public var statePath: String?
        /// Shown in the status snapshot.
        public var relayDescription: String
        /// Every frame in and out and every pull step, for diagnosing a
        /// fleet (the benchmark's BENCH_TRACE); nil in normal use.
        public var trace: (@Sendable (String) -> Void)?
        /// The cloud folder holding the anchor; nil: this device cannot lead
        /// a barrier (it has nowhere to write the anchor).
        public var cloud: CloudFolder?
        /// This device's cloud-anchor switch (prefs); off: it never acks.
        public var isAnchorEnabled: @Sendable () -> Bool = { true }
        /// Records a new local generation (prefs; refuses to move backward).
        public var setGeneration: @Sendable (UInt64) throws -> Void = { _ in }
        /// Also wake on commits by other processes (the CLI writing while a
        /// mount syncs), through an inotify watch; off in the simulator,
        /// where every store is in this process.
        public var watchOtherProcesses = false
        /// A device waiting to be admitted: its enrolment, signed by the
        /// invite's pairing key, sent with every introduction until admitted.
        public var enrolment: [UInt8]? = nil
        /// Keeps the backup key a sibling sealed to this device when it
        /// admitted it (writes `keys/backup.key`, drops the enrolment).
        public var admitted: (@Sendable (SecretBytes) throws -> Void)? = nil
        /// The rotation keys this device held at start (`keys/backup-keys`).
        public var rotationKeys = BackupKeyRing()
        /// Stores the rotation keys durably; called before any new key is used.
        public var keepRotationKeys: (@Sendable (BackupKeyRing) throws -> Void)? = nil

        public init(store: ReplicaStore, identity: Identity, relay: any Relay, clock: any Clock, random: any RandomSource,
                    generation: @escaping @Sendable () -> UInt64 = { 0 }, log: @escaping @Sendable (String) -> Void = { _ in },
                    statusPath: String? = nil, statePath: String? = nil, relayDescription: String = "") {
            self.store = store; self.identity = identity; self.relay = relay; self.clock = clock; self.random = random
            self.generation = generation; self.log = log; self.statusPath = statusPath; self.statePath = statePath
            self.relayDescription = relayDescription
        }
    }

    let deps: Dependencies
    let configuration: SyncConfiguration
    var store: ReplicaStore { deps.store }
    var clock: any Clock { deps.clock }
    let me: FrameIdentity
    let accountKey: SigningPublicKey
    /// The account's backup key (anchor sealing). A joining device holds a
    /// random stand-in until a sibling admits it and seals it the real one.
    var backupKey: SecretBytes
    /// Refusals caused by unauthenticated frames (introductions, which any
    /// holder of the account id can send with any sender id): grouped and
    /// rate-limited, so made-up senders cannot flood the log.
    var refusalLog = LogThrottle()
    /// When revoked devices were last told so (Roster/SyncEngine+RevocationNotice).
    var revocationNotices = RevocationNoticeThrottle()
    /// Why a trusted sibling refused this device's enrolment (nil: none did,
    /// or it was admitted since).
    var admissionRefusal: String?
    var backupKeyIsReal: Bool
    /// The backup keys of rotations (Roster/SyncEngine+BackupKeys): held,
    /// called for by the log, what went wrong opening them.
    var rotationKeys: BackupKeyRing
    var keySchedule = BackupKeySchedule()
    var keyProblems: [String] = []
    var keyRequestAtMs: UInt64?
    /// The account key's X25519 form (anchors seal their keys to it).
    let accountSealingKey: BoxPublicKey
    /// What the last look at the cloud folder found worth saying.
    var anchorWarnings: [String] = []
    /// When the device log copies in the cloud folder are read next (Anchor/SyncEngine+DeviceLog).
    var deviceLogDueMs: UInt64 = 0
    /// The round that committed this device's generation, as last read or
    /// recorded (`SyncEngine+GenerationRound`).
    var roundCache: (generation: UInt64, nonce: [UInt8]?)?
    /// Copies of the device log the last read could not use, in words.
    var deviceLogWarnings: [String] = []

    // MARK: State (guarded by `lock`)
    let lock = NSRecursiveLock()
    // The parts: each keeps its own state and rules; the engine routes
    // between them, on its one thread, under this lock.
    /// Sealing, opening, replay floors and chunks (Frames/FrameLink).
    var link: FrameLink
    /// One entry per sibling on the roster (Engine/SiblingTable).
    var siblings = SiblingTable()
    /// Our digest and when to advertise it (Engine/Advertiser).
    var advertiser: Advertiser
    /// Pulls in flight, their storm guard and what follows them (Reconcile/PullCoordinator).
    var pulls: PullCoordinator
    /// Offloads, recalls and hold queries in flight (Offload/).
    var offloadBook = OffloadBook()
    /// The tombstone barrier (Barrier/).
    var barrier = BarrierState()
    // What the engine keeps itself: the roster, the phase, the store watch,
    // the status and the anchor.
    var roster = Roster(members: [:])
    var rosterRoot: [UInt8]?
    var metrics = SyncMetrics()
    var phase: SyncStatus.Phase = .settling
    var isAttached = false
    let startedAt: Timestamp
    let startedMs: UInt64
    var lastPollMs: UInt64 = 0
    var lastSeq: Int64 = -1
    var commitObservation: CommitObservation?
    /// The safety-net read's interval when no watch could be set.
    var pollFallbackMs: UInt64?
    /// When the catch-up in progress began, with the counters then.
    var catchUpStart: (ms: UInt64, rows: Int, bytes: Int)?
    /// When a pull last ran (a catch-up ends a while after the last one).
    var lastPullMs: UInt64 = 0
    var lastStatusWriteMs: UInt64 = 0
    var lastWrittenStatus: SyncStatus?
    var events: [String] = []
    /// Void revocations of devices on the roster, said once a run (by statement id).
    var voidedRevocationsSaid = Set<DeviceID>()
    var reportedErrors = Set<String>()
    var subscription: RelaySubscription?
    /// Why this device cannot tell or reach the fleet's generation, in words (Anchor/).
    var anchorState: String?
    var lastAnchorCheckMs: UInt64?
    /// When a device waiting behind the fleet looks at the folder again.
    var anchorRecheckAtMs: UInt64?
    /// A sibling's snapshot being received (Anchor/SyncEngine+Snapshot).
    var snapshotAssembly: SnapshotAssembly?
    /// Errors with no success (status says "wedged" past a while).
    var wedge = WedgeDetector()
    /// Rows of ours too large to travel, named in the status (SyncEngine+RowLimits).
    var unsyncable: [RowID: UnsyncableRow] = [:]
    /// Siblings' oversize rows already logged (sender, key, reason).
    var refusedOversize = Set<String>()

    // MARK: Inbox (relay threads → engine)
    let inboxCondition = NSCondition()
    var inbox: [[UInt8]] = []
    var inboxBytes = 0
    /// A commit happened since the last step (the store's observer said so).
    var commitPending = false
    var shedFrames = 0
    /// Frames waiting for the engine thread, bounded in count and bytes.
    static let inboxLimit = 8192
    /// A whole message at the size limit (`RowLimits`) with its frames'
    /// overhead, and room besides: a row sent alone must not be shed
    /// while the engine is busy applying the one before it.
    static let inboxByteLimit = RowLimits.maxMessageBytes + (16 << 20)
    var isRunning = false
    var runnerDone: DispatchSemaphore?

    public init(_ deps: Dependencies, configuration: SyncConfiguration = SyncConfiguration()) {
        self.deps = deps
        self.configuration = configuration
        me = FrameIdentity(deviceID: deps.identity.deviceID, userIDHash: deps.identity.userIDHash, box: deps.identity.deviceBox)
        accountKey = deps.identity.account.publicKey
        backupKey = deps.identity.backupKey
        backupKeyIsReal = deps.identity.hasBackupKey
        rotationKeys = deps.rotationKeys
        // A valid Ed25519 key always converts; the fallback is never used.
        accountSealingKey = (try? BoxPublicKey(convertingSigningKey: deps.identity.account.publicKey)) ?? BoxKeyPair().publicKey
        startedAt = deps.clock.now()
        startedMs = deps.clock.monotonicMilliseconds()
        link = FrameLink(me: me, maxFrameSize: deps.relay.maxFrameSize, statePath: deps.statePath, startedAt: startedAt,
                         sessionID: deps.random.bytes(8))
        advertiser = Advertiser(configuration: configuration)
        pulls = PullCoordinator(configuration: configuration)
    }

    /// The channel this device listens on.
    public var channel: String { SyncChannel.name(userIDHash: me.userIDHash, device: me.deviceID) }

    // MARK: Life cycle

    /// Subscribes, introduces this device to its siblings and advertises.
    public func attach() throws {
        let sub = try deps.relay.subscribe(channel) { [weak self] frame in self?.enqueue(frame) }
        let observation: CommitObservation
        do {
            observation = try store.observeCommits(otherProcesses: deps.watchOtherProcesses) { [weak self] in self?.commitHappened() }
        } catch {
            // No inotify (a limit reached): other processes' commits are
            // seen by the safety-net read instead, which then runs often.
            deps.log("changes by other processes are seen within a second, not at once: \(error)")
            observation = try store.observeCommits { [weak self] in self?.commitHappened() }
            pollFallbackMs = 1_000
        }
        lock.lock()
        defer { lock.unlock() }
        subscription = sub
        commitObservation = observation
        isAttached = true
        do {
            try reloadRoster()
            checkAnchor(trigger: "at start-up")
            lastSeq = try store.changeSequence()
            // A sibling that ever sealed a frame to us holds our certificate;
            // the others (a device that just joined) get an introduction.
            for id in siblings.ids where !link.hasHeard(from: id) { introduce(to: id) }
            let now = clock.monotonicMilliseconds()
            // A list asked for before a restart is asked for again at once.
            if let awaited = try store.awaitedList() {
                barrier.awaitedList = BarrierState.AwaitedList(round: awaited, askedAtMs: now - min(now, BarrierState.AwaitedList.retryMs), asks: 0)
            }
            broadcast(force: true, nowMs: now)
            scheduleHeartbeat(nowMs: now)
        } catch {
            report("start-up", error)
        }
        writeStatus(force: true)
    }

    /// `attach()` plus a thread that runs `step()` as frames arrive, after
    /// each commit, and when the next timer is due (`nextWakeMs`); an idle
    /// engine sleeps. Stop with `stop()`.
    public func start() throws {
        try attach()
        let done = DispatchSemaphore(value: 0)
        inboxCondition.lock()
        isRunning = true
        runnerDone = done
        inboxCondition.unlock()
        let thread = Thread { [self] in
            var wakeAt = clock.monotonicMilliseconds()
            while true {
                inboxCondition.lock()
                if !isRunning { inboxCondition.unlock(); break }
                let now = clock.monotonicMilliseconds()
                if inbox.isEmpty && !commitPending && wakeAt > now {
                    _ = inboxCondition.wait(until: Date(timeIntervalSinceNow: Double(wakeAt - now) / 1000))
                }
                let keepGoing = isRunning
                inboxCondition.unlock()
                if !keepGoing { break }
                step()
                wakeAt = nextWakeMs()
            }
            done.signal()
        }
        thread.name = "quire-sync"
        thread.start()
    }

    /// Stops the thread (if any), leaves the relay channel and writes the
    /// final status. Pending frames are dropped: the relay is lossy anyway.
    public func stop() {
        inboxCondition.lock()
        let wasRunning = isRunning
        isRunning = false
        inboxCondition.broadcast()
        let done = runnerDone
        inboxCondition.unlock()
        if wasRunning { done?.wait() }
        subscription?.cancel()
        commitObservation?.cancel()
        lock.lock()
        defer { lock.unlock() }
        subscription = nil
        commitObservation = nil
        isAttached = false
        if phase != .revoked { phase = .stopped }
        writeStatus(force: true)
    }

    func commitHappened() {
        inboxCondition.lock()
        commitPending = true
        inboxCondition.signal()
        inboxCondition.unlock()
    }

    func enqueue(_ frame: [UInt8]) {
        inboxCondition.lock()
        if inbox.count >= SyncEngine.inboxLimit || inboxBytes + frame.count > SyncEngine.inboxByteLimit {
            // Counted here, folded into the metrics by `step()`: a relay
            // thread never takes the engine lock.
            shedFrames += 1
            inboxCondition.unlock()
            return
        }
        inbox.append(frame)
        inboxBytes += frame.count
        inboxCondition.signal()
        inboxCondition.unlock()
    }

    /// Processes every frame received so far, then the timers: store check
    /// (after a commit), debounced advertisement, heartbeat, pull timeouts,
    /// status snapshot.
    public func step() {
        inboxCondition.lock()
        let frames = inbox
        inbox.removeAll(keepingCapacity: true)
        inboxBytes = 0
        let shed = shedFrames
        shedFrames = 0
        let committed = commitPending
        commitPending = false
        inboxCondition.unlock()
        lock.lock()
        defer { lock.unlock() }
        if shed > 0 { count(.backlog, shed) }
        guard isAttached else { return }
        for frame in frames { handleFrame(frame) }
        let now = clock.monotonicMilliseconds()
        // The store is read after a commit; also, rarely, as a safety net
        // (a database replaced under us, a watch that could not be set).
        if committed || !frames.isEmpty || now &- lastPollMs >= pollIntervalMs {
            lastPollMs = now
            poll(nowMs: now)
        }
        if let due = advertisementDueMs(), now >= due { broadcast(force: false, nowMs: now) }
        if advertiser.isHeartbeatDue(nowMs: now) { heartbeat(nowMs: now) }
        retryUnansweredAdvertisements(nowMs: now)
        for id in siblings.dueIntroductions(nowMs: now) {
            introduce(to: id)
            sendDigest(to: id)
        }
        for key in pulls.timedOut(nowMs: now) { pullTimedOut(key, nowMs: now) }
        offloadTick(nowMs: now)
        requestMissingKeys(nowMs: now)
        barrierTick(nowMs: now)
        if now >= deviceLogDueMs { exchangeDeviceLog(nowMs: now) }
        recheckAnchorWhileWaiting(nowMs: now)
        let expired = link.expireChunks(nowMs: now)
        if expired > 0 { count(.chunkExpired, expired) }
        updatePhase(nowMs: now)
        trackCatchUp(nowMs: now)
        writeStatus(force: false)
    }

    // MARK: Queries

    public func metricsSnapshot() -> SyncMetrics {
        lock.lock(); defer { lock.unlock() }
        return metrics
    }

    /// True when every sibling on the roster holds our current digest and we
    /// hold theirs, and nothing is being pulled.
    public func isConverged() -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard pulls.isEmpty, let mine = try? currentDigest().bytes else { return false }
        return siblings.allHoldBoth(mine)
    }

    /// Why there is nobody to converge with, in words; nil when some
    /// trusted sibling is on the roster (or this device is revoked, which
    /// is a failure of its own). With no sibling, `isConverged` holds
    /// trivially, and saying "converged" would claim a sync with someone.
    public func nobodyToConvergeWith() -> String? {
        lock.lock(); defer { lock.unlock() }
        guard siblings.isEmpty, phase != .revoked else { return nil }
        let revoked = roster.members.values.filter { $0.deviceID != me.deviceID && $0.isRevoked }.map { "'\($0.name)'" }.sorted()
        return revoked.isEmpty
            ? "nobody to converge with: no other device is on the roster yet ('quire invite' adds one)"
            : "nobody to converge with: every other device of the account was revoked (\(revoked.joined(separator: ", "))); 'quire invite' adds one"
    }

    /// Siblings that are not converged with us, by name.
    public func unconvergedSiblings() -> [String] {
        lock.lock(); defer { lock.unlock() }
        let mine = try? currentDigest().bytes
        return siblings.all.filter { !$0.holdsBoth(mine) }.map(\.member.name).sorted()
    }

    /// The siblings heard from since start-up, and whether each matches us now.
    public func heardSiblings() -> [(name: String, inSync: Bool)] {
        lock.lock(); defer { lock.unlock() }
        let mine = try? currentDigest().bytes
        return siblings.all.filter { $0.lastSeenMs != nil }.map { ($0.member.name, $0.holdsBoth(mine)) }
    }

    /// This device's revocation, once its log shows it (nil: trusted).
    public var revocation: SyncStatus.Revocation? { lock.lock(); defer { lock.unlock() }; return ownRevocation }

    /// Why a sibling refused to admit this joining device, if one did.
    public var refusedAdmission: String? { lock.lock(); defer { lock.unlock() }; return admissionRefusal }

    public var hasActivePulls: Bool { lock.lock(); defer { lock.unlock() }; return !pulls.isEmpty }

    /// Settling means the store may still be landing: nothing that infers
    /// deletions or starts a barrier may act on it yet.
    public var isSettled: Bool { lock.lock(); defer { lock.unlock() }; return phase == .settled }

    public func status() -> SyncStatus {
        lock.lock(); defer { lock.unlock() }
        return makeStatus()
    }

    /// Advertises now to every sibling whose last advertisement differs.
    public func advertiseNow() {
        lock.lock(); defer { lock.unlock() }
        broadcast(force: false, nowMs: clock.monotonicMilliseconds())
    }

    // MARK: Helpers used by the extensions

    func count(_ drop: FrameDrop, _ n: Int = 1) {
        metrics.dropped[drop, default: 0] += n
    }

    func note(_ event: String) {
        let line = "\(DateStamp.format(clock.now())) \(event)"
        events.append(line)
        if events.count > 20 { events.removeFirst(events.count - 20) }
        deps.log(event)
    }

    /// Logs an error once per distinct text, so a broken relay does not flood
    /// the log (and at most 256 distinct texts: ids in texts must not grow it).
    func report(_ what: String, _ error: any Error) { noteOnce("\(what): \(error)") }

    /// Logs a line once per distinct text (at most 256 distinct texts).
    func noteOnce(_ text: String) {
        guard reportedErrors.count < 256 else { return }
        if reportedErrors.insert(text).inserted { note(text) }
    }

    /// Our digest, computed once per change of the store.
    func currentDigest() throws -> Advertiser.Digest {
        if let cached = advertiser.cachedDigest { return cached }
        return try computeDigest()
    }

    /// Our digest as the store is now: the cached one if nothing was
    /// committed since (a burst of saves is advertised without reading
    /// every root twice per commit).
    /// `seq`: the change number, if just read.
    func freshDigest(seq: Int64? = nil) throws -> Advertiser.Digest {
        let seq = try seq ?? store.changeSequence()
        if let cached = advertiser.digest(ifCurrentAt: seq, generation: deps.generation()) { return cached }
        return try computeDigest()
    }

    private func computeDigest() throws -> Advertiser.Digest {
        let generation = deps.generation()
        let snapshot = try store.digestSnapshot(generation: generation)
        let value = (digest: snapshot.digest, bytes: snapshot.digest.encoded(), rows: Optional(snapshot.rows))
        advertiser.remember(value, seq: snapshot.seq, generation: generation)
        return value
    }

    func invalidateDigest() { advertiser.forgetDigest() }
}

/// Times in log lines and messages: UTC, to the second.
public enum DateStamp {
    public static func format(_ t: Timestamp) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
        return f.string(from: Date(timeIntervalSince1970: TimeInterval(t.seconds)))
    }
}
