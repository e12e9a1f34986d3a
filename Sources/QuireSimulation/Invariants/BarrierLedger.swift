import QuireCore

/// What the barrier did in one history, for invariants 2 and 6: each
/// commit with the keys it collected, and each device's generation as last
/// seen (a restore is the only thing allowed to take it back).
final class BarrierLedger {
    struct Commit {
        let device: String
        let generation: UInt64
        /// Keys deleted in the history and live nowhere at the commit:
        /// the digests were equal across the roster, so no device held them.
        let keys: Set<RowRef>
        /// Of those, the ones the committing device's graveyard names: a
        /// tombstone of them was collected. A key absent there because its
        /// only delete never reached it is not (a delete taken back with
        /// its device, the write it saw held by that device alone).
        let collected: Set<RowRef>
        /// Writes recorded before the commit (a later write of a key may bring it back).
        let writesBefore: Int
    }

    private(set) var commits: [Commit] = []
    /// Per slot: the generation last seen.
    private var seen: [Int: UInt64] = [:]
    /// Restores per slot since the generation was last seen.
    private var restoredSince = Set<Int>()

    func noteCommit(_ commit: Commit) { commits.append(commit) }

    /// The highest generation a barrier committed.
    var committedGeneration: UInt64 { commits.map(\.generation).max() ?? 0 }

    /// Set at the end when the fleet lost what it committed above this
    /// generation: no member holds a later one, and the cloud folder holds
    /// no anchor at the committed one (every device was put back from before
    /// it, and the folder too). No device can serve those rounds' state, so
    /// what they collected may come back, and a device may stay behind them
    /// if its status says so.
    var lostAbove: UInt64?

    /// Keys collected by rounds the fleet lost (see `lostAbove`).
    var lostKeys: Set<RowRef> {
        guard let lostAbove else { return [] }
        return Set(commits.filter { $0.generation > lostAbove }.flatMap(\.keys))
    }

    func noteRestore(slot: Int) { restoredSince.insert(slot) }

    /// Records `generation` for `slot`; false if it moved backward with no restore since.
    func observe(slot: Int, generation: UInt64) -> (ok: Bool, was: UInt64) {
        let was = seen[slot] ?? 0
        let ok = generation >= was || restoredSince.contains(slot)
        seen[slot] = generation
        restoredSince.remove(slot)
        return (ok, was)
    }
}
