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
        for (i, ns) in namespaces.enumerated() {
            let rows = try store.rows(ns, from: [], to: nil)
            send(.snapshotResponse, SnapshotResponse(generation: mine, namespace: ns, part: i, parts: namespaces.count, rows: rows,
                                                     graveyard: graveyard.filter { $0.namespace == ns }, roster: roster).encoded(), to: sender)
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
        assembly.lastPartMs = clock.monotonicMilliseconds()
        snapshotAssembly = assembly
        guard assembly.isComplete else { return }
        snapshotAssembly = nil
        let rows = assembly.received.keys.sorted().flatMap { assembly.received[$0]! }
        do {
            let report = try store.recover(from: rows, graveyard: assembly.graveyard.keys.sorted().flatMap { assembly.graveyard[$0]! },
                                           roster: assembly.roster)
            try store.mintIncarnation(reason: "a sibling at generation \(assembly.generation) served the fleet's state; this device was at \(local)")
            try deps.setGeneration(assembly.generation)
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
