import Foundation
import QuireCore
import QuireStore
import QuireSync

enum DevicesCommands {
    static let devices = Command(
        name: "devices",
        summary: "list the account's devices, or revoke one",
        usage: """
            usage: quire devices [--json]
                   quire devices revoke NAME [--id HEX] [--force]

            Lists the roster as the device log makes it: every device, this one
            included, who admitted it and when, who revoked it, and when this
            device last heard from it (from the running or last sync's status).

            revoke NAME   writes a revocation signed by this device's key: a new,
                          immutable statement of the device log. It spreads like
                          any edit; every sibling that learns it refuses the
                          revoked device's frames, and everything the revoked
                          device signs from now on (devices it admits, invites,
                          revocations) counts for nothing. What it signed before,
                          as this device saw it, stays (devices it admitted stay
                          trusted). A revocation cannot be undone (the device can
                          join again with a new invite, as a new device).
                          It also rotates the account's backup key (anchors in
                          the cloud folder): a fresh key sealed to every device
                          left on the roster; anchors sealed with an older key
                          are refused for recovery from then on. A device
                          revoked before rotation existed can be revoked again,
                          to rotate the key for it.
                          Refused while the device holds the only copy this
                          device knows of offloaded note bodies (a homebase):
                          once revoked it is never heard again, so run
                          'quire recall --all' first.
              --id HEX    the device id (or a unique prefix), when names repeat
              --force     revoke it even so: those notes keep their titles and
                          tags here, and their text is lost
              --json      list as JSON
            """,
        valued: ["id"], flags: ["json", "force"]
    ) { args, inv in
        if args.positional.first == "revoke" {
            try revoke(args, inv)
            return
        }
        try args.expectPositional(0...0, "")
        let (identity, store) = try inv.open()
        let (roster, invalid) = try Roster.load(from: store, accountKey: identity.account.publicKey)
        let status = SyncStatus.load(from: inv.home)
        let now = SystemClock().now().seconds
        var list: [[String: Any]] = []
        var lines: [String] = []
        func who(_ id: DeviceID?) -> String { id.map { roster[$0].map { "'\($0.name)'" } ?? $0.hex.prefix(12).description } ?? "the account key" }
        if roster[identity.deviceID] == nil {
            lines.append("this device (\(identity.deviceID.hex.prefix(12))) is waiting to be admitted: a device of the account admits it when they first sync")
        }
        for m in roster.sorted {
            let isMe = m.deviceID == identity.deviceID
            let seen = status?.siblings.first { $0.device == m.deviceID.hex }?.lastSeen
            var entry: [String: Any] = ["name": m.name, "device": m.deviceID.hex, "role": m.role, "issuedAt": m.issuedAt.seconds,
                                        "revoked": m.isRevoked, "trust": m.trust.rawValue, "thisDevice": isMe,
                                        "addedBy": m.addedBy?.hex ?? "account"]
            if let seen { entry["lastSeen"] = seen }
            if let r = m.revokedAt { entry["revokedAt"] = r.seconds }
            if m.trust == .revoked { entry["revokedBy"] = m.revokedBy?.hex ?? "account" }
            list.append(entry)
            let state: String
            switch m.trust {
            case .trusted: state = isMe ? "this device" : seen.map { "last seen \(Ago.text(now - $0))" } ?? "not heard from yet"
            case .revoked: state = "REVOKED by \(who(m.revokedBy)) on \(DateText.format(m.revokedAt?.seconds ?? 0, time: true))"
            case .untrusted:
                // Its admission counts for nothing: made by a device revoked
                // by then, or under an invite another device was admitted with too.
                state = m.addedBy.flatMap { roster[$0] }?.isRevoked == true
                    ? "NOT TRUSTED: admitted by \(who(m.addedBy)) after (or while) it was revoked"
                    : "NOT TRUSTED: admitted under an invite that admitted another device too (an invite admits one device; "
                        + "neither admission counts): join again with a new invite"
            }
            lines.append("\(m.name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(m.deviceID.hex.prefix(12))  \(m.role.padding(toLength: 8, withPad: " ", startingAt: 0)) "
                         + "added by \(who(m.addedBy)) on \(DateText.format(m.issuedAt.seconds, time: true)); \(state)")
        }
        if invalid > 0 { lines.append("(\(invalid) roster rows ignored: their statements do not verify)") }
        // The backup key: one rotation per revocation; what this device lacks it asks a sibling for.
        let keys = try AnchorKeys.of(identity: identity, store: store, ring: try BackupKeyRing.load(keysPath: inv.home.keysPath))
        let missing = keys.schedule.missing(in: keys.ring)
        let unrotated = roster.members.values.filter { m in m.trust == .revoked && !keys.schedule.rotations.values.contains { $0.revoked == m.deviceID } }
        var backup: [String: Any] = ["rotations": keys.required.count, "missing": missing.map(\.hex),
                                     "revokedWithoutRotation": unrotated.map(\.name).sorted()]
        backup["text"] = keys.required.isEmpty ? "backup key: the original one (no revocation has rotated it)"
            : "backup key: rotated by \(keys.required.count) revocation\(keys.required.count == 1 ? "" : "s"); "
                + (missing.isEmpty ? "this device holds every key" : keys.missingWords)
        lines.append(backup["text"] as! String)
        if !unrotated.isEmpty {
            lines.append("revoked before rotation existed, and still holding the backup key: " + unrotated.map { "'\($0.name)'" }.sorted().joined(separator: ", ")
                         + " ('quire devices revoke NAME' again rotates it)")
        }
        if args.has("json") { Output.json(["devices": list, "invalidRows": invalid, "backupKey": backup]) } else { lines.forEach(Output.line) }
    }

    private static func revoke(_ args: Arguments, _ inv: Invocation) throws {
        try args.expectPositional(1...2, "device name")
        let (identity, store) = try inv.open()
        let rows = try store.rows(.devices, from: [], to: nil)
        let log = DeviceLog(rows: rows, accountKey: identity.account.publicKey)
        let roster = log.roster()
        guard roster[identity.deviceID]?.trust == .trusted else {
            throw CommandFailure((roster[identity.deviceID] == nil ? Revoking.Refusal.notAdmitted : .revoked).description)
        }
        // A device revoked before rotation existed still holds the backup
        // key: revoking it again rotates it (nothing else changes).
        var ring = try BackupKeyRing.load(keysPath: inv.home.keysPath)
        let rotated = Set(try AnchorKeys.of(identity: identity, store: store, ring: ring).schedule.rotations.values.map(\.revoked))
        var candidates = roster.members.values.filter { !$0.isRevoked || ($0.trust == .revoked && !rotated.contains($0.deviceID)) }
        if args.positional.count == 2 { candidates = candidates.filter { $0.name == args.positional[1] } }
        if let id = args.value("id")?.lowercased() { candidates = candidates.filter { $0.deviceID.hex.hasPrefix(id) } }
        guard args.positional.count == 2 || args.value("id") != nil else { throw UsageError("name the device to revoke") }
        guard !candidates.isEmpty else { throw CommandFailure(Revoking.Refusal.unknownDevice.description) }
        guard candidates.count == 1, let target = candidates.first else {
            throw CommandFailure("\(candidates.count) devices match; add --id with one of: \(candidates.map { $0.deviceID.hex.prefix(12) }.joined(separator: ", "))")
        }
        // Bodies only the device to revoke holds: once revoked, nothing it
        // sends is taken, so they could never come back.
        let stranded = try store.offloadedNotes().filter { !$0.holders.isEmpty && $0.holders.allSatisfy { $0 == target.deviceID } }
        if !stranded.isEmpty && !args.has("force") {
            throw CommandFailure("'\(target.name)' holds the only copy this device knows of \(stranded.count) offloaded note "
                                 + "bod\(stranded.count == 1 ? "y" : "ies") (\(RowLimits.describe(stranded.reduce(0) { $0 + $1.size }))): "
                                 + "bring them back first with 'quire recall --all' while it is trusted and reachable, then revoke it "
                                 + "(or pass --force: those notes keep their titles and tags, and lose their text)")
        }
        // The rotation's key is kept (keys/backup-keys) before the statement
        // is written; the anchor is then sealed again under the new key.
        let before = try AnchorKeys.of(identity: identity, store: store, ring: ring)
        let after: Roster
        do {
            after = try Revoking.revoke(target.deviceID, by: identity, store: store, at: SystemClock().now()) { id, key in
                ring.add(id, key)
                try ring.save(keysPath: inv.home.keysPath)
            }
        } catch let refusal as Revoking.Refusal {
            throw CommandFailure(refusal.description)
        }
        let prefs = try inv.home.prefs.load()
        var cloudWords = "no cloud folder is set: the next barrier writes the anchor under the new key"
        if let cloudPath = prefs.cloud {
            let cloud = CloudFolder(path: cloudPath, accountID: identity.userIDHash)
            do {
                let keys = try AnchorKeys.of(identity: identity, store: store, ring: ring)
                cloudWords = try AnchorRekey.afterRevocation(cloud: cloud, before: before, after: keys, localGeneration: prefs.generation,
                                                             device: identity.deviceID, deviceLog: try store.rows(.devices, from: [], to: nil))
            } catch {
                cloudWords = "the cloud folder could not be written (\(error)); until the next barrier, no anchor there is used for recovery, and the revocation reaches the folder's copy of the device log when sync next runs here"
            }
        }
        let keptDevices = after.members.values.filter { $0.addedBy == target.deviceID && !$0.isRevoked }.map { "'\($0.name)'" }.sorted()
        let others = after.siblings(of: identity.deviceID).map { "'\($0.name)'" }
        Output.line("revoked '\(target.name)' (\(target.deviceID.hex.prefix(12))): a revocation signed by this device is in the device log; "
                    + "from now on nothing it signs counts, and this device refuses its frames")
        if !keptDevices.isEmpty { Output.line("devices it admitted before stay trusted: " + keptDevices.joined(separator: ", ")) }
        if !stranded.isEmpty {
            Output.line("\(stranded.count) offloaded note bod\(stranded.count == 1 ? "y" : "ies") it alone held cannot be recalled any more (--force)")
        }
        Output.line(others.isEmpty ? "no other device needs to learn it"
                    : "still to do: the revocation reaches " + others.joined(separator: ", ")
                        + " when each next syncs with this device (run 'quire sync' here, or keep a mount running, until they have)")
        Output.line("the backup key is rotated: anchors written from now on are sealed with a key it does not hold, and anchors under an older key "
                    + "are refused for recovery; " + cloudWords)
        Output.line("it still holds the notes it had, and can read the anchors written before now and delete files in the cloud folder: "
                    + "take its access to the cloud folder away at the file-sync service too")
    }
}

enum Ago {
    static func text(_ seconds: Int64) -> String {
        switch seconds {
        case ..<0: return "just now"
        case 0..<60: return "\(seconds) s ago"
        case 60..<3600: return "\(seconds / 60) min ago"
        case 3600..<86_400: return "\(seconds / 3600) h ago"
        default: return "\(seconds / 86_400) days ago"
        }
    }
}
