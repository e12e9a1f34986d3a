import Foundation
import QuireCore
import QuireStore
import QuireSync

/// `quire role [homebase|device]`: shows or changes this device's role. The
/// role lives in prefs and in a role statement of the device log, signed by
/// this device's key, so every sibling learns it through the roster.
enum RoleCommand {
    static let command = Command(
        name: "role",
        summary: "show or change this device's role (homebase or device)",
        usage: """
            usage: quire role [homebase|device] [--json]

            Without an argument, prints this device's role. With one, changes it:
              homebase   this device keeps every note body resident and holds the
                         bodies other devices offload (a device with a big disk)
              device     an ordinary device, which may offload bodies to a homebase
            The new role is a statement of the device log, signed by this device's
            own key, and reaches the siblings when they sync. A device with
            offloaded notes must recall them before it becomes a homebase; a
            homebase that holds bodies for others keeps serving them until they
            are recalled, and says so.
            """,
        flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...1, "")
        let (identity, store) = try inv.open()
        let current = try settledRole(home: inv.home, identity: identity, store: store)
        guard let wanted = args.positional.first else {
            let held = try store.heldBodies()
            let role = current
            if args.has("json") {
                Output.json(["role": role.rawValue, "heldBodies": held.reduce(0) { $0 + $1.count }])
            } else {
                Output.line("\(role.rawValue)")
            }
            return
        }
        guard let role = Prefs.Role(rawValue: wanted) else { throw UsageError("a role is 'homebase' or 'device', not '\(wanted)'") }
        var note: String? = nil
        if role == .homebase {
            let offloaded = try store.offloadedNotes()
            if !offloaded.isEmpty {
                throw CommandFailure("\(offloaded.count) notes of this device are offloaded; a homebase keeps every body resident: run 'quire recall --all' first")
            }
        } else {
            let held = try store.heldBodies().reduce(0) { $0 + $1.count }
            if held > 0 {
                note = "it still holds \(held) bodies for other devices and serves their recalls; they should recall them or offload to another homebase"
            }
        }
        let (roster, _) = try Roster.load(from: store, accountKey: identity.account.publicKey)
        guard let mine = roster[identity.deviceID], mine.trust == .trusted else {
            throw CommandFailure("this device is not a trusted member of the account (not admitted yet, or revoked); its role cannot change")
        }
        let changed = current != role
        if changed || mine.role != role.rawValue {
            // A role statement signed by this device's own key (the account
            // key is not on any device to re-sign a certificate).
            var statement = DeviceStatement(kind: .role, accountKey: identity.account.publicKey.bytes,
                                            signerKey: identity.deviceSigning.publicKey.bytes, subject: identity.deviceID, at: SystemClock().now())
            statement.role = role.rawValue
            let (key, record) = DeviceStatement.row(statement.signed(by: identity.deviceSigning), displayName: "role of \(mine.name)")
            try store.putRosterEntry(record, key: key)
            try inv.home.prefs.update { $0.role = role }
        }
        if args.has("json") {
            var o: [String: Any] = ["role": role.rawValue, "changed": changed]
            if let note { o["note"] = note }
            Output.json(o)
        } else {
            Output.line(changed ? "this device is now a \(role.rawValue); siblings learn it when they sync" : "this device is already a \(role.rawValue)")
            if let note { Output.line("note: " + note) }
        }
    }

    /// This device's role as the device log gives it (what siblings act
    /// on), with prefs brought in line: a device put back from a backup
    /// made before a role change still reads its old role there.
    static func settledRole(home: DeviceHome, identity: Identity, store: ReplicaStore) throws -> Prefs.Role {
        let saved = try home.prefs.load().role
        guard let mine = try? Roster.load(from: store, accountKey: identity.account.publicKey).roster[identity.deviceID],
              mine.trust == .trusted, let logged = Prefs.Role(rawValue: mine.role), logged != saved else { return saved }
        try home.prefs.update { $0.role = logged }
        return logged
    }
}
