import QuireCore

/// Reads the sync layer needs beyond the core API. Additive only.
extension ReplicaStore {
    /// The tombstones of a namespace whose keys lie in [lower, upper), in key
    /// order: the ones a reconcile response carries for a differing range.
    public func tombstones(_ ns: Namespace, from lower: [UInt8], to upper: [UInt8]?) throws(StoreError) -> [Row] {
        try read { () throws(StoreError) -> [Row] in
            var sql = "SELECT key, vv FROM rows WHERE ns = ? AND tombstone = 1 AND key >= ?"
            var args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(lower)]
            if let upper { sql += " AND key < ?"; args.append(.blob(upper)) }
            sql += " ORDER BY key"
            return try db.query(sql, args) { s throws(StoreError) in
                do {
                    return Row.tombstone(ns, ID16(bytes: s.blob(0) ?? [])!, context: try VersionVector(cbor: try CBORReader.decode(s.blob(1) ?? [])))
                } catch { throw StoreError(.corrupt, "\(path): tombstone in \(ns) does not decode: \(error)") }
            }
        }
    }

    /// The fingerprints of the 16 sub-ranges of the key range named by
    /// `nibbles` (its keys start with them), read as one range of stored
    /// prefix buckets; nil when those sub-ranges are finer than the stored
    /// buckets (the caller then groups the range's leaves itself).
    public func childFingerprints(_ ns: Namespace, prefix nibbles: [UInt8]) throws(StoreError) -> [Fingerprint]? {
        let level = nibbles.count + 1
        guard level <= Buckets.maxLevel else { return nil }
        let parent = nibbles.reduce(Int64(0)) { $0 << 4 | Int64($1 & 0x0F) }
        return try read { () throws(StoreError) -> [Fingerprint] in
            var out = [Fingerprint](repeating: .zero, count: 16)
            let rows = try db.query("SELECT prefix, count, sum FROM buckets WHERE ns = ? AND level = ? AND prefix >= ? AND prefix < ?",
                                    [.int(Int64(ns.rawValue)), .int(Int64(level)), .int(parent << 4), .int((parent + 1) << 4)]) {
                (Int($0.int(0) & 0x0F), $0.fingerprint(countColumn: 1))
            }
            for (child, fp) in rows { out[child] = fp }
            return out
        }
    }

    /// The id of the newest outbox record, or nil when the outbox is empty:
    /// a cheap poll for "local edits happened that no advertisement covers".
    public func outboxHighWater() throws(StoreError) -> Int64? {
        try read { () throws(StoreError) -> Int64? in
            try db.queryOne("SELECT max(id) FROM outbox") { $0.isNull(0) ? nil : $0.int(0) } ?? nil
        }
    }
}
