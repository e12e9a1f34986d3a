import QuireCore

/// What the engine knows about one sibling device.
struct SiblingState {
    var member: RosterMember
    let channel: String
    var lastSeen: Timestamp?
    var lastSeenMs: UInt64?
    /// Its last digest, decoded and as it came: set together (`hear`).
    private(set) var lastDigest: StateDigest?
    private(set) var lastDigestBytes: [UInt8]?
    /// Whether it holds exactly our digest, where the two differ, and when
    /// they last matched: all three from one comparison (`compare`), of its
    /// last digest with ours, so they never disagree.
    private(set) var inSync = false
    private(set) var divergent: [Namespace] = []
    private(set) var lastMatch: Timestamp?
    /// The last digest we sent it: an advertisement identical to this is skipped.
    var lastSentDigest: [UInt8]?
    /// We pulled from it or answered its pulls since our digests last matched:
    /// on reaching equal roots we return our digest once.
    var isReconciling = false
    var incompatibleVersion: UInt8?
    var generationGap: UInt64?
    var rounds = 0
    var bytesIn = 0
    var bytesOut = 0
    var lastIntroducedMs: UInt64?
    /// While it has not answered since our introduction: when to introduce
    /// again, and the current back-off (its channel may not have been
    /// listening yet when the first one went out).
    var nextIntroduceMs: UInt64?
    var introduceBackoffMs: UInt64 = 1_000
    /// An advertisement of a digest that differs from the sibling's went out
    /// and nothing came back yet: the relay keeps no mailbox, so it may be
    /// lost (the relay was down, the sibling offline). Re-send at this time,
    /// doubling the wait up to the heartbeat, until the sibling answers.
    var nextAdvertRetryMs: UInt64?
    var advertRetryBackoffMs: UInt64 = 1_000
    /// We advertised a change and it has not answered since (any frame
    /// counts): further changes fold into one advertisement meanwhile.
    var awaitingAnswerSinceMs: UInt64?
    /// How many rows it said it holds (its last digest).
    var rowCount: UInt64?
    /// Its last digest said it holds tombstones worth a barrier.
    var holdsCollectable = false
    /// The round that committed its generation, as its last digest said.
    var advertisedRound: [UInt8]?

    mutating func hear(_ digest: StateDigest, bytes: [UInt8]) {
        lastDigest = digest
        lastDigestBytes = bytes
    }

    /// Compares its last digest with ours. Across a generation gap nothing
    /// is compared (content reconcile is refused both ways).
    mutating func compare(with mine: StateDigest, now: Timestamp) {
        guard let theirs = lastDigest, theirs.generation == mine.generation else {
            inSync = false
            divergent = []
            return
        }
        divergent = mine.divergentNamespaces(from: theirs)
        inSync = divergent.isEmpty
        if inSync { lastMatch = now }
    }

    /// We hold its current digest and it holds ours.
    func holdsBoth(_ mine: [UInt8]?) -> Bool { lastDigestBytes == mine && lastSentDigest == mine }

    /// An authenticated frame came from it: it is alive, so the
    /// introductions and re-sent advertisements waiting for it stop.
    mutating func heard(at now: Timestamp, nowMs: UInt64, bytes: Int) {
        lastSeen = now
        lastSeenMs = nowMs
        nextIntroduceMs = nil
        nextAdvertRetryMs = nil
        awaitingAnswerSinceMs = nil
        advertRetryBackoffMs = 1_000
        bytesIn += bytes
    }

    /// Our digest went out to it. If it differs from its own, an answer is
    /// owed: re-sent after the back-off until one comes.
    mutating func sentDigest(_ digest: [UInt8], nowMs: UInt64) {
        lastSentDigest = digest
        if lastDigestBytes != digest, nextAdvertRetryMs == nil { nextAdvertRetryMs = nowMs + advertRetryBackoffMs }
    }

    /// The re-send of an unanswered advertisement is due: the next waits
    /// twice as long, up to `maxBackoffMs`.
    mutating func retryingAdvertisement(maxBackoffMs: UInt64) {
        nextAdvertRetryMs = nil
        advertRetryBackoffMs = min(advertRetryBackoffMs * 2, maxBackoffMs)
    }

    /// Our introduction went out; while it stays silent, the next follows
    /// on a doubling back-off up to `maxBackoffMs`.
    mutating func introduced(bytes: Int, nowMs: UInt64, maxBackoffMs: UInt64) {
        bytesOut += bytes
        lastIntroducedMs = nowMs
        if lastSeenMs == nil {
            nextIntroduceMs = nowMs + introduceBackoffMs
            introduceBackoffMs = min(introduceBackoffMs * 2, maxBackoffMs)
        }
    }

    init(member: RosterMember, channel: String) {
        self.member = member
        self.channel = channel
    }
}
