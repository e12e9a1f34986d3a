import QuireCore

/// Roots, range fingerprints and the rows behind them: what the sync layer
/// reads, all answered from the maintained buckets without a scan.
extension ReplicaStore {
    /// The stored fingerprint of a whole namespace (bucket level 0).
    public func namespaceFingerprint(_ ns: Namespace) throws(StoreError) -> Fingerprint {
        try read { () throws(StoreError) -> Fingerprint in try bucket(ns, level: 0, prefix: 0) }
    }

    /// One root per namespace, from the maintained buckets: O(namespaces).
    public func roots() throws(StoreError) -> [Namespace: [UInt8]] {
        try read { () throws(StoreError) -> [Namespace: [UInt8]] in
            var roots: [Namespace: [UInt8]] = [:]
            for ns in Namespace.allCases { roots[ns] = try bucket(ns, level: 0, prefix: 0).root }
            return roots
        }
    }

    public func digest(generation: UInt64) throws(StoreError) -> StateDigest {
        StateDigest(roots: try roots(), generation: generation)
    }

    /// Recomputes every root from the rows' content, re-encoding and
    /// re-hashing each leaf and every resident body against its stamped
    /// hash: the reference the incremental roots must equal.
    public func recomputedRoots() throws(StoreError) -> [Namespace: [UInt8]] {
        try read { () throws(StoreError) -> [Namespace: [UInt8]] in
            var sums: [Namespace: Fingerprint] = [:]
            let s = try db.prepare("SELECT ns, key FROM rows WHERE tombstone = 0")
            var keys: [(Namespace, RowKey)] = []
            while try s.step() {
                guard let ns = Namespace(rawValue: UInt8(s.int(0))), let key = ID16(bytes: s.blob(1) ?? []) else {
                    throw StoreError(.corrupt, "\(path): row with a bad namespace or key")
                }
                keys.append((ns, key))
            }
            for (ns, key) in keys {
                // Decoding checks every resident body against its contentHash.
                guard let row = try RowRecord.load(db, ns, key, withBody: true)?.row(path: path),
                      let leaf = LeafEncoding.leaf(of: row) else { continue }
                sums[ns, default: .zero] += Fingerprint(leaf: leaf)
            }
            var roots: [Namespace: [UInt8]] = [:]
            for ns in Namespace.allCases { roots[ns] = (sums[ns] ?? .zero).root }
            return roots
        }
    }

    /// Fingerprint of the keys in [lower, upper) (empty lower: from the
    /// start; nil upper: to the end). Composed from the maintained prefix
    /// buckets: at most 16 lookups per level plus the edge buckets' rows.
    public func fingerprint(_ ns: Namespace, from lower: [UInt8], to upper: [UInt8]?) throws(StoreError) -> Fingerprint {
        try read { () throws(StoreError) -> Fingerprint in try rangeFingerprint(ns, level: 0, prefix: 0, lower, upper) }
    }

    private func rangeFingerprint(_ ns: Namespace, level: Int, prefix: Int64, _ lo: [UInt8], _ hi: [UInt8]?) throws(StoreError) -> Fingerprint {
        let bucketLo = Buckets.lowerBound(level: level, prefix: prefix)
        let bucketHi = Buckets.upperBound(level: level, prefix: prefix)
        // Disjoint?
        if let hi, KeyBound.lessOrEqual(hi, bucketLo) { return .zero }
        if let bucketHi, KeyBound.lessOrEqual(bucketHi, lo) { return .zero }
        // Covered?
        let coversLow = KeyBound.lessOrEqual(lo, bucketLo)
        let coversHigh: Bool = {
            guard let hi else { return true }
            guard let bucketHi else { return false }
            return KeyBound.lessOrEqual(bucketHi, hi)
        }()
        if coversLow && coversHigh { return try bucket(ns, level: level, prefix: prefix) }
        if level == Buckets.maxLevel {
            let from = KeyBound.less(lo, bucketLo) ? bucketLo : lo
            let to: [UInt8]? = {
                switch (hi, bucketHi) {
                case (nil, nil): return nil
                case (let h?, nil): return h
                case (nil, let b?): return b
                case (let h?, let b?): return KeyBound.less(h, b) ? h : b
                }
            }()
            var fp = Fingerprint.zero
            for (_, leaf) in try leafList(ns, from, to) { fp += Fingerprint(leaf: leaf) }
            return fp
        }
        var fp = Fingerprint.zero
        for child in 0..<Int64(16) {
            fp += try rangeFingerprint(ns, level: level + 1, prefix: prefix << 4 | child, lo, hi)
        }
        return fp
    }

    private func bucket(_ ns: Namespace, level: Int, prefix: Int64) throws(StoreError) -> Fingerprint {
        try db.queryOne("SELECT count, sum FROM buckets WHERE ns = ? AND level = ? AND prefix = ?",
                        [.int(Int64(ns.rawValue)), .int(Int64(level)), .int(prefix)]) {
            $0.fingerprint(countColumn: 0)
        } ?? .zero
    }

    private func leafList(_ ns: Namespace, _ lo: [UInt8], _ hi: [UInt8]?) throws(StoreError) -> [(RowKey, [UInt8])] {
        var sql = "SELECT key, leaf FROM rows WHERE ns = ? AND tombstone = 0 AND key >= ?"
        var args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(lo)]
        if let hi { sql += " AND key < ?"; args.append(.blob(hi)) }
        sql += " ORDER BY key"
        return try db.query(sql, args) { (ID16(bytes: $0.blob(0) ?? [])!, $0.blob(1) ?? []) }
    }

    /// (key, leaf) of the live rows in [lower, upper), in key order.
    public func leaves(_ ns: Namespace, from lower: [UInt8], to upper: [UInt8]?) throws(StoreError) -> [(key: RowKey, leaf: [UInt8])] {
        try read { () throws(StoreError) -> [(key: RowKey, leaf: [UInt8])] in try leafList(ns, lower, upper).map { (key: $0.0, leaf: $0.1) } }
    }

    /// Full live rows in [lower, upper), bodies included where resident.
    public func rows(_ ns: Namespace, from lower: [UInt8], to upper: [UInt8]?) throws(StoreError) -> [Row] {
        try read { () throws(StoreError) -> [Row] in
            var out: [Row] = []
            for (key, _) in try leafList(ns, lower, upper) {
                if let row = try loadRow(ns, key).row { out.append(row) }
            }
            return out
        }
    }

    /// Every tombstone of a namespace (they ride each reconcile response).
    public func tombstones(_ ns: Namespace) throws(StoreError) -> [Row] {
        try tombstones(ns, from: [], to: nil)
    }

    /// Merges rows from a sibling in one transaction. Returns how many
    /// changed the store and how many of those were concurrent merges.
    @discardableResult
    public func apply(_ incoming: [Row]) throws(StoreError) -> (applied: Int, merged: Int) {
        try write { ctx in
            var applied = 0, merged = 0
            for row in incoming {
                if case .store(_, let wasMerge) = try ctx.applyRemote(row) {
                    applied += 1
                    if wasMerge { merged += 1 }
                }
            }
            return (applied, merged)
        }
    }

    /// The audit trail of concurrent merges of one row.
    public func mergeHistory(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> [(at: Timestamp, detail: String)] {
        try read { () throws(StoreError) -> [(at: Timestamp, detail: String)] in
            try db.query("SELECT at, detail FROM merges WHERE ns = ? AND key = ? ORDER BY id", [.int(Int64(ns.rawValue)), .blob(key.bytes)]) {
                (at: Timestamp(seconds: $0.int(0)), detail: $0.text(1) ?? "")
            }
        }
    }

    public func mergeCount() throws(StoreError) -> Int {
        try read { () throws(StoreError) -> Int in Int(try db.queryOne("SELECT count(*) FROM merges") { $0.int(0) } ?? 0) }
    }
}
