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
