import QuireCore

/// When this device tells its siblings its digest, and the digest it tells:
/// computed once per change of the store, advertised after a burst of
/// changes settles, and re-advertised on a jittered heartbeat.
///
/// It decides when; the engine sends (to the siblings whose last
/// advertisement differs, see `SyncEngine.broadcast`).
struct Advertiser {
    /// Our digest as advertised: decoded, encoded, and our live row count.
    typealias Digest = (digest: StateDigest, bytes: [UInt8], rows: UInt64?)

    /// Our digest until the store moves (`forgetDigest`).
    private(set) var cachedDigest: Digest?
    /// The change number and generation the cached digest was read at.
    private(set) var cachedAt: (seq: Int64, generation: UInt64)?
    /// The outbox is cleared through this id (edits an advertisement covered).
    private(set) var outboxMark: Int64 = 0
    /// When the change not yet advertised began, and when it last moved.
    private(set) var dirtySinceMs: UInt64?
    private(set) var lastDirtyMs: UInt64 = 0
    private(set) var nextHeartbeatMs: UInt64 = 0
    private let debounceMs: UInt64
    private let maxDebounceMs: UInt64
    private let heartbeatMs: UInt64

    init(configuration: SyncConfiguration) {
        debounceMs = configuration.debounceMilliseconds
        maxDebounceMs = configuration.maxDebounceMilliseconds
        heartbeatMs = configuration.heartbeatMilliseconds
    }

    // MARK: Our digest

    mutating func remember(_ digest: Digest, seq: Int64, generation: UInt64) {
        cachedDigest = digest
        cachedAt = (seq, generation)
    }
    mutating func forgetDigest() { cachedDigest = nil; cachedAt = nil }

    /// The cached digest, if nothing was committed since it was computed.
    func digest(ifCurrentAt seq: Int64, generation: UInt64) -> Digest? {
        guard let at = cachedAt, at.seq == seq, at.generation == generation else { return nil }
        return cachedDigest
    }

    // MARK: Changes

    /// Something changed that siblings should hear of.
    mutating func markDirty(nowMs: UInt64) {
        if dirtySinceMs == nil { dirtySinceMs = nowMs }
        lastDirtyMs = nowMs
    }

    /// An advertisement is going out now: the pending change is in it.
    mutating func advertising() { dirtySinceMs = nil }

    /// Edits up to `mark` were made since the last advertisement covered the outbox.
    func hasUnadvertisedEdits(through mark: Int64) -> Bool { mark > outboxMark }

    /// Every sibling was sent a digest covering the outbox through `mark`.
    mutating func outboxCleared(through mark: Int64) { outboxMark = mark }

    /// When the pending change is advertised: at once when every sibling
    /// answered the last advertisement (as Nagle's rule sends at once with
    /// nothing unacknowledged); else once the burst pauses for the debounce,
    /// or the answers came, or at the latest `maxDebounce` after it began.
    /// A lone save goes out in the step that sees its commit; a bulk import
    /// becomes one advertisement per answer. `unansweredSinceMs`: when each
    /// advertisement still waiting for an answer went out.
    func dueMs(unansweredSinceMs: [UInt64]) -> UInt64? {
        guard let since = dirtySinceMs else { return nil }
        let outstanding = unansweredSinceMs.map { $0 &+ debounceMs }.max()
        guard let answeredBy = outstanding else { return since }
        let trailing = min(lastDirtyMs &+ debounceMs, since &+ maxDebounceMs)
        return min(trailing, max(since, answeredBy))
    }

    // MARK: Heartbeat

    /// The relay has no mailbox: re-advertising now and then keeps one lost
    /// frame from stalling a pair.
    func isHeartbeatDue(nowMs: UInt64) -> Bool { nowMs >= nextHeartbeatMs }

    /// The next heartbeat: the interval, ±20 % by `random` (4 bytes), so
    /// a fleet started together does not advertise in step.
    mutating func scheduleHeartbeat(nowMs: UInt64, random: [UInt8]) {
        let jitterRange = max(heartbeatMs / 5, 1)
        let r = random.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        nextHeartbeatMs = nowMs + heartbeatMs - jitterRange + r % (2 * jitterRange)
    }
}
