import QuireCore

/// The highest generation this replica has reached (a barrier it applied,
/// an anchor or snapshot it adopted), kept in the replica beside what it
/// collected. Prefs keep the device's generation too; a replica put back
/// alone from an older copy, prefs kept, is behind them, and syncs from
/// its own generation (`SyncService`), so what the fleet collected since
/// comes back to it as deletions, never as rows it advertises.
extension ReplicaStore {
    public func replicaGeneration() throws(StoreError) -> UInt64? {
        try read { () throws(StoreError) -> UInt64? in
            try db.queryOne("SELECT value FROM meta WHERE name = 'generation'") { UInt64(exactly: $0.int(0)) } ?? nil
        }
    }

    /// At sync start: a replica behind `prefs` was put back alone from an
    /// older copy, and the device goes back to the replica's generation
    /// (returned as `lowered`, from and to); a replica from before this
    /// record (an upgrade) takes the generation prefs say.
    public func settleGeneration(with prefs: PrefsFile) throws(StoreError) -> (from: UInt64, to: UInt64)? {
        let said = try prefs.load().generation
        guard let reached = try replicaGeneration() else {
            try recordGeneration(said)
            return nil
        }
        guard reached < said else { return nil }
        try prefs.lowerGeneration(to: reached)
        return (said, reached)
    }

    /// Records that the replica reached `generation` (never lowers it).
    public func recordGeneration(_ generation: UInt64) throws(StoreError) {
        try write { ctx in try ctx.recordGeneration(generation) }
    }
}

extension WriteContext {
    func recordGeneration(_ generation: UInt64) throws(StoreError) {
        let known = try db.queryOne("SELECT value FROM meta WHERE name = 'generation'") { $0.int(0) }
        guard known.map({ UInt64(clamping: $0) < generation }) ?? true else { return }
        try db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('generation', ?)", [.int(Int64(clamping: generation))])
    }
}
