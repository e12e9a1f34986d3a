import Foundation
import QuireCore
import QuireStore
import QuireSync

/// The barrier's side of a history: commits read from the engines' logs,
/// faults of the cloud folder, power losses.
extension Simulation {
    /// A device's engine committed a barrier round: the keys deleted in the
    /// history that no device holds live now were collected.
    func noteCommit(by device: SimDevice) {
        guard let store = device.store else { return }
        var keys = Set<RowRef>()
        for w in model.writes where w.isDelete && !keys.contains(w.row) {
            let row = (try? store.row(w.row.namespace, w.row.key)) ?? nil
            if !RowObservation.isLive(row) { keys.insert(w.row) }
        }
        let buried = Set(((try? store.graveyard()) ?? []).map { RowRef($0.namespace, $0.key) })
        let generation = device.generation.value
        ledger.noteCommit(.init(device: device.name, generation: generation, keys: keys, collected: keys.intersection(buried),
                                writesBefore: model.writes.count))
        fleet.trace.record(device.name, "barrier committed: generation \(generation), \(keys.count) deleted key(s) gone for good")
    }

    func perform(_ fault: CloudFault) throws {
        let cloud = fleet.cloud
        switch fault {
        case .unreachable(let slot):
            let d = device(slot)
            guard !cloud.unreachable.contains(d.name) else { return skip(d, "cloud folder already unreachable") }
            guard !cloud.lagging.contains(d.name) else { return skip(d, "its view of the cloud folder is behind") }
            cloud.setReachable(false, for: d.name)
            fleet.trace.record(d.name, "loses the cloud folder")
        case .reachable(let slot):
            let d = device(slot)
            guard cloud.unreachable.contains(d.name) else { return skip(d, "cloud folder already reachable") }
            cloud.setReachable(true, for: d.name)
            fleet.trace.record(d.name, "reaches the cloud folder again")
        case .conflictCopy(let pick):
            guard let what = cloud.addConflictCopy(pick: pick) else { return skip(nil, "no anchor to copy") }
            fleet.trace.record(nil, "cloud folder: " + what)
        case .olderPutBack(let pick):
            guard let what = cloud.putBackOlder(pick: pick) else { return skip(nil, "no older anchor to put back") }
            fleet.trace.record(nil, "cloud folder: " + what)
        case .lagging(let slot):
            let d = device(slot)
            guard cloud.fallBehind(d.name) else { return skip(d, "its view of the cloud folder is unreachable or behind already") }
            fleet.trace.record(d.name, "its view of the cloud folder falls behind (a sync service that stopped syncing)")
        case .caughtUp(let slot):
            let d = device(slot)
            guard let landed = cloud.catchUp(d.name) else { return skip(d, "its view of the cloud folder is not behind") }
            fleet.trace.record(d.name, "its view of the cloud folder catches up" + (landed.isEmpty ? "" : ": " + landed.joined(separator: ", ")))
        case .dangling(let slot):
            let d = device(slot)
            guard let store = d.store else { return skip(d, "powered off") }
            let generation = d.generation.value + 1
            guard generation > cloud.highestGeneration else { return skip(d, "an anchor at generation \(generation) exists") }
            var rows: [Row] = []
            for ns in Namespace.allCases { rows += try store.rows(ns, from: [], to: nil) }
            let keys = try AnchorKeys.of(identity: d.identity, store: store, ring: try d.rotationKeys())
            guard keys.writing != nil else { return skip(d, "it lacks a backup key: it writes no anchor") }
            try cloud.writeDangling(generation: generation, rows: rows, keys: keys, at: d.clock.now())
            fleet.trace.record(d.name, "an anchor at generation \(generation) of its rows lands for a round that never commits (it lost power after the upload)")
            // The leader that wrote it lost power right after: its engine restarts.
            try losePower(d)
        }
    }

    /// Power cut: the engine dies, the disk keeps only what was synced, and
    /// the device starts again from that.
    /// `held`: what the device held before, when its disk already died
    /// (a cut inside an engine step) and cannot be read now.
    func losePower(_ d: SimDevice, held heldBefore: [WriteRecord]? = nil) throws {
        guard d.isPowered, let disk = d.disk else { return skip(d, "already powered off") }
        let held = try heldBefore ?? writesHeld(by: d)
        let wasOnline = d.isOnline
        let unsynced = disk.unsyncedBytes
        fleet.goOffline(d)
        try disk.powerLoss()
        fleet.powerOff(d)
        try fleet.powerOn(d, online: wasOnline)
        fleet.trace.record(d.name, "loses power (\(unsynced) unsynced bytes lost) and starts again")
        try noteRolledBack(held, by: d)
        try noteArrivals(at: d)
    }
}
