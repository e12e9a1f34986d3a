import Foundation
import QuireCore
import QuireStore
import QuireSync

/// Revocation, as a person who lost a device does it: the device goes
/// away with whatever only it held, another device revokes it with the
/// code of `quire devices revoke`, and the fleet goes on without it. A
/// thief may turn the lost device on again once the fleet has settled:
/// nothing it writes after its revocation may reach a device of the roster.
extension Simulation {
    func revoke(_ victim: SimDevice, by revoker: SimDevice, thiefReturns: Bool) throws {
        guard victim !== revoker, !revoker.isRevoked else { return skip(victim, "no other device to revoke it from") }
        guard fleet.members.count >= 3 else { return skip(victim, "two devices stay on the roster", kind: "revoked") }
        // Bodies only the homebase holds would go with it: not drawn here.
        guard victim.slot != plan.homebaseSlot else { return skip(victim, "the homebase is not revoked in these histories", kind: "revoked") }
        guard let store = revoker.store else { return skip(revoker, "powered off: cannot revoke") }
        let held = try writesHeld(by: victim)
        let copies = try copiesOfOffloadedBodies(on: victim)
        do {
            try revokeAsTheCommandDoes(victim, by: revoker, store: store)
        } catch let refusal as Revoking.Refusal {
            // It has not heard of the device yet (a joiner), or was revoked itself.
            return skip(victim, "\(revoker.name) cannot revoke it: \(refusal)", kind: "revoked")
        }
        fleet.powerOff(victim)
        victim.isRevoked = true
        // What the lost device alone held is gone with it (nothing owes it);
        // judged once the fleet settled: frames it sent before it was lost
        // may still be on the way, and what they carry is not gone.
        pendingLosses.append((held, victim))
        fleet.trace.record(revoker.name, "revokes \(victim.name), which was lost" + (thiefReturns ? " (a thief will turn it on again)" : ""))
        // Its copies of offloaded bodies went with it, and nothing makes
        // them again: like a restore that took copies back, only "some copy
        // is left" is owed for them (seed 800015 with --everything --revocations).
        if !copies.isEmpty {
            offloads.takenBack.formUnion(copies)
            fleet.trace.record(victim.name, "the loss took its copies of \(copies.count) offloaded bod\(copies.count == 1 ? "y" : "ies"): "
                               + copies.map { Hex.encode($0.prefix(4)) }.sorted().joined(separator: ", "))
        }
        if thiefReturns { thieves.append(victim) }
    }

    /// After the settle: what each lost device held that no roster device
    /// got (before or after its loss) went with it.
    func judgeLosses() throws {
        for (held, victim) in pendingLosses {
            try noteRolledBack(held, by: victim, why: "the loss of \(victim.name)", countingItself: false)
        }
        pendingLosses = []
    }

    /// A revocation signed by a device revoked concurrently counts nowhere
    /// (the device log's rule): the device it revoked is on the roster
    /// again, as `quire devices` shows. The person revokes it again, from
    /// the first device that shows it trusted (its status said so). Done
    /// when the faults heal, and every 10 s of the settle after: the
    /// revocation that voids another may arrive late (seed 41848).
    func revokeAgainWhereVoided() throws {
        for lost in fleet.devices where lost.isRevoked {
            for member in fleet.members {
                guard let store = member.store,
                      let entry = try Roster.load(from: store, accountKey: member.identity.account.publicKey).roster[lost.id],
                      !entry.isRevoked else { continue }
                do {
                    try revokeAsTheCommandDoes(lost, by: member, store: store)
                    fleet.trace.record(member.name, "revokes \(lost.name) again: the roster here shows it trusted (its revocation not heard of yet, or signed by a device revoked concurrently)")
                } catch is Revoking.Refusal {
                    continue
                }
                break
            }
        }
    }

    /// What `quire devices revoke` does: the revocation with its fresh
    /// backup key (kept in the revoker's directory first), then the anchor
    /// and commit record sealed again under the new key, when the revoker
    /// reaches the cloud folder.
    func revokeAsTheCommandDoes(_ lost: SimDevice, by revoker: SimDevice, store: ReplicaStore) throws {
        var ring = try revoker.rotationKeys()
        let before = try AnchorKeys.of(identity: revoker.identity, store: store, ring: ring)
        let homePath = revoker.home.path
        try Revoking.revoke(lost.id, by: revoker.identity, store: store, at: revoker.clock.now()) { id, key in
            ring.add(id, key)
            try ring.save(keysPath: homePath)
        }
        guard !fleet.cloud.unreachable.contains(revoker.name) else { return }
        let after = try AnchorKeys.of(identity: revoker.identity, store: store, ring: ring)
        let cloud = CloudFolder(path: fleet.cloud.view(of: revoker.name), accountID: revoker.identity.userIDHash)
        if let words = try? AnchorRekey.afterRevocation(cloud: cloud, before: before, after: after, localGeneration: revoker.generation.value,
                                                         device: revoker.id, deviceLog: try store.rows(.devices, from: [], to: nil)) {
            fleet.trace.record(revoker.name, "cloud folder: " + words)
        }
    }

    /// After the fleet settled (every roster device knows every revocation):
    /// each thief's device comes back on, writes, and syncs for a minute.
    /// Returns what reached the roster that must not have.
    func thievesReturn() throws -> [String] {
        guard !thieves.isEmpty else { return [] }
        var stolen: [(thief: SimDevice, key: RowKey, title: String)] = []
        for thief in thieves {
            // A thief runs a build of its own: it never reads the folder's
            // copies of the device log, which would tell it it was revoked
            // (it forges in the folder itself, below).
            fleet.cloud.setReachable(false, for: thief.name)
            try fleet.powerOn(thief, online: true)
            let title = "written by \(thief.name) after its revocation"
            let row = try thief.store!.put(.note(Note(title: title, body: Array("a thief's words\n".utf8),
                                                      createdAt: thief.clock.now(), updatedAt: thief.clock.now())))
            stolen.append((thief, row.key, title))
            fleet.trace.record(thief.name, "a thief turns it on and writes '\(title)'")
        }
        fleet.run(ms: 60_000)
        var problems = try thievesForgeAnchors(stolen)
        for (thief, key, title) in stolen {
            for member in fleet.members {
                if let row = try member.store?.row(.notebook, key), RowObservation.isLive(row) {
                    problems.append("\(member.name) took '\(title)' from \(thief.name), which was revoked")
                }
            }
        }
        for thief in thieves { fleet.goOffline(thief) }
        return problems
    }
}
