import QuireCore
import QuireStore

/// One pull of one namespace from one sibling: a chain of requests, one in
/// flight at a time, each descending into the ranges the last response said
/// differ. It ends when a response needs no follow-up, or after an idle
/// timeout (a responder with nothing to give sends nothing at all).
struct PullSession {
    let namespace: Namespace
    let sibling: DeviceID
    /// Also the salt of every range hash in this pull.
    let id: [UInt8]
    var step: UInt64 = 0
    var lastActivityMs: UInt64
    var requestsSent = 0
    var receivedRows = false
    /// The last request, kept to send once more if it meets silence.
    var lastItems: [RequestItem] = []
    var answeredLast = false
    var retried = false
    /// Pull again when this one ends: a newer digest arrived, or the
    /// responder truncated its rows.
    var pullAgain = false

    init(namespace: Namespace, sibling: DeviceID, id: [UInt8], nowMs: UInt64) {
        self.namespace = namespace
        self.sibling = sibling
        self.id = id
        self.lastActivityMs = nowMs
    }

    /// The first request: the whole namespace for settings; otherwise our
    /// key list if the namespace is small, else the root's 16 children
    /// (the root itself is already known to differ).
    static func initialItems(_ ns: Namespace, store: ReplicaStore, threshold: Int, salt: [UInt8]) throws -> [RequestItem] {
        if ns == .settings { return [.whole] }
        let reader = RangeReader(store: store, namespace: ns)
        if try store.namespaceFingerprint(ns).count <= UInt64(threshold) {
            return [.keys(.root, try reader.entries(.root))]
        }
        return [.children(.root, try reader.childSummaries(.root, salt: salt))]
    }

    /// What to ask next, given a response whose rows were already applied.
    func followUps(_ response: ReconcileResponse, store: ReplicaStore, threshold: Int) throws -> [RequestItem] {
        let reader = RangeReader(store: store, namespace: namespace)
        var items: [RequestItem] = []
        for item in response.items {
            switch item {
            case .mismatch(let range):
                items.append(.keys(range, try reader.entries(range)))
            case .children(let parent, let theirs):
                guard parent.level < KeyPrefix.maxLevel else { continue }
                let mine = try reader.childSummaries(parent, salt: id)
                for i in 0..<16 where mine[i] != theirs[i] {
                    let child = parent.child(i)
                    if mine[i].count <= UInt64(threshold) || child.level >= KeyPrefix.maxLevel {
                        items.append(.keys(child, try reader.entries(child)))
                    } else if theirs[i].count <= UInt64(threshold) {
                        items.append(.probe(child))
                    } else {
                        items.append(.children(child, try reader.childSummaries(child, salt: id)))
                    }
                }
            case .keyList(let range, let theirs):
                var mine: [RowKey: [UInt8]] = [:]
                for e in try reader.entries(range) { mine[e.key] = e.leaf }
                let want = theirs.filter { range.contains($0.key) && mine[$0.key] != $0.leaf }.map(\.key)
                if !want.isEmpty { items.append(.want(want)) }
            }
        }
        return items
    }
}

/// More than `maxRounds` rounds with one sibling inside `windowMs`, none of
/// which moved our digest, means the pair is not converging (a field hashed but not merged, usually): back
/// off for `backoffMs`. It bounds a bug; it does not fix one, so the
/// back-off shows in `quire status` as still out of sync.
struct StormGuard {
    let maxRounds: Int
    let windowMs: UInt64
    let backoffMs: UInt64
    private(set) var roundTimes: [UInt64] = []
    private(set) var backoffUntilMs: UInt64? = nil
    private(set) var storms = 0
    private var lastOwnDigest: [UInt8]?

    init(maxRounds: Int, windowMs: UInt64, backoffMs: UInt64) {
        self.maxRounds = maxRounds
        self.windowMs = windowMs
        self.backoffMs = backoffMs
    }

    func isBackingOff(nowMs: UInt64) -> Bool { backoffUntilMs.map { nowMs < $0 } ?? false }

    /// Records a round starting now, with this device's digest as it is
    /// then; false (and a back-off) if it would be one too many. Only rounds
    /// that got nowhere count: if our digest moved since the last round,
    /// the pair made progress (a series of saves, a long catch-up), and the
    /// count starts again.
    mutating func admitRound(nowMs: UInt64, ownDigest: [UInt8]) -> Bool {
        if isBackingOff(nowMs: nowMs) { return false }
        if backoffUntilMs != nil { backoffUntilMs = nil; roundTimes = [] }
        if ownDigest != lastOwnDigest { roundTimes = []; lastOwnDigest = ownDigest }
        roundTimes.removeAll { nowMs &- $0 >= windowMs }
        if roundTimes.count >= maxRounds {
            backoffUntilMs = nowMs + backoffMs
            storms += 1
            return false
        }
        roundTimes.append(nowMs)
        return true
    }
}
