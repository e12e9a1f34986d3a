import QuireCore

/// Catching up to the cloud anchor after a rollback (a device put back from
/// a backup older than the fleet's last barrier). Rows are a semilattice,
/// so recovery joins the snapshot in, except for what the barrier collected:
/// a version this device holds that the snapshot neither holds nor covers
/// was deleted and its tombstone collected (the fleet held it, and the
/// snapshot is the fleet's state after the barrier), so it goes, unless it
/// is a version this device wrote and no sibling ever saw (edit beats
/// delete: that version stays). That holds whether the snapshot lacks the
/// key or holds a row written again after the collection, whose context
/// knows nothing of the old versions.
///
/// "No sibling ever saw it" is what this device knew when its copy was
/// taken; the fleet may have seen such a version since, then deleted and
/// collected its row. The graveyard that comes with the snapshot names
/// those versions (`CollectedTombstone.saw`): they go like any other
/// version the fleet collected, and only versions the fleet truly never
/// saw stay.
///
/// Nor can the barrier have collected a version that only devices outside
/// its roster ever held (a device that joined after it, writing to or
/// confirming a write of this device while both were behind): `holders`
/// records who sent each row and who confirmed each write, and such a
/// version stays, whoever wrote it (simulator seed 4819).
///
/// A device that was not in the barrier's roster at all (it joined while
/// the leader had not heard of it, so no round waited for it) was never
/// rolled back: the fleet never held its state. For it (`outsider`), every
/// version it holds is one the fleet may never have seen, whoever wrote it,
/// and only what the graveyard or the snapshot's contexts name goes.
extension ReplicaStore {
    public struct Recovery: Equatable, Sendable {
        /// Rows the snapshot brought in or moved forward.
        public var joined = 0
        /// Rows removed because the fleet deleted and collected them.
        public var removed = 0
        /// Rows kept because they hold this device's unshared writes.
        public var keptUnshared = 0
    }

    /// Joins `snapshot` (every live row of the account at the anchor's
    /// generation) into this replica, with the anchor's `graveyard`, in one
    /// transaction.
    /// `roster`: the devices the snapshot's barrier agreed with (nil: not
    /// known, and this device is taken to have been one of them).
    /// `graveyardIsComplete`: the graveyard names every version the fleet
    /// deleted and collected since this device's state; then a version
    /// is the fleet's deleted one only if the graveyard or the snapshot
    /// names it, whoever wrote it (a sibling's write after the barrier
    /// agreed, passed on before this device heard of the commit, stays).
    /// `coverage`: the rounds the snapshot's graveyard names in full
    /// (through the snapshot's generation; nil: not known), recorded as
    /// this device's, joined with its own where the two meet.
    public func recover(from snapshot: [Row], graveyard: [CollectedTombstone] = [], roster: [DeviceID]? = nil,
                        graveyardIsComplete: Bool = false, coverage: GraveyardCoverage? = nil) throws(StoreError) -> Recovery {
        let keepsAllUnnamed = graveyardIsComplete || (roster.map { !$0.contains(deviceID) } ?? false)
        return try write { ctx in
            try ctx.bury(graveyard)
            var joined = coverage
            if let own = try GraveyardCoverage.load(ctx.db), let theirs = coverage, own.since < theirs.since, theirs.since <= own.through + 1 {
                joined?.since = own.since
            }
            try GraveyardCoverage.store(joined, ctx.db)
            if let roster { try ctx.setBarrierRoster(roster) }
            var buried: [Namespace: [RowKey: CollectedTombstone]] = [:]
            for entry in try Graveyard.load(ctx.db, path: path) { buried[entry.namespace, default: [:]][entry.key] = entry }
            /// This device's versions no sibling had seen when its copy was
            /// taken, less those the fleet saw and collected since.
            func unshared(_ row: Row) throws(StoreError) -> [RowHead] {
                let mine = keepsAllUnnamed ? row.heads : try ctx.unsharedHeads(row, roster: roster)
                guard let entry = buried[row.namespace]?[row.key] else { return mine }
                return mine.filter { !entry.saw($0) }
            }
            var report = Recovery()
            var byKey: [Namespace: [RowKey: Row]] = [:]
            for row in snapshot { byKey[row.namespace, default: [:]][row.key] = row }
            for ns in Namespace.allCases {
                let incoming = byKey[ns] ?? [:]
                let localKeys = try ctx.db.query("SELECT key FROM rows WHERE ns = ?", [.int(Int64(ns.rawValue))]) { ID16(bytes: $0.blob(0) ?? [])! }
                for key in localKeys where incoming[key] == nil {
                    guard ReplicaStore.collectedNamespaces.contains(ns),
                          let record = try RowRecord.load(ctx.db, ns, key, withBody: true) else { continue }
                    let local = try ctx.decodeSettingAside(record)
                    let kept = try unshared(local)
                    if kept.isEmpty {
                        // A local tombstone, not a silent removal: the mount's
                        // change feed sees it go, and it buries any stale copy
                        // until a later barrier collects it (no leaf: the digest
                        // equals the fleet's either way) ...
                        if !local.isTombstone {
                            try ctx.writeRow(local.deleted(), previousLeaf: record.leaf, exists: true)
                            try ctx.db.run("DELETE FROM unshipped WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
                            report.removed += 1
                        }
                        // ... unless the fleet collected a tombstone that saw all
                        // of it: then it is collected here too, as the commit
                        // would have done (a device only behind, its commit
                        // still in flight, recovers this way).
                        if let entry = buried[ns]?[key], entry.context.includes(local.context) {
                            try ctx.collectTombstone(ns, key)
                        }
                    } else {
                        let trimmed = Row(namespace: ns, key: key, context: local.context, heads: kept)
                        try ctx.writeRow(trimmed, previousLeaf: record.leaf, exists: true)
                        report.keptUnshared += 1
                    }
                }
                for (key, row) in incoming.sorted(by: { $0.key < $1.key }) {
                    if ReplicaStore.collectedNamespaces.contains(ns), let record = try RowRecord.load(ctx.db, ns, key, withBody: true) {
                        let local = try ctx.decodeSettingAside(record)
                        let mine = try unshared(local)
                        let collected = local.heads.filter { h in
                            !row.holds(h) && !row.saw(h) && !mine.contains { $0.dot == h.dot && $0.tag == h.tag }
                        }
                        if !collected.isEmpty {
                            let kept = local.heads.filter { h in !collected.contains { $0.dot == h.dot && $0.tag == h.tag } }
                            let trimmed = Row(namespace: ns, key: key, context: local.context, heads: kept)
                            try ctx.writeRow(trimmed, previousLeaf: record.leaf, exists: true)
                            report.removed += 1
                        }
                    }
                    if case .store = try ctx.applyRemote(row) { report.joined += 1 }
                }
            }
            return report
        }
    }
}

extension WriteContext {
    /// Versions of `row` the fleet of the barrier cannot have held: this
    /// device's writes no sibling is known to hold, and with `roster` (the
    /// barrier's), any version written outside the roster, or by this
    /// device, that only devices outside it were seen to hold (`holders`):
    /// no device of the barrier held them, so it cannot have collected
    /// their delete. A holder not known counts as the roster's.
    func unsharedHeads(_ row: Row, roster: [DeviceID]?) throws(StoreError) -> [RowHead] {
        var out: [RowHead] = []
        let fleet = roster.map { Set($0.map(\.bytes) + [ReplicaStore.unknownHolder]) }
        for h in row.heads {
            let author = h.dot.actor.device
            let args: [SQLValue] = [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes), .int(Int64(bitPattern: h.dot.actor.incarnation))]
            if author == store.deviceID,
               let first = try db.queryOne("SELECT counter FROM unshipped WHERE ns = ? AND key = ? AND incarnation = ?", args, { UInt64($0.int(0)) }),
               h.dot.counter >= first {
                out.append(h)
                continue
            }
            guard let fleet, author == store.deviceID || !fleet.contains(author.bytes) else { continue }
            let holders = try db.query("SELECT holder FROM holders WHERE ns = ? AND key = ? AND incarnation = ? AND author = ? AND counter >= ?",
                                       args + [.blob(author.bytes), .int(Int64(h.dot.counter))]) { $0.blob(0) ?? [] }
            if !holders.isEmpty, !holders.contains(where: fleet.contains) { out.append(h) }
        }
        return out
    }
}
