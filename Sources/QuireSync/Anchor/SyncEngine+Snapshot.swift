import Foundation
import QuireCore
import QuireStore

/// Further than the seed: a device behind the fleet's generation that cannot
/// read the anchor (no cloud folder, the folder gone, a key missing) would
/// be stuck, excluded from reconcile in both directions. It asks a sibling
/// that is ahead for a snapshot instead, gated on the same generation check
/// both ways: a sibling serves only a device behind it, and a device takes
/// only a snapshot ahead of it, whole, from the sibling that advertised it.
extension SyncEngine {
    func requestSnapshot(from sibling: DeviceID, theirGeneration: UInt64) {
        // One request at a time per sibling, unless its parts stopped coming
        // (a part lost on the relay left a device behind forever: the
        // simulator's seed 1117 with --everything).
        let nowMs = clock.monotonicMilliseconds()
        if let assembly = snapshotAssembly, assembly.from == sibling,
           nowMs &- assembly.lastPartMs < configuration.barrierTimeoutMilliseconds { return }
        note("asking \(name(of: sibling)) (generation \(theirGeneration)) for a snapshot: the anchor cannot be read here")
        send(.snapshotRequest, SnapshotRequest(generation: deps.generation()).encoded(), to: sibling)
    }

    func handleSnapshotRequest(_ request: SnapshotRequest, from sender: DeviceID) throws {
        let mine = deps.generation()
        guard mine > request.generation else {
            note("refused a snapshot to \(name(of: sender)): it is not behind this device (generation \(request.generation), here \(mine))")
            return
        }
        let namespaces = Namespace.allCases
        let graveyard = try store.graveyard()
        let roster = try store.barrierRoster()
        // A claim only for rounds up to this generation (a replica put back
        // under newer preferences claims nothing).
        let since = try store.graveyardCoverage().flatMap { $0.through == mine ? $0.since : nil }
        let round = roundOfGeneration(mine)
        for (i, ns) in namespaces.enumerated() {
            let rows = try store.rows(ns, from: [], to: nil)
            send(.snapshotResponse, SnapshotResponse(generation: mine, namespace: ns, part: i, parts: namespaces.count, rows: rows,
                                                     graveyard: graveyard.filter { $0.namespace == ns }, roster: roster,
                                                     graveyardSince: since, round: round).encoded(), to: sender)
        }
        note("served a snapshot at generation \(mine) to \(name(of: sender)), which was at \(request.generation)")
    }

    func handleSnapshotResponse(_ response: SnapshotResponse, from sender: DeviceID) throws {
        let local = deps.generation()
        guard response.generation > local, siblings[sender]?.generationGap == response.generation else {
            count(.generationGap)
            return
        }
        var assembly = snapshotAssembly ?? SnapshotAssembly(from: sender, generation: response.generation, parts: response.parts)
        if assembly.from != sender || assembly.generation != response.generation || assembly.parts != response.parts {
            assembly = SnapshotAssembly(from: sender, generation: response.generation, parts: response.parts)
        }
        assembly.received[response.part] = response.rows
        assembly.graveyard[response.part] = response.graveyard
        if let roster = response.roster { assembly.roster = roster }
        if response.part == 0 {
            assembly.graveyardSince = response.graveyardSince
            assembly.round = response.round
        }
        assembly.lastPartMs = clock.monotonicMilliseconds()
        snapshotAssembly = assembly
        guard assembly.isComplete else { return }
        snapshotAssembly = nil
        let received = assembly.received.keys.sorted().flatMap { assembly.received[$0]! }
        do {
            // Whatever a reconcile would refuse, a snapshot may not bring in.
            let rows = try admissibleSnapshotRows(received, from: "\(name(of: sender))'s snapshot")
            let graveyard = admissibleGraveyard(assembly.graveyard.keys.sorted().flatMap { assembly.graveyard[$0]! })
            // A graveyard that names every round since this device's state
            // tells a write made after a round agreed from one it collected.
            let coverage = assembly.graveyardSince.map { GraveyardCoverage(since: $0, through: assembly.generation) }
            let report = try store.recover(from: rows, graveyard: graveyard, roster: assembly.roster,
                                           graveyardIsComplete: coverage?.covers(after: local) ?? false, coverage: coverage)
            try store.mintIncarnation(reason: "a sibling at generation \(assembly.generation) served the fleet's state; this device was at \(local)")
            try deps.setGeneration(assembly.generation)
            try noteRound(assembly.round, of: assembly.generation)
            invalidateDigest()
            anchorState = nil
            wedge.success(.generation)
            barrier.lastOutcome = "caught up from \(name(of: sender))'s snapshot at \(DateStamp.format(clock.now())): generation \(local) → "
                + "\(assembly.generation), \(report.joined) rows brought forward, \(report.removed) rows the fleet had deleted removed, "
                + "\(report.keptUnshared) rows kept for writes no other device had seen"
            note(barrier.lastOutcome!)
            broadcast(force: true, nowMs: clock.monotonicMilliseconds())
        } catch {
            anchorState = "catching up from \(name(of: sender))'s snapshot failed: \(error); nothing was changed and the generation stays"
            note("snapshot: " + anchorState!)
        }
    }
}

/// Rows of a snapshot (a sibling's, or the anchor's) arrive by the same
/// checks as rows from reconciliation (`SyncEngine+Reconcile`): within the
/// row limits, and roster rows verified statements of this account that
/// undo no revocation (a tombstone in `devices` is refused): a snapshot is
/// no way around what a reconcile would refuse.
extension SyncEngine {
    /// The snapshot's rows that pass. A refused row of a collected namespace
    /// must not read as one the fleet deleted (recovery removes what a
    /// snapshot lacks): where this device holds that key, its own row stands
    /// in for the refused one, so recovery leaves it as it was.
    func admissibleSnapshotRows(_ rows: [Row], from source: String) throws -> [Row] {
        var out: [Row] = []
        var refused: [String] = []
        for row in rows {
            let violation = RowLimits.check(row)
            if violation == nil, !certifiedRows([row]).isEmpty {
                out.append(row)
                continue
            }
            if violation != nil { count(.rowOverLimit) }
            refused.append("\(row.namespace.name) \(row.key.hex.prefix(12)) (" + (violation.map { "\($0)" } ?? "not a verified statement of this account") + ")")
            if row.namespace != .devices, let mine = try store.row(row.namespace, row.key) { out.append(mine) }
        }
        if !refused.isEmpty {
            note("refused \(refused.count) rows of \(source), as a reconcile would: " + refused.prefix(5).joined(separator: ", ")
                 + (refused.count > 5 ? ", …" : ""))
        }
        return out
    }

    /// Graveyard entries only name keys of namespaces a barrier collects.
    func admissibleGraveyard(_ entries: [CollectedTombstone]) -> [CollectedTombstone] {
        let kept = entries.filter { ReplicaStore.collectedNamespaces.contains($0.namespace) }
        if kept.count < entries.count { count(.badPayload, entries.count - kept.count) }
        return kept
    }
}
