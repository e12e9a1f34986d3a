import QuireCore

/// Roots, range fingerprints and the rows behind them: what the sync layer
/// reads, all answered from the maintained buckets without a scan.
extension ReplicaStore {
    /// The stored fingerprint of a whole namespace (bucket level 0).
    public func namespaceFingerprint(_ ns: Namespace) throws(StoreError) -> Fingerprint {
        try read { () throws(StoreError) -> Fingerprint in try bucket(ns, level: 0, prefix: 0) }
    }

    /// One root per namespace, from the maintained buckets: O(namespaces).
    /// Read on the reader connection: one state for every namespace, and
    /// a save through the mount never waits for it.
    public func roots() throws(StoreError) -> [Namespace: [UInt8]] {
        try reader.read { db throws(StoreError) in try RangeReads.topBuckets(db).mapValues(\.root) }
    }

    public func digest(generation: UInt64) throws(StoreError) -> StateDigest {
        StateDigest(roots: try roots(), generation: generation)
    }

    /// The digest, the live row count and the change number they were read
    /// at, from one read (the sync engine's advertisement after a commit).
    public func digestSnapshot(generation: UInt64) throws(StoreError) -> (digest: StateDigest, rows: UInt64, seq: Int64) {
        try reader.read { db throws(StoreError) -> (digest: StateDigest, rows: UInt64, seq: Int64) in
            let seq = try db.queryOne("SELECT value FROM meta WHERE name = 'seq'") { $0.int(0) } ?? 0
            let top = try RangeReads.topBuckets(db)
            return (StateDigest(roots: top.mapValues(\.root), generation: generation), top.values.reduce(0) { $0 + $1.count }, seq)
        }
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

    private func bucket(_ ns: Namespace, level: Int, prefix: Int64) throws(StoreError) -> Fingerprint {
        try RangeReads.bucket(db, ns, level: level, prefix: prefix)
    }

    private func leafList(_ ns: Namespace, _ lo: [UInt8], _ hi: [UInt8]?) throws(StoreError) -> [(RowKey, [UInt8])] {
        try RangeReads.leafList(db, ns, lo, hi)
    }

    /// (key, leaf) of the live rows in a key range, in key order.
    public func leaves(_ ns: Namespace, in range: KeyPrefix = .root) throws(StoreError) -> [(key: RowKey, leaf: [UInt8])] {
        try read { () throws(StoreError) -> [(key: RowKey, leaf: [UInt8])] in
            try leafList(ns, range.lowerBound, range.upperBound).map { (key: $0.0, leaf: $0.1) }
        }
    }

    /// The leaf of one live row (nil: none, or a tombstone).
    public func leaf(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> [UInt8]? {
        try read { () throws(StoreError) -> [UInt8]? in
            try db.queryOne("SELECT leaf FROM rows WHERE ns = ? AND key = ? AND tombstone = 0", [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { $0.blob(0) } ?? nil
        }
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
        try tombstones(ns, in: .root)
    }

    /// Merges rows from a sibling (`sender`, if known) in one transaction.
    /// Returns how many changed the store and how many of those were
    /// concurrent merges.
    @discardableResult
    public func apply(_ incoming: [Row], from sender: DeviceID? = nil) throws(StoreError) -> (applied: Int, merged: Int) {
        let ahead = BodiesAhead.start(incoming)
        defer { ahead?.stop() }
        return try write { ctx in
            ctx.sender = sender
            ctx.bodiesAhead = ahead
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
