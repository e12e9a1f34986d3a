import Foundation
import QuireCore
import QuireStore
import QuireSync

/// What the simulator knows of offloads: the copies each device asked for,
/// the batches still running, the bodies a restore of their holder took
/// back, and problems seen on the way (a recall's wrong bytes). The oracle's
/// side of invariant (4).
final class OffloadLedger {
    /// One body a device offloaded (or began to).
    struct Body: Hashable {
        let slot: Int
        let key: RowKey
        let contentHash: [UInt8]
    }

    struct Batch {
        let slot: Int
        /// The engine that runs it: a batch dies with its engine.
        let engine: ObjectIdentifier
        let id: UInt64
        let keys: [RowKey]
        let copies: Int
        /// The content hash of each note as the offload began.
        let hashes: [RowKey: [UInt8]]
    }

    /// Every body a device began to offload (a holder may keep it, whatever
    /// became of the offload).
    var begun: Set<Body> = []
    /// Copies each offloading device required, per body it offloaded: as
    /// `quire offload` records them, for the offloads reported done only
    /// (one that failed cleared nothing and promised nothing).
    var requiredCopies: [Body: Int] = [:]
    var batches: [Batch] = []
    /// Bodies a restore of a holder from an older copy took back: the trace
    /// names them; nothing can owe them (like writes a restore took back).
    var takenBack: Set<[UInt8]> = []
    /// Violations found while operations ran (checked with the rest).
    var problems: [String] = []
    /// Recalls whose bytes were checked against the content hash.
    var recallsChecked = 0

    var everyHash: Set<[UInt8]> { Set(begun.map(\.contentHash)) }

    func isInFlight(slot: Int, key: RowKey) -> Bool { batches.contains { $0.slot == slot && $0.keys.contains(key) } }
}

extension Simulation {
    func perform(offload operation: Operation, step: Int) throws {
        switch operation {
        case .offload(let slot, let pick, let count, let copies):
            try offload(device(slot), random: SeededRandom(seed: pick), count: count, copies: copies)
        case .recall(let slot, let pick):
            try recallOne(device(slot), random: SeededRandom(seed: pick), throughMount: false)
        case .readOffloaded(let slot, let pick):
            try recallOne(device(slot), random: SeededRandom(seed: pick), throughMount: true)
        case .holderPowerCut:
            guard let slot = plan.homebaseSlot else { return skip(nil, "the fleet has no homebase") }
            let d = device(slot)
            guard d.isPowered else { return skip(d, "powered off") }
            fleet.armHoldPowerCut(d)
            fleet.trace.record(d.name, "will lose power after the next body it receives arrives, before it is committed")
        case .editOffloaded(let slot, let pick, let edit):
            let d = device(slot)
            guard let store = d.store else { return skip(d, "powered off") }
            let offloaded = try offloadedBodies(store)
            guard !offloaded.isEmpty else { return skip(d, "no offloaded note to edit") }
            let random = SeededRandom(seed: pick)
            let key = offloaded[random.int(0..<offloaded.count)].key
            switch edit {
            case .prose(let prose): try proseEdit(d, .note, key: key, edit: prose, random: random, openMs: 0, step: step)
            case .retitle: try retitle(d, key: key, step: step)
            case .delete: try delete(d, RowRef(.notebook, key), step: step)
            }
        default:
            preconditionFailure("not an offload operation: \(operation)")
        }
    }

    /// `quire offload` of some of the device's oldest resident notes.
    private func offload(_ d: SimDevice, random: SeededRandom, count: Int, copies: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        guard let engine = d.engine else { return skip(d, "offline: 'quire offload' needs sync running") }
        var candidates: [(key: RowKey, hash: [UInt8], updated: Int64)] = []
        for row in try store.rows(.notebook, from: [], to: nil) where row.heads.count == 1 && !offloads.isInFlight(slot: d.slot, key: row.key) {
            guard case .note(let n)? = row.heads.first?.content, let body = n.body, !body.isEmpty else { continue }
            candidates.append((row.key, n.contentHash, n.updatedAt.seconds))
        }
        guard !candidates.isEmpty else { return skip(d, "no resident note to offload") }
        // Old notes first (what a person offloads), from a pick among the oldest few.
        candidates.sort { ($0.updated, $0.key) < ($1.updated, $1.key) }
        let start = random.int(0..<min(3, candidates.count))
        let chosen = Array(candidates[start..<min(candidates.count, start + count)])
        for c in chosen { offloads.begun.insert(OffloadLedger.Body(slot: d.slot, key: c.key, contentHash: c.hash)) }
        let id = engine.beginOffload(chosen.map(\.key), copies: copies, timeoutMilliseconds: 20_000)
        offloads.batches.append(OffloadLedger.Batch(slot: d.slot, engine: ObjectIdentifier(engine), id: id, keys: chosen.map(\.key), copies: copies,
                                                    hashes: Dictionary(chosen.map { ($0.key, $0.hash) }, uniquingKeysWith: { first, _ in first })))
        fleet.trace.record(d.name, "begins offloading \(chosen.map { $0.key.hex.prefix(8) }.joined(separator: ", ")) with \(copies) cop\(copies == 1 ? "y" : "ies") (batch \(id))")
        pollOffloads()
    }

    /// Reports the batches that finished, and forgets those whose engine stopped.
    func pollOffloads() {
        offloads.batches.removeAll { batch in
            let d = fleet.devices[batch.slot]
            guard let engine = d.engine, ObjectIdentifier(engine) == batch.engine else {
                fleet.trace.record(d.name, "offload batch \(batch.id) ended with its engine")
                return true
            }
            let (outcomes, finished) = engine.offloadProgress(batch.id)
            guard finished else { return false }
            let names = Dictionary(uniqueKeysWithValues: fleet.devices.map { ($0.id, $0.name) })
            for o in outcomes {
                if o.result == .done, let hash = batch.hashes[o.key] {
                    offloads.requiredCopies[OffloadLedger.Body(slot: batch.slot, key: o.key, contentHash: hash)] = batch.copies
                }
                fleet.trace.record(d.name, "offload of \(o.key.hex.prefix(8)): \(o.result.rawValue)"
                                   + (o.holders.isEmpty ? "" : ", held by \(o.holders.map { names[$0] ?? $0.hex.prefix(8).description }.joined(separator: ","))")
                                   + (o.reason.map { " (\($0))" } ?? ""))
            }
            return true
        }
    }

    /// Every body the device shows as offloaded: a note head with no body here.
    func offloadedBodies(_ store: ReplicaStore) throws -> [(key: RowKey, contentHash: [UInt8])] {
        var out: [(key: RowKey, contentHash: [UInt8])] = []
        for row in try store.rows(.notebook, from: [], to: nil) {
            for head in row.heads {
                if case .note(let n) = head.content, n.body == nil { out.append((row.key, n.contentHash)) }
            }
        }
        return out
    }

    /// `quire recall` of one offloaded note, or a read of it through the
    /// mount (recalled on demand within the mount's timeout).
    private func recallOne(_ d: SimDevice, random: SeededRandom, throughMount: Bool) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        let offloaded = try offloadedBodies(store)
        guard !offloaded.isEmpty else { return skip(d, "no offloaded note to \(throughMount ? "read" : "recall")") }
        let target = offloaded[random.int(0..<offloaded.count)]
        _ = try recall(d, key: target.key, contentHash: target.contentHash, timeoutMs: throughMount ? 10_000 : 30_000,
                       what: throughMount ? "reads" : "recalls")
    }

    /// Recalls through the device's own engine without blocking (the fleet
    /// runs tick by tick meanwhile), checks the bytes against the hash, and
    /// returns them (nil: the recall failed or the engine stopped).
    func recall(_ d: SimDevice, key: RowKey, contentHash: [UInt8], timeoutMs: UInt64, what: String) throws -> [UInt8]? {
        guard let engine = d.engine else {
            fleet.trace.record(d.name, "offline: cannot recall \(key.hex.prefix(8))")
            return nil
        }
        fleet.trace.record(d.name, "\(what) offloaded \(key.hex.prefix(8)) (hash \(Hex.encode(contentHash.prefix(4))))")
        engine.beginRecall(key: key, contentHash: contentHash, timeoutMilliseconds: timeoutMs)
        var waited: UInt64 = 0
        while waited <= timeoutMs + 2_000 {
            waited += fleet.tick()
            guard d.engine === engine else {
                fleet.trace.record(d.name, "the recall of \(key.hex.prefix(8)) ended with its engine")
                return nil
            }
            guard let result = engine.recallResult(contentHash: contentHash) else { continue }
            switch result {
            case .failure(let error):
                fleet.trace.record(d.name, "recall of \(key.hex.prefix(8)) failed: \(error)")
                return nil
            case .success(let body):
                offloads.recallsChecked += 1
                guard Note.bodyDigest(body) == contentHash else {
                    offloads.problems.append("\(d.name)'s recall of \(key.hex.prefix(8)) returned \(body.count) bytes that do not match its content hash")
                    return nil
                }
                let stillOffloaded = try d.store.map { try offloadedBodies($0).contains { $0.key == key && $0.contentHash == contentHash } } ?? false
                if stillOffloaded {
                    offloads.problems.append("\(d.name)'s recall of \(key.hex.prefix(8)) succeeded, yet the note still shows that body offloaded")
                }
                fleet.trace.record(d.name, "recalled \(key.hex.prefix(8)): \(body.count) B, hash checked")
                return body
            }
        }
        fleet.trace.record(d.name, "recall of \(key.hex.prefix(8)) got no result within \(waited) ms")
        return nil
    }

    /// The offloaded bodies a device keeps for others: held durably, or
    /// resident under a pin an offload's count put there. Read before a
    /// device directory goes back to an older copy and again after: those
    /// the copy lacks (older than the hold or the pin) were taken back.
    func heldBodies(of d: SimDevice) throws -> Set<[UInt8]> {
        guard let store = d.store else { return [] }
        return try Set(offloads.everyHash.filter { try store.servableBody(contentHash: $0) != nil || !store.copyPins(contentHash: $0).isEmpty })
    }

    /// Offloaded bodies a device can serve, held for others or resident.
    func copiesOfOffloadedBodies(on d: SimDevice) throws -> Set<[UInt8]> {
        guard let store = d.store else { return [] }
        return try Set(offloads.begun.filter { body in
            try store.servableBody(contentHash: body.contentHash) != nil
                || store.servableBody(contentHash: body.contentHash, key: body.key) != nil
        }.map(\.contentHash))
    }

    func noteBodiesTakenBack(_ before: Set<[UInt8]>, by d: SimDevice) throws {
        let gone = before.subtracting(try heldBodies(of: d))
        guard !gone.isEmpty else { return }
        offloads.takenBack.formUnion(gone)
        fleet.trace.record(d.name, "the restore took back \(gone.count) held bod\(gone.count == 1 ? "y" : "ies"): "
                           + gone.map { Hex.encode($0.prefix(4)) }.sorted().joined(separator: ", "))
    }

    /// After the heal: every body any device still shows offloaded comes
    /// back through that device's real recall, unless a restore took it back.
    /// Passes repeat until one finds nothing new: an offload still in flight
    /// may finish (its homebase acks a retry) while another device recalls.
    /// Returns whether any body was offloaded (and so asked for).
    @discardableResult
    func recallEverything() throws -> Bool {
        fleet.trace.phase = .settle
        var asked: [ObjectIdentifier: Set<[UInt8]>] = [:]
        var any = false
        for _ in 0..<4 {
            var found = false
            for d in fleet.members {
                guard let store = d.store else { continue }
                for body in try offloadedBodies(store) where asked[ObjectIdentifier(d), default: []].insert(body.contentHash).inserted {
                    found = true
                    try recallAfterHeal(d, body)
                }
            }
            any = any || found
            if !found { break }
        }
        return any
    }

    private func recallAfterHeal(_ d: SimDevice, _ body: (key: RowKey, contentHash: [UInt8])) throws {
        guard try recall(d, key: body.key, contentHash: body.contentHash, timeoutMs: 30_000, what: "after the heal, recalls") == nil else { return }
        if offloads.takenBack.contains(body.contentHash),
           try !fleet.members.contains(where: { try $0.store?.servableBody(contentHash: body.contentHash, key: body.key) != nil }) {
            fleet.trace.record(d.name, "cannot recall \(body.key.hex.prefix(8)): a restore took back its last copy")
            return
        }
        offloads.problems.append("after the heal, \(d.name) cannot recall the body of \(body.key.hex.prefix(8)) "
                                 + "(hash \(Hex.encode(body.contentHash.prefix(4))))")
    }
}
