import Foundation
import QuireCore
import QuireStore

/// What restores, power losses and joins did to the writes the model owes:
/// which a rollback took back, which came back (a newer copy, a frame
/// still in flight), and what a device learned without a frame.
extension Simulation {
    /// Writes whose dot the device's rows cover now.
    func writesHeld(by d: SimDevice) throws -> [WriteRecord] {
        guard let store = d.store else { return [] }
        return try model.writes.filter { w in
            guard !model.rolledBack.contains(w.id) else { return false }
            return keeps(try store.row(w.row.namespace, w.row.key), w)
        }
    }

    /// Whether `row` keeps what `w` did: an edit's dot is in its history; a
    /// delete (no dot of its own) removed versions that are in its history
    /// and no longer heads. Without the delete case, a delete taken back by
    /// a restore before it left the device was still owed (seed 30006).
    private func keeps(_ row: Row?, _ w: WriteRecord) -> Bool {
        guard w.isDelete else {
            if arrived(row, w) { return true }
            // Only a twin under its dot is there (a copy-back minted it
            // again): with no tag to tell them apart it counts; otherwise a
            // later write of that actor covers it only if that write saw it.
            guard let row, RowObservation.covers(row, w.dot) else { return false }
            if w.tag == nil { return true }
            if row.context[w.dot.actor] == w.dot.counter { return false }
            return (model.writesByRow[w.row] ?? []).map { model.writes[$0] }.contains {
                $0.dot.actor == w.dot.actor && $0.dot.counter > w.dot.counter && $0.seen.contains(w.id) && row.context.covers($0.dot)
            }
        }
        let removed = w.seen.map { model.writes[$0] }.filter { !$0.isDelete }.map(\.dot)
        return RowObservation.keepsRemoval(row, of: removed)
    }

    /// After a restore: the writes the device held before and not after,
    /// that no other device holds either, are gone with the rollback (a
    /// person who restores an old copy before syncing loses what only that
    /// device had). Nothing owes them; they are named in the trace. A delete
    /// whose key a committed barrier collected after it, and a write such a
    /// delete saw, are settled in the fleet (the row is absent everywhere
    /// by agreement), not taken back (seed 2470). A write no delete saw is
    /// not: a barrier that collected its key never held it, and it went
    /// with its device (a lost one, outside the barrier's roster: seeds
    /// 40067 and 40420 with --revocations). Nor is a key absent at the
    /// commit only because its delete never left the device: the barrier
    /// collected it only if its graveyard says so (seed 9515 with
    /// --lagging-cloud --revocations).
    func noteRolledBack(_ heldBefore: [WriteRecord], by d: SimDevice, why: String = "the restore", countingItself: Bool = true) throws {
        var gone: [Int] = []
        for w in heldBefore {
            let deleted = w.isDelete || model.writes(of: w.row).contains { $0.isDelete && $0.seen.contains(w.id) }
            if deleted, ledger.commits.contains(where: { $0.collected.contains(w.row) && w.id < $0.writesBefore }) { continue }
            var holders = fleet.members.filter { $0 !== d }.compactMap(\.store)
            if countingItself, let mine = d.store { holders.insert(mine, at: 0) }
            let stillHeld = try holders.contains { keeps(try $0.row(w.row.namespace, w.row.key), w) }
            if !stillHeld { gone.append(w.id) }
        }
        guard !gone.isEmpty else { return }
        model.markRolledBack(gone)
        fleet.trace.record(d.name, "\(why) took back \(gone.map { "#w\($0)" }.joined(separator: ", ")), held by no other device")
    }

    /// After a restore: the device's own writes an earlier restore took
    /// back that the copy put back holds again (a newer copy restored after
    /// an older one). They are on the device once more, and leave it at its
    /// next sync like any other: they stand, and are owed (seed 400226).
    /// Only the very version counts (`arrived`): the device may have minted
    /// the dot again since, and a later write "saw" either twin (seed
    /// 400197). A delete counts while what it removed stays removed (the
    /// row may have been written again since, from its tombstone).
    func noteGivenBack(by d: SimDevice) throws {
        guard let store = d.store else { return }
        var back: [Int] = []
        for id in model.rolledBack.sorted() where model.writes[id].slot == d.slot {
            let w = model.writes[id]
            let row = try store.row(w.row.namespace, w.row.key)
            if w.isDelete ? keeps(row, w) : arrived(row, w) { back.append(id) }
        }
        guard !back.isEmpty else { return }
        model.unmarkRolledBack(back)
        fleet.trace.record(d.name, "the restore gave back \(back.map { "#w\($0)" }.joined(separator: ", ")), taken back by an earlier one")
    }

    /// Rows a device took in at start-up without a frame (the cloud
    /// anchor a new or restored device recovers from): a sibling's version
    /// that arrived in them is known to it, as a delivered frame's causal
    /// tag would have told the model. Without this, a later write there
    /// "had seen" nothing it replaced, and the replaced version was owed
    /// (seed 100502 --restore-by-copy).
    func noteArrivals(at d: SimDevice) throws {
        guard let store = d.store else { return }
        var tag = model.stamp(of: d.slot)
        for w in model.writes where w.slot != d.slot && tag[w.slot] < w.causalCount {
            if arrived(try store.row(w.row.namespace, w.row.key), w) { tag[w.slot] = w.causalCount }
        }
        model.delivered(to: d.slot, tag: tag)
    }

    /// A write taken back with its device can still have left it: a frame
    /// sent just before the restore (or loss) lands afterwards, and the
    /// sibling that merges it holds the write like any other. Once some
    /// device keeps it, it stands again and is owed (the person deleted or
    /// wrote it, and it reached the fleet before the rollback). Only a
    /// sibling the write could have reached counts (the model's causal
    /// clock, carried by the frames delivered): a version gone there for
    /// another reason is never credited to a write that never arrived.
    /// A delete leaves no version of its own: it escaped when such a
    /// sibling holds the row as a tombstone that removed what it removed,
    /// and no delete that stands removed that too. Checked after every step
    /// as well, since a barrier may collect the tombstone before the end.
    func noteEscapedRollbacks() throws {
        guard !model.rolledBack.isEmpty else { return }
        let stores = fleet.members.compactMap { device in device.store.map { (device, $0) } }
        for id in model.rolledBack.sorted() {
            let w = model.writes[id]
            let holder = try stores.first { device, store in
                guard device.slot != w.slot, model.stamp(of: device.slot)[w.slot] >= w.causalCount else { return false }
                let row = try store.row(w.row.namespace, w.row.key)
                return w.isDelete ? escapedDelete(row, w) : arrived(row, w)
            }
            guard let holder else { continue }
            model.unmarkRolledBack([id])
            fleet.trace.record(holder.0.name, "holds #w\(id), which a rollback took back from \(w.deviceName) after it had left in a frame: it stands")
        }
    }

    /// Whether `row` is a tombstone that removed what the delete `w`
    /// removed, where no standing delete of the row did.
    private func escapedDelete(_ row: Row?, _ w: WriteRecord) -> Bool {
        guard RowObservation.isTombstone(row), keeps(row, w) else { return false }
        return !model.writes(of: w.row).contains { $0.isDelete && $0.id != w.id && !model.rolledBack.contains($0.id) && !$0.seen.isDisjoint(with: w.seen) }
    }

    /// Whether `row` shows that the very version `w` made arrived: its dot
    /// in the row's history, and where the device minted that dot twice
    /// (a copy-back), its tag, as a head or in the history. A later write
    /// that covers it proves nothing here (it may have seen the twin), and
    /// a delete leaves no version.
    private func arrived(_ row: Row?, _ w: WriteRecord) -> Bool {
        guard !w.isDelete, let row, RowObservation.covers(row, w.dot) else { return false }
        let twins = (model.writesByRow[w.row] ?? []).contains { $0 != w.id && model.writes[$0].dot == w.dot }
        guard twins else { return true }
        guard let tag = w.tag else { return false }
        if row.heads.contains(where: { $0.dot == w.dot && $0.tag == tag }) { return true }
        return row.context[w.dot.actor] == w.dot.counter && row.context.tags(w.dot.actor).contains(tag)
    }
}
