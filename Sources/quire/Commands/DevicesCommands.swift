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
                   quire devices revoke NAME [--id HEX]

            Lists the roster: every device with an account-signed certificate,
            this one included, with when this device last heard from it (from the
            running or last sync's status).

            revoke NAME   writes an account-signed revocation into that device's
                          roster row. It spreads like any edit; every sibling then
                          refuses the revoked device's frames and stops syncing
                          with it. A revocation cannot be undone (the device can
                          join again with a new invite, as a new device).
              --id HEX    the device id (or a unique prefix), when names repeat
              --json      list as JSON
            """,
        valued: ["id"], flags: ["json"]
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
        for m in roster.sorted {
            let isMe = m.deviceID == identity.deviceID
            let seen = status?.siblings.first { $0.device == m.deviceID.hex }?.lastSeen
            var entry: [String: Any] = ["name": m.name, "device": m.deviceID.hex, "role": m.role, "issuedAt": m.issuedAt.seconds,
                                        "revoked": m.isRevoked, "thisDevice": isMe]
            if let seen { entry["lastSeen"] = seen }
            if let r = m.revokedAt { entry["revokedAt"] = r.seconds }
            list.append(entry)
            let state = isMe ? "this device" : m.isRevoked ? "REVOKED" : seen.map { "last seen \(Ago.text(now - $0))" } ?? "not heard from yet"
            lines.append("\(m.name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(m.deviceID.hex.prefix(12))  \(m.role.padding(toLength: 8, withPad: " ", startingAt: 0)) \(state)")
        }
        if invalid > 0 { lines.append("(\(invalid) roster rows ignored: their certificates do not verify)") }
        if args.has("json") { Output.json(["devices": list, "invalidRows": invalid]) } else { lines.forEach(Output.line) }
    }

    private static func revoke(_ args: Arguments, _ inv: Invocation) throws {
        try args.expectPositional(1...2, "device name")
        let (identity, store) = try inv.open()
        let (roster, _) = try Roster.load(from: store, accountKey: identity.account.publicKey)
        var candidates = roster.members.values.filter { !$0.isRevoked }
        if args.positional.count == 2 { candidates = candidates.filter { $0.name == args.positional[1] } }
        if let id = args.value("id")?.lowercased() { candidates = candidates.filter { $0.deviceID.hex.hasPrefix(id) } }
        guard args.positional.count == 2 || args.value("id") != nil else { throw UsageError("name the device to revoke") }
        guard !candidates.isEmpty else { throw CommandFailure("no device on the roster matches (revoked devices stay revoked); see 'quire devices'") }
        guard candidates.count == 1, let target = candidates.first else {
            throw CommandFailure("\(candidates.count) devices match; add --id with one of: \(candidates.map { $0.deviceID.hex.prefix(12) }.joined(separator: ", "))")
        }
        guard target.deviceID != identity.deviceID else {
            throw CommandFailure("this is the device you are on; revoke it from another device of the account")
        }
        guard let row = try store.row(.devices, target.deviceID), case .device(var record)? = row.content else {
            throw CommandFailure("the roster row of '\(target.name)' is missing")
        }
        record.revocation = DeviceRevocation(deviceID: target.deviceID, revokedAt: SystemClock().now()).signed(by: identity.account)
        try store.putRosterEntry(record, key: target.deviceID)
        Output.line("revoked '\(target.name)' (\(target.deviceID.hex.prefix(12))); siblings refuse its frames once they sync with this device")
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
