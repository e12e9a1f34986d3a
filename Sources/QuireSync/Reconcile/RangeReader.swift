import QuireCore
import QuireStore

/// Range fingerprints and entries of one namespace, read from the store's
/// maintained prefix buckets: a range costs O(16 · levels) lookups however
/// large the namespace, which is what makes detection O(d log n).
struct RangeReader {
    let store: ReplicaStore
    let namespace: Namespace

    func fingerprint(_ p: KeyPrefix) throws -> Fingerprint {
        try store.fingerprint(namespace, from: p.lowerBound, to: p.upperBound)
    }

    /// The fingerprints of the 16 children of `p`: one range of stored
    /// buckets, or, below the deepest stored level, the range's leaves grouped.
    func childFingerprints(_ p: KeyPrefix) throws -> [Fingerprint] {
        precondition(p.level < KeyPrefix.maxLevel)
        if let stored = try store.childFingerprints(namespace, prefix: p.nibbles) { return stored }
        var out = [Fingerprint](repeating: .zero, count: 16)
        for (key, leaf) in try store.leaves(namespace, from: p.lowerBound, to: p.upperBound) {
            out[p.childIndex(of: key)] += Fingerprint(leaf: leaf)
        }
        return out
    }

    func childSummaries(_ p: KeyPrefix, salt: [UInt8]) throws -> [RangeSummary] {
        try childFingerprints(p).map { RangeSummary($0, salt: salt) }
    }

    func entries(_ p: KeyPrefix) throws -> [KeyLeaf] {
        try store.leaves(namespace, from: p.lowerBound, to: p.upperBound).map { KeyLeaf(key: $0.key, leaf: $0.leaf) }
    }

    func tombstones(_ p: KeyPrefix) throws -> [Row] {
        try store.tombstones(namespace, from: p.lowerBound, to: p.upperBound)
    }
}
