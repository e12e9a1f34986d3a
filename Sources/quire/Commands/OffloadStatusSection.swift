import Foundation
import QuireCore
import QuireStore
import QuireSync

/// The offload part of `quire status` (and of the mount's `.quire/status`):
/// on a homebase, the bodies it holds for whom; on any device, its
/// offloaded notes by holder, which holders cannot be reached now, and
/// which were revoked (their copies count no more: `RevokedCopies`).
extension StatusReport {
    func addingOffload(home: DeviceHome, identity: Identity, store: ReplicaStore) -> StatusReport {
        var report = self
        var lines: [String] = []
        var json: [String: Any] = [:]
        let roster = try? Roster.load(from: store, accountKey: identity.account.publicKey).roster
        let names = FsckCommand.holderNames(roster)
        func name(_ id: DeviceID) -> String { names[id] ?? id.hex.prefix(12).description }
        if let held = try? store.heldBodies(), !held.isEmpty {
            let total = held.reduce(0) { $0 + $1.count }
            lines.append("homebase: holds \(total) bodies for other devices: "
                         + held.map { "\(name($0.owner)) \($0.count) (\(ByteText.text(Int($0.bytes))))" }.joined(separator: ", "))
            json["held"] = held.map { ["owner": $0.owner.hex, "name": name($0.owner), "count": $0.count, "bytes": $0.bytes] as [String: Any] }
        }
        let offloaded = (try? store.offloadedNotes()) ?? []
        json["offloadedNotes"] = offloaded.count
        json["offloadedBytes"] = offloaded.reduce(0) { $0 + $1.size }
        if !offloaded.isEmpty {
            var byHolder: [DeviceID: Int] = [:]
            for n in offloaded { for h in n.holders { byHolder[h, default: 0] += 1 } }
            let nowhere = offloaded.filter(\.holders.isEmpty).count
            let holders = byHolder.sorted { $0.key < $1.key }.map { "\(name($0.key)) (\($0.value))" }
                + (nowhere > 0 ? ["no device recorded here (\(nowhere): offloaded before this device had them; 'quire fsck' asks the homebase)"] : [])
            lines.append("\(offloaded.count) notes offloaded (\(ByteText.text(offloaded.reduce(0) { $0 + $1.size })) of bodies), held by "
                         + holders.joined(separator: ", "))
            // A revoked holder is said apart: it is not away, it is gone.
            let revoked = roster.map { RevokedCopies(offloaded: offloaded, roster: $0, required: OffloadCopiesFile(home: home).load()) }
            let revokedHolders = Set(revoked?.byHolder.map(\.holder) ?? [])
            // A holder is reachable when the running sync heard from it lately.
            let sync = SyncStatus.load(from: home)
            let now = SystemClock().now().seconds
            var unreachable: [String] = []
            for holder in byHolder.keys.sorted() where !revokedHolders.contains(holder) {
                let sibling = sync?.siblings.first { $0.device == holder.hex }
                let why: String?
                if sync?.isProcessAlive != true {
                    why = "sync is not running, so offloaded bodies cannot be recalled until it runs ('quire sync' or a mount)"
                } else if let seen = sibling?.lastSeen {
                    why = now - seen > 60 ? "holder \(name(holder)) UNREACHABLE: last heard from \(Ago.text(now - seen)); its notes cannot be read here" : nil
                } else {
                    why = "holder \(name(holder)) UNREACHABLE: not heard from since sync started; its notes cannot be read here"
                }
                if let why, !unreachable.contains(why) { unreachable.append(why) }
            }
            lines += unreachable
            json["unreachableHolders"] = unreachable
            if let revoked {
                lines += revoked.lines(name: name)
                json["revokedHolders"] = revoked.byHolder.map {
                    ["device": $0.holder.hex, "name": name($0.holder), "notes": $0.notes, "belowRequiredCopies": $0.below, "noOtherHolder": $0.noneLeft] as [String: Any]
                }
                json["belowRequiredCopies"] = revoked.belowRequired.count
            }
        }
        if !lines.isEmpty { report.text += "\n" + lines.joined(separator: "\n") }
        report.json["offload"] = json
        return report
    }
}
