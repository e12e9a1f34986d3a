import QuireCore
import QuireStore

/// Invariants 2 and 6, checked after every step and once more after the
/// fleet settled.
extension InvariantChecker {
    /// Fails once per distinct summary (the checks run after every step).
    mutating func failOnce(_ invariant: Invariant, _ summary: String, _ details: [String] = []) {
        guard !violations.contains(where: { $0.summary == summary }) else { return }
        fail(invariant, summary, details)
    }

    /// (2) A key a committed barrier collected shows again a version some
    /// delete of it had seen. Checked on devices at or past that commit's
    /// generation (a device behind it is held apart by the generation gap
    /// until it recovers), and on every device once settled. A version
    /// written after the delete (edit beats delete) is not a resurrection,
    /// even under a dot the delete saw (minted again by a copied-back device).
    mutating func checkNoResurrection(ledger: BarrierLedger, final: Bool) throws {
        for commit in ledger.commits where !(final && commit.generation > ledger.lostAbove ?? .max) {
            for ref in commit.keys.sorted(by: { $0.description < $1.description }) {
                let ids = (model.writesByRow[ref] ?? []).filter { $0 < commit.writesBefore }
                // A copied-back device may mint a seen dot again for a new
                // write: the tag tells that write (never seen) from the one seen.
                let deleted = ids.filter { model.writes[$0].isDelete }.flatMap { model.writes[$0].seen }.map { model.writes[$0] }
                func wasDeleted(_ head: RowHead) -> Bool {
                    deleted.contains { $0.dot == head.dot && ($0.tag == nil || $0.tag == head.tag) }
                }
                for device in fleet.members {
                    guard let store = device.store, final || device.generation.value >= commit.generation else { continue }
                    guard let row = try store.row(ref.namespace, ref.key), RowObservation.isLive(row) else {
                        tally.pass(.noResurrection)
                        continue
                    }
                    let stale = row.heads.filter(wasDeleted)
                    if stale.isEmpty {
                        tally.pass(.noResurrection)
                    } else {
                        failOnce(.noResurrection, "\(ref), collected by the barrier at generation \(commit.generation) (committed on \(commit.device)), "
                                 + "is live again on \(device.name) with a version a delete had seen",
                                 ["\(device.name) is at generation \(device.generation.value), shows \(describe(row))",
                                  "heads: " + stale.map { "\($0.dot) tag \(String($0.tag, radix: 16))" }.joined(separator: ", ")]
                                 + ids.map { model.writes[$0] }.map {
                                     "\($0.label) \($0.deviceName) \($0.isDelete ? "deleted" : "wrote \($0.token ?? "")") \($0.dot) tag \($0.tag.map { String($0, radix: 16) } ?? "-")"
                                 })
                    }
                }
            }
        }
    }

    /// (6) A device's generation moved backward with no restore since it was
    /// last seen; once settled, a device behind the fleet's highest
    /// generation (a restore or a missed commit nobody detected).
    mutating func checkGenerations(ledger: BarrierLedger, final: Bool) {
        var top = ledger.committedGeneration
        for device in fleet.members {
            let generation = (try? device.home.prefs.load().generation) ?? 0
            top = max(top, generation)
            let seen = ledger.observe(slot: device.slot, generation: generation)
            if seen.ok {
                tally.pass(.generations)
            } else {
                failOnce(.generations, "\(device.name)'s generation moved back from \(seen.was) to \(generation) with no restore")
            }
        }
        guard final else { return }
        for device in fleet.members {
            let generation = (try? device.home.prefs.load().generation) ?? 0
            let status = device.engine.map { s in [s.status().anchor, s.status().barrier].compactMap { $0 }.joined(separator: "; ") } ?? "offline"
            if generation < top, ledger.lostAbove != nil, status.contains("behind the fleet") {
                tally.pass(.generations)     // the generation is lost, and the device says it is behind
            } else if generation < top {
                failOnce(.generations, "\(device.name) ended at generation \(generation), behind the fleet's \(top): a restore or a missed commit went undetected",
                         ["status: " + status])
            } else {
                tally.pass(.generations)
            }
        }
    }
}
