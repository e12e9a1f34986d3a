import QuireCore

/// Tombstones leave only through a committed barrier: nothing else in the
/// store drops one, on any timer.
extension ReplicaStore {
    /// The namespaces a barrier collects (settings too: the seed let their
    /// tombstones grow forever). Memory is append-only; the roster keeps
    /// its own records.
    public static let collectedNamespaces: [Namespace] = [.notebook, .saga, .plans, .contacts, .settings]

    /// How many tombstones the collected namespaces hold, and when the
    /// oldest of them reached this device.
    public func tombstoneBacklog() throws(StoreError) -> (count: Int, oldest: Timestamp?) {
        try read { () throws(StoreError) -> (count: Int, oldest: Timestamp?) in
            let list = ReplicaStore.collectedNamespaces.map { String($0.rawValue) }.joined(separator: ",")
            return try db.queryOne("SELECT count(*), min(updated) FROM rows WHERE tombstone = 1 AND ns IN (\(list))") { s in
                (Int(s.int(0)), s.isNull(1) ? nil : Timestamp(seconds: s.int(1)))
            } ?? (0, nil)
        }
    }

    /// Drops every tombstone of the collected namespaces, in one
    /// transaction. Only the barrier calls this, after the anchor landed and
    /// only while this device's digest equals the one every device acked.
    /// Tombstones have no leaf, so no root moves.
    /// `roster`: the devices whose state the round agreed on (recorded, so
    /// a snapshot this device serves later can say who was in it).
    /// `generation`: the round's; with `round`, every tombstone the whole
    /// roster collected in it (buried here), the graveyard's coverage
    /// (`GraveyardCoverage`) extends to it, and `since` (the leader's, from
    /// the last anchor's graveyard it adopted) may lower its start; without
    /// `round`, the round is not known in full and nothing is claimed.
    @discardableResult
    public func dropTombstonesForBarrier(roster: [DeviceID]? = nil, generation: UInt64? = nil, round: [CollectedTombstone]? = nil,
                                         since: UInt64? = nil) throws(StoreError) -> Int {
        try write { ctx in
            if let roster { try ctx.setBarrierRoster(roster) }
            if let generation {
                try ctx.recordGeneration(generation)
                var coverage: GraveyardCoverage?
                if let round {
                    try ctx.bury(round)
                    coverage = try GraveyardCoverage.load(ctx.db)?.extended(to: generation) ?? GraveyardCoverage(since: generation, through: generation)
                    if let since, since < coverage!.since { coverage!.since = since }
                }
                try GraveyardCoverage.store(coverage, ctx.db)
            }
            let list = ReplicaStore.collectedNamespaces.map { String($0.rawValue) }.joined(separator: ",")
            let n = try ctx.db.queryOne("SELECT count(*) FROM rows WHERE tombstone = 1 AND ns IN (\(list))") { Int($0.int(0)) } ?? 0
            try ctx.db.run("DELETE FROM unshipped WHERE (ns, key) IN (SELECT ns, key FROM rows WHERE tombstone = 1 AND ns IN (\(list)))")
            try ctx.db.run("DELETE FROM holders WHERE (ns, key) IN (SELECT ns, key FROM rows WHERE tombstone = 1 AND ns IN (\(list)))")
            try ctx.db.run("DELETE FROM deleted_prose WHERE (ns, key) IN (SELECT ns, key FROM rows WHERE tombstone = 1 AND ns IN (\(list)))")
            // Told to running change feeds (`changes(since:)`); kept a week.
            try ctx.db.run("DELETE FROM collected WHERE at < ?", [.int(ctx.now.seconds - 7 * 24 * 3600)])
            try ctx.db.run("INSERT INTO collected(seq, ns, key, at) SELECT ?, ns, key, ? FROM rows WHERE tombstone = 1 AND ns IN (\(list))",
                           [.int(ctx.seq), .int(ctx.now.seconds)])
            try ctx.bury(try ctx.collectableTombstones())
            try ctx.db.run("DELETE FROM rows WHERE tombstone = 1 AND ns IN (\(list))")
            // Counters are per row: a key written again after its row was
            // collected (a setting, a journal day) would start over at 1 and
            // mint a dot the collected row had used for other content (the
            // simulator's seed 9 with --three-way-edit-delete). A new
            // incarnation, in the same transaction, makes every later dot new.
            if n > 0 { try ctx.mintIncarnation(reason: "a barrier collected \(n) tombstones", reissued: 0, isRollback: false) }
            return n
        }
    }

    /// Every collected tombstone this device knows of (its own barriers,
    /// and those adopted from an anchor or a sibling's snapshot).
    public func graveyard() throws(StoreError) -> [CollectedTombstone] {
        try read { () throws(StoreError) -> [CollectedTombstone] in try Graveyard.load(db, path: path) }
    }

    /// The tombstones a barrier would collect now, as graveyard entries.
    public func collectableTombstones() throws(StoreError) -> [CollectedTombstone] {
        try read { () throws(StoreError) -> [CollectedTombstone] in try Graveyard.tombstones(db, path: path) }
    }

    /// The graveyard as the next barrier would leave it: what is known now,
    /// plus the tombstones still held (the anchor is written before they go).
    public func graveyardWithTombstones() throws(StoreError) -> [CollectedTombstone] {
        try read { () throws(StoreError) -> [CollectedTombstone] in
            CollectedTombstone.joined(try Graveyard.load(db, path: path), try Graveyard.tombstones(db, path: path))
        }
    }

    /// The devices of the last barrier this device took part in or
    /// recovered to (nil: not known, as before the record existed).
    public func barrierRoster() throws(StoreError) -> [DeviceID]? {
        try read { () throws(StoreError) -> [DeviceID]? in
            guard let blob = try db.queryOne("SELECT value FROM meta WHERE name = 'barrier_roster'", [], { $0.blob(0) }) ?? nil else { return nil }
            return StoredRoster.decode(blob)
        }
    }

    /// Joins `entries` into the graveyard (from an anchor or a snapshot).
    public func adoptGraveyard(_ entries: [CollectedTombstone]) throws(StoreError) {
        guard !entries.isEmpty else { return }
        try write { ctx in try ctx.bury(entries) }
    }
}

/// The graveyard table (`CollectedTombstone`): one entry per key, its
/// context the join of every tombstone collected under that key.
enum Graveyard {
    static func load(_ db: Connection, path: String) throws(StoreError) -> [CollectedTombstone] {
        let rows = try db.query("SELECT ns, key, context FROM graveyard ORDER BY ns, key") { s in
            (ns: Namespace(rawValue: UInt8(clamping: s.int(0))), key: ID16(bytes: s.blob(1) ?? []), context: s.blob(2) ?? [])
        }
        var out: [CollectedTombstone] = []
        for row in rows {
            guard let ns = row.ns, let key = row.key else { throw StoreError(.corrupt, "\(path): a graveyard entry names no row") }
            do { out.append(CollectedTombstone(namespace: ns, key: key, context: try VersionVector(cbor: try CBORReader.decode(row.context)))) } catch {
                throw StoreError(.corrupt, "\(path): the graveyard entry of \(ns) \(key) does not decode: \(error)")
            }
        }
        return out
    }

    /// The tombstones of the collected namespaces, as graveyard entries.
    static func tombstones(_ db: Connection, path: String) throws(StoreError) -> [CollectedTombstone] {
        var out: [CollectedTombstone] = []
        for ns in ReplicaStore.collectedNamespaces {
            for row in try RangeReads.tombstones(db, ns, in: .root, path: path) {
                out.append(CollectedTombstone(namespace: ns, key: row.key, context: row.context))
            }
        }
        return out
    }
}

extension WriteContext {
    func collectableTombstones() throws(StoreError) -> [CollectedTombstone] {
        try Graveyard.tombstones(db, path: store.path)
    }

    /// Drops one tombstone as a barrier would, told to running change feeds.
    func collectTombstone(_ ns: Namespace, _ key: RowKey) throws(StoreError) {
        let args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(key.bytes)]
        try db.run("INSERT INTO collected(seq, ns, key, at) SELECT ?, ns, key, ? FROM rows WHERE ns = ? AND key = ? AND tombstone = 1",
                   [.int(seq), .int(now.seconds)] + args)
        try db.run("DELETE FROM unshipped WHERE ns = ? AND key = ?", args)
        try db.run("DELETE FROM holders WHERE ns = ? AND key = ?", args)
        try DeletedProse.forget(db, ns, key)
        try db.run("DELETE FROM rows WHERE ns = ? AND key = ? AND tombstone = 1", args)
    }

    mutating func setBarrierRoster(_ roster: [DeviceID]) throws(StoreError) {
        try db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('barrier_roster', ?)", [.blob(StoredRoster.encode(roster))])
        holderRoster = nil
    }

    /// Joins entries into the graveyard table.
    func bury(_ entries: [CollectedTombstone]) throws(StoreError) {
        for e in entries {
            let args: [SQLValue] = [.int(Int64(e.namespace.rawValue)), .blob(e.key.bytes)]
            var context = e.context
            if let old = try db.queryOne("SELECT context FROM graveyard WHERE ns = ? AND key = ?", args, { $0.blob(0) ?? [] }),
               let decoded = try? VersionVector(cbor: try CBORReader.decode(old)) {
                context = decoded.joined(with: context)
            }
            try db.run("INSERT OR REPLACE INTO graveyard(ns, key, context, at) VALUES (?, ?, ?, ?)",
                       args + [.blob(context.encoded()), .int(now.seconds)])
        }
    }
}
