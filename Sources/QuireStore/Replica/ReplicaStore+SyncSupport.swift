import QuireCore

/// Reads the sync layer needs beyond the core API. Additive only.
extension ReplicaStore {
    /// The tombstones of a namespace in a key range, in key order: the
    /// ones a reconcile response carries for a differing range.
    public func tombstones(_ ns: Namespace, in range: KeyPrefix) throws(StoreError) -> [Row] {
        try read { () throws(StoreError) -> [Row] in try RangeReads.tombstones(db, ns, in: range, path: path) }
    }

    /// The fingerprints of the 16 children of `range`, read as one range of
    /// stored prefix buckets; below the deepest stored level, the range's
    /// leaves grouped by child.
    public func childFingerprints(_ ns: Namespace, of range: KeyPrefix) throws(StoreError) -> [Fingerprint] {
        try read { () throws(StoreError) -> [Fingerprint] in try RangeReads.childFingerprints(db, ns, of: range) }
    }

    /// The id of the newest outbox record, or nil when the outbox is empty:
    /// a cheap poll for "local edits happened that no advertisement covers".
    public func outboxHighWater() throws(StoreError) -> Int64? {
        try read { () throws(StoreError) -> Int64? in
            try db.queryOne("SELECT max(id) FROM outbox") { $0.isNull(0) ? nil : $0.int(0) } ?? nil
        }
    }
}
