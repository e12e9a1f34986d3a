import QuireCore

/// What a restore from an older copy must not take back. The replica goes
/// back in time, but the bodies this device holds for other devices (a
/// homebase) are theirs, not its own history: the offloading device keeps
/// only a pointer, and the copy may predate the body. So a restore adopts
/// every held body of the replica it replaced, each re-checked against its
/// hash, before the device starts again.
extension ReplicaStore {
    /// Copies the held bodies of the replica at `path` (the one a restore
    /// moved aside) into this one, skipping any already here. Bodies whose
    /// bytes no longer match their hash stay behind and are counted. A
    /// replica with no `held_bodies` table (never held any) adopts nothing.
    public func adoptHeldBodies(fromReplicaAt path: String) throws(StoreError) -> (adopted: Int, damaged: Int) {
        let old = try Connection(path: path, readOnly: true)
        let tables = try old.queryOne("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'held_bodies'") { $0.int(0) } ?? 0
        guard tables > 0 else { return (0, 0) }
        let rows = try old.query("SELECT hash, body, owner FROM held_bodies ORDER BY hash") { s in
            (hash: s.blob(0) ?? [], body: s.blob(1) ?? [], owner: ID16(bytes: s.blob(2) ?? []))
        }
        var items: [(body: [UInt8], contentHash: [UInt8], owner: DeviceID)] = []
        var damaged = 0
        for row in rows {
            guard let owner = row.owner, Note.bodyDigest(row.body) == row.hash else { damaged += 1; continue }
            if try servableBody(contentHash: row.hash) == nil { items.append((body: row.body, contentHash: row.hash, owner: owner)) }
        }
        try holdBodies(items)
        return (items.count, damaged)
    }

    /// The steps every restore takes once the copy's files are in place:
    /// keep the bodies held for others from the replica it replaced
    /// (`replaced`, when there was one), then mint a new incarnation, so no
    /// write after the restore reuses a counter from before the copy, and
    /// record the restored file as this device's (open it with `restoring`).
    public func finishRestore(replaced: String?, reason: String) throws(StoreError)
        -> (actor: Actor, adopted: Int, damaged: Int) {
        var kept = (adopted: 0, damaged: 0)
        if let replaced { kept = try adoptHeldBodies(fromReplicaAt: replaced) }
        let actor = try write { ctx in
            try ctx.mintIncarnation(reason: reason, reissued: 0)
            try ctx.recordFileIdentity()
            return try ctx.currentActor()
        }
        return (actor, kept.adopted, kept.damaged)
    }
}

/// A write this device made that no sibling confirmed receiving.
public struct UnsharedWrite: Equatable, Sendable {
    public var namespace: Namespace
    public var key: RowKey
    /// The row's name (a deleted row's may be empty).
    public var name: String
    /// The write deleted the row.
    public var isDeletion: Bool
}

extension ReplicaStore {
    /// The writes no sibling confirmed receiving (`unshipped`) in the
    /// replica at `current`, and those whose every recorded holder is in
    /// `revoked` (a revoked device is never heard again: what only it
    /// received is received by no device that counts), whose rows the
    /// replica at `restored` does not hold as they are: what putting
    /// `restored` in its place sets aside, since no other device can bring
    /// them back. By namespace, then name.
    ///
    /// The holders recorded for this device's own writes are the siblings
    /// that confirmed them while they were unconfirmed (Holders.swift): the
    /// first, mostly. A write first confirmed by a device revoked since and
    /// received later by one that remains is named too: a warning too many,
    /// never a write lost without a word.
    public static func unsharedWrites(in current: String, missingFrom restored: String,
                                      revoked: Set<DeviceID> = []) throws(StoreError) -> [UnsharedWrite] {
        let old = try Connection(path: current, readOnly: true)
        let tables = try old.queryOne("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'unshipped'") { $0.int(0) } ?? 0
        guard tables > 0 else { return [] }
        let select = "SELECT r.ns, r.key, r.name, r.tombstone, r.leaf, r.vv FROM rows r"
        func decode(_ s: Statement) -> (namespace: Namespace?, key: RowKey?, name: String, isDeletion: Bool, leaf: [UInt8]?, context: [UInt8]?) {
            (namespace: Namespace(rawValue: UInt8(s.int(0))), key: ID16(bytes: s.blob(1) ?? []), name: s.text(2) ?? "",
             isDeletion: s.int(3) != 0, leaf: s.blob(4), context: s.blob(5))
        }
        var candidates = try old.query(select + """
             WHERE EXISTS (SELECT 1 FROM unshipped u WHERE u.ns = r.ns AND u.key = r.key)
             ORDER BY r.ns, r.name, r.key
            """, [], decode)
        let holderTables = try old.queryOne("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('holders', 'meta')") { $0.int(0) } ?? 0
        if !revoked.isEmpty, holderTables == 2,
           let me = try old.queryOne("SELECT value FROM meta WHERE name = 'device'", [], { ID16(bytes: $0.blob(0) ?? []) }) ?? nil {
            // The holders of each row's latest incarnation of this device's writes.
            let held = try old.query("""
                SELECT h.ns, h.key, h.holder FROM holders h
                 WHERE h.author = ? AND h.incarnation = (SELECT max(incarnation) FROM holders g
                                                          WHERE g.ns = h.ns AND g.key = h.key AND g.author = h.author)
                   AND NOT EXISTS (SELECT 1 FROM unshipped u WHERE u.ns = h.ns AND u.key = h.key)
                """, [.blob(me.bytes)]) { (ns: $0.int(0), key: $0.blob(1) ?? [], holder: $0.blob(2) ?? []) }
            var holders: [[UInt8]: (ns: Int, key: [UInt8], all: [[UInt8]])] = [:]
            for h in held { holders[[UInt8(truncatingIfNeeded: h.ns)] + h.key, default: (Int(h.ns), h.key, [])].all.append(h.holder) }
            let revokedBytes = Set(revoked.map(\.bytes))
            for (_, entry) in holders.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where entry.all.allSatisfy({ revokedBytes.contains($0) }) {
                candidates += try old.query(select + " WHERE r.ns = ? AND r.key = ?", [.int(Int64(entry.ns)), .blob(entry.key)], decode)
            }
        }
        guard !candidates.isEmpty else { return [] }
        let new = try Connection(path: restored, readOnly: true)
        var missing: [UnsharedWrite] = []
        for row in candidates {
            guard let namespace = row.namespace, let key = row.key else { continue }
            // A tombstone has no leaf: its causal context tells it apart.
            let held = try new.queryOne("SELECT leaf, tombstone, vv, name FROM rows WHERE ns = ? AND key = ?",
                                        [.int(Int64(namespace.rawValue)), .blob(key.bytes)]) {
                (leaf: $0.blob(0), isTombstone: $0.int(1) != 0, context: $0.blob(2), name: $0.text(3) ?? "")
            }
            if let held, held.leaf == row.leaf, held.isTombstone == row.isDeletion, held.context == row.context { continue }
            // A deletion keeps no name: the one the restored row has.
            let name = row.name.isEmpty ? held?.name ?? "" : row.name
            missing.append(UnsharedWrite(namespace: namespace, key: key, name: name, isDeletion: row.isDeletion))
        }
        return missing.sorted { ($0.namespace.rawValue, $0.name, $0.key.hex) < ($1.namespace.rawValue, $1.name, $1.key.hex) }
    }
}
