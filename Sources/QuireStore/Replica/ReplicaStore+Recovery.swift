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
    public func recover(from snapshot: [Row], graveyard: [CollectedTombstone] = [], roster: [DeviceID]? = nil,
                        graveyardIsComplete: Bool = false) throws(StoreError) -> Recovery {
        let keepsAllUnnamed = graveyardIsComplete || (roster.map { !$0.contains(deviceID) } ?? false)
        return try write { ctx in
            try ctx.bury(graveyard)
            if let roster { try ctx.setBarrierRoster(roster) }
            var buried: [Namespace: [RowKey: CollectedTombstone]] = [:]
            for entry in try Graveyard.load(ctx.db, path: path) { buried[entry.namespace, default: [:]][entry.key] = entry }
            /// This device's versions no sibling had seen when its copy was
            /// taken, less those the fleet saw and collected since.
            func unshared(_ row: Row) throws(StoreError) -> [RowHead] {
                let mine = keepsAllUnnamed ? row.heads : try ctx.unsharedHeads(row)
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
    /// Versions of `row` this device wrote that no sibling is known to hold.
    func unsharedHeads(_ row: Row) throws(StoreError) -> [RowHead] {
        var out: [RowHead] = []
        for h in row.heads where h.dot.actor.device == store.deviceID {
            let first = try db.queryOne("SELECT counter FROM unshipped WHERE ns = ? AND key = ? AND incarnation = ?",
                                        [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes),
                                         .int(Int64(bitPattern: h.dot.actor.incarnation))]) { UInt64($0.int(0)) }
            if let first, h.dot.counter >= first { out.append(h) }
        }
        return out
    }
}
