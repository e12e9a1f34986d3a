import QuireCore
import QuireStore

/// Invariant (4): no body lost. Checked after every step and after the
/// heal: every note head a device shows with no body (offloaded) has that
/// body held, in `held_bodies` and re-hashed on the holder, by at least one
/// device that is not revoked, and (under `requiresCountedCopiesKept`) by
/// at least the copies the offloading device required once resident copies
/// on other devices are counted (the
/// product counts them as the engine does: a sibling that answers a hold
/// query for the note). Such a copy is not pinned: its device may edit the
/// note on, and that later version then stands for it (the offloading
/// device needs the body no more once it hears of it). Bodies a restore of
/// their holder took back are owed only while some copy is left. The
/// product never drops a held body, so "dropped only when no device needs
/// it" holds by construction.
extension InvariantChecker {
    mutating func checkNoBodyLost(_ offloads: OffloadLedger, final: Bool) throws {
        let devices = fleet.members.filter { $0.store != nil }
        for d in devices {
            guard let store = d.store else { continue }
            var seen = Set<[UInt8]>()
            for row in try store.rows(.notebook, from: [], to: nil) {
                for head in row.heads {
                    guard case .note(let n) = head.content, n.body == nil, seen.insert(n.contentHash).inserted else { continue }
                    let required = offloads.requiredCopies[.init(slot: d.slot, key: row.key, contentHash: n.contentHash)] ?? 1
                    var durable: [String] = [], resident: [String] = [], movedPast: [String] = []
                    // The device itself may hold the body for a sibling (a homebase that got the pointer).
                    for other in devices where !isRevoked(other) {
                        guard let theirs = other.store else { continue }
                        if try theirs.servableBody(contentHash: n.contentHash) != nil {
                            durable.append(other.name)
                        } else if other !== d, try theirs.servableBody(contentHash: n.contentHash, key: row.key) != nil {
                            resident.append(other.name)
                        } else if other !== d, let later = try theirs.row(.notebook, row.key), later.context.covers(head.dot),
                                  !later.heads.contains(where: { $0.dot == head.dot }) {
                            // A resident copy the offload counted, replaced there by a
                            // later edit or delete: this device takes that version
                            // when they meet and needs the body no more (seed 356).
                            movedPast.append(other.name)
                        }
                    }
                    let label = "\(d.name)'s note \(row.key.hex.prefix(8)) (body \(Hex.encode(n.contentHash.prefix(4))), \(required) cop\(required == 1 ? "y" : "ies") required)"
                    let evidence = ["held by \(durable.isEmpty ? "no device" : durable.joined(separator: ", "))"
                                    + (resident.isEmpty ? "" : "; resident on \(resident.joined(separator: ", "))")
                                    + (movedPast.isEmpty ? "" : "; replaced by a later version on \(movedPast.joined(separator: ", "))"),
                                    "when: " + (final ? "after the heal" : "after a step")]
                    if offloads.takenBack.contains(n.contentHash) {
                        // A restore of a holder took copies back: nothing
                        // re-replicates, so only "some copy is left" is owed.
                        if durable.isEmpty && resident.isEmpty {
                            fleet.trace.record(d.name, "\(label): no copy left after a restore of its holder took it back")
                        } else {
                            tally.pass(.noBodyLost)
                        }
                    } else if durable.isEmpty {
                        fail(.noBodyLost, "\(label) is offloaded but no device holds its body", evidence)
                    } else if options.requiresCountedCopiesKept, durable.count + resident.count + movedPast.count < required {
                        let copies = durable.count + resident.count
                        fail(.noBodyLost, "\(label) is offloaded with only \(copies) cop\(copies == 1 ? "y" : "ies")", evidence)
                    } else {
                        tally.pass(.noBodyLost)
                    }
                }
            }
        }
    }

    /// Problems seen while operations ran: a recall's wrong bytes, a recall
    /// that reported success and left the body offloaded, a body that could
    /// not be recalled after the heal.
    mutating func takeOffloadProblems(_ offloads: OffloadLedger) {
        for problem in offloads.problems { fail(.noBodyLost, problem) }
        offloads.problems.removeAll()
        tally.pass(.noBodyLost, offloads.recallsChecked)
        offloads.recallsChecked = 0
    }

    private func isRevoked(_ device: SimDevice) -> Bool {
        guard let row = try? device.store?.row(.devices, device.id), case .device(let record)? = row.content else { return false }
        return record.revocation != nil
    }
}
