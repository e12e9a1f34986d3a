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
    @discardableResult
    public func dropTombstonesForBarrier() throws(StoreError) -> Int {
        try write { ctx in
            let list = ReplicaStore.collectedNamespaces.map { String($0.rawValue) }.joined(separator: ",")
            let n = try ctx.db.queryOne("SELECT count(*) FROM rows WHERE tombstone = 1 AND ns IN (\(list))") { Int($0.int(0)) } ?? 0
            try ctx.db.run("DELETE FROM unshipped WHERE (ns, key) IN (SELECT ns, key FROM rows WHERE tombstone = 1 AND ns IN (\(list)))")
            // Told to running change feeds (`changes(since:)`); kept a week.
            try ctx.db.run("DELETE FROM collected WHERE at < ?", [.int(ctx.now.seconds - 7 * 24 * 3600)])
            try ctx.db.run("INSERT INTO collected(seq, ns, key, at) SELECT ?, ns, key, ? FROM rows WHERE tombstone = 1 AND ns IN (\(list))",
                           [.int(ctx.seq), .int(ctx.now.seconds)])
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
}
