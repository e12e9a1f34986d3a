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
