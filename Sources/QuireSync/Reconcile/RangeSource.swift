import QuireCore
import QuireStore

/// What reconciliation reads of one namespace, and nothing else (as
/// negentropy's storage interface): range fingerprints, the entries and
/// tombstones of a range, and rows by key. The store answers from its
/// maintained buckets; tests answer from memory.
protocol RangeSource {
    var namespace: Namespace { get }
    /// How many live rows the namespace holds.
    func count() throws -> UInt64
    /// The fingerprints of the 16 children of `range`.
    func childFingerprints(_ range: KeyPrefix) throws -> [Fingerprint]
    /// (key, leaf) of the live rows in `range`, in key order.
    func entries(_ range: KeyPrefix) throws -> [KeyLeaf]
    /// The tombstones in `range`.
    func tombstones(_ range: KeyPrefix) throws -> [Row]
    /// The row (live or tombstone) stored under `key`.
    func row(_ key: RowKey) throws -> Row?
    /// Every row, live and tombstones (a namespace that travels whole).
    func allRows() throws -> [Row]
}

extension RangeSource {
    func childSummaries(_ range: KeyPrefix, salt: [UInt8]) throws -> [RangeSummary] {
        try childFingerprints(range).map { RangeSummary($0, salt: salt) }
    }
}

/// A namespace of the replica as one consistent snapshot (the reads of a
/// request or an answer see one state, beside writes): O(16 · levels)
/// bucket lookups per range, however large the namespace, which is what
/// makes detection O(d log n).
struct StoreRangeSource: RangeSource {
    let snapshot: ReadSnapshot
    let namespace: Namespace

    func count() throws -> UInt64 { try snapshot.namespaceFingerprint(namespace).count }
    func childFingerprints(_ range: KeyPrefix) throws -> [Fingerprint] { try snapshot.childFingerprints(namespace, of: range) }
    func entries(_ range: KeyPrefix) throws -> [KeyLeaf] {
        try snapshot.leaves(namespace, in: range).map { KeyLeaf(key: $0.key, leaf: $0.leaf) }
    }
    func tombstones(_ range: KeyPrefix) throws -> [Row] { try snapshot.tombstones(namespace, in: range) }
    func row(_ key: RowKey) throws -> Row? { try snapshot.row(namespace, key) }
    func allRows() throws -> [Row] { try snapshot.rows(namespace) + snapshot.tombstones(namespace) }
}
