import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import QuireSync
import QuireDaemon

enum InitCommand {
    static let command = Command(
        name: "init",
        summary: "create a new device (new account, or --join an existing one)",
        usage: """
            usage: quire [--home DIR] init [--name NAME] [--homebase] [--relay SPEC] [--cloud DIR] [--json]
                   quire [--home DIR] init --join INVITE [--name NAME] [--passphrase-file F] [--relay SPEC] [--cloud DIR]
                   quire [--home DIR] init --from-cloud DIR [--name NAME] [--relay SPEC]

            Creates a device directory with a new replica, device keys (mode 0600)
            and the device's prefs. Without --join it also creates a new account.

              --name NAME   what this device is called (default: the host name)
              --homebase    this device keeps every note body resident and accepts
                            bodies other devices offload
              --relay SPEC  how this device reaches its siblings: local (devices on
                            this machine, the default), local:/dir, or
                            redis://host:port (devices on several machines); with
                            --join, overrides the inviter's setting
              --cloud DIR   the cloud folder (a folder a file-sync service keeps the
                            same on every device) where the fleet's anchor lives;
                            never inside the device directory. Without it, this
                            device cannot lead a tombstone collection nor notice
                            it was put back from a backup by itself
                            With a new account, a recovery code is printed once
                            and the account's keys are sealed under it in the
                            cloud folder (Argon2id, --kdf moderate|interactive)
              --from-cloud DIR
                            rebuild an account whose every device is lost: the
                            recovery code (QUIRE_RECOVERY_CODE, or the terminal)
                            opens the keys in DIR, and the newest anchor there
                            becomes this new device's content. Offloaded note
                            bodies come back from the homebase if it survives
              --join INVITE join the account of an invite made by 'quire invite'
                            on a device of it: INVITE is the invite text or a file
                            holding it. The new device makes its own keys and signs
                            an enrolment with the invite's one-time pairing key; a
                            device of the account admits it when it hears it (at
                            once if one is syncing, else at its next sync) and seals
                            it the account's backup key; init waits for that up to
                            two seconds and says whether it happened. The
                            passphrase comes from --passphrase-file F,
                            QUIRE_PASSPHRASE, or the terminal.
              --json        print the result as JSON
            """,
        valued: ["name", "join", "passphrase-file", "relay", "cloud", "from-cloud", "kdf"], flags: ["homebase", "json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let name = args.value("name") ?? ProcessInfo.processInfo.hostName
        guard !name.isEmpty, name.utf8.count <= 64 else { throw UsageError("--name must be 1 to 64 bytes") }
        let role: Prefs.Role = args.has("homebase") ? .homebase : .device
        let relay = try args.relaySpec()
        let cloud = try args.value("cloud").map { try ConfigCommand.cloudFolder($0, home: inv.home) }
        if let source = args.value("from-cloud") {
            try CloudRecovery.rebuild(from: try ConfigCommand.cloudFolder(source, home: inv.home), name: name, role: role,
                                      relay: relay, json: args.has("json"), home: inv.home)
            return
        }
        if let join = args.value("join") {
            try joinAccount(invite: join, name: name, role: role, relay: relay, args: args, inv: inv)
            if let cloud { try inv.home.prefs.update { $0.cloud = cloud } }
            return
        }
        let (identity, _) = try inv.home.create(name: name, role: role)
        if let relay { try inv.home.prefs.update { $0.relay = relay } }
        var code: String? = nil
        if let cloud {
            try inv.home.prefs.update { $0.cloud = cloud }
            let strength: PasswordHash.Strength
            switch args.value("kdf") ?? "moderate" {
            case "moderate": strength = .moderate
            case "interactive": strength = .interactive
            case let other: throw UsageError("--kdf is moderate or interactive, not '\(other)'")
            }
            let made = RecoveryFile.makeCode()
            do { try RecoveryFile.write(identity: identity, cloud: cloud, code: made, strength: strength) } catch {
                throw CommandFailure("the device was created, but the recovery file could not be written to \(cloud): \(error)")
            }
            code = made
        }
        if args.has("json") {
            Output.json(["home": inv.home.path, "device": identity.deviceID.hex, "name": name,
                         "account": Hex.encode(identity.userIDHash), "recoveryCode": code as Any])
        } else {
            Output.line("created device '\(name)' (\(identity.deviceID.hex.prefix(12))) in \(inv.home.path)")
            if let code {
                Output.line("recovery code: \(code)")
                Output.line("  shown this once and stored nowhere: with it and the cloud folder, 'quire init --from-cloud' rebuilds this account if every device is lost")
            }
        }
    }

    /// How long `init --join` waits for a listening sibling to admit it.
    static let admissionWait: TimeInterval = 2

    private static func joinAccount(invite source: String, name: String, role: Prefs.Role, relay: String?, args: Arguments,
                                    inv: Invocation) throws {
        let text: String
        if source.hasPrefix(Invite.prefix) {
            text = source
        } else {
            text = String(decoding: try Output.readFile(source, what: "invite file"), as: UTF8.self)
        }
        if inv.home.exists { throw CommandFailure("\(inv.home.path) already holds a quire device; choose another --home") }
        // What the directory held before (nil: none): a refused join takes
        // away only what it made.
        let heldBefore = (try? FileManager.default.contentsOfDirectory(atPath: inv.home.path)).map(Set.init)
        let passphrase = try Passphrase.read(file: args.value("passphrase-file"), confirm: false)
        let identity: Identity
        let store: ReplicaStore
        do {
            let invite = try Invite.open(text, passphrase: passphrase, now: SystemClock().now())
            (identity, store) = try invite.join(home: inv.home, name: name, role: role, clock: SystemClock())
        } catch let e as PairingError {
            throw CommandFailure(e.description)
        }
        if let relay { try inv.home.prefs.update { $0.relay = relay } }
        // Best effort: a sibling listening now admits this device at once
        // (it seals the backup key to it, and the enrolment goes). Wait for
        // that, not for a fixed time: `admissionWait` at most. Only the
        // roster is pulled: a stream of notes cut short here would be sent
        // again to the daemon that runs next.
        let later = "a device of the account admits it when they next sync"
        var announced = "no sibling is listening now; " + later
        var heard: [String] = []
        var refusal: String?
        do {
            var configuration = SyncConfiguration()
            configuration.pulledNamespaces = [.devices]
            let sync = try SyncService.start(home: inv.home, store: store, identity: identity, configuration: configuration)
            let deadline = Date().addingTimeInterval(admissionWait)
            while FileManager.default.fileExists(atPath: inv.home.enrolmentPath), sync.engine.refusedAdmission == nil,
                  Date() < deadline { usleep(2_000) }
            heard = sync.engine.heardSiblings().map(\.name).sorted()
            refusal = sync.engine.refusedAdmission
            sync.stop()
        } catch {
            announced = "could not sync now (\(error)); " + later
        }
        let admitted = !FileManager.default.fileExists(atPath: inv.home.enrolmentPath)
        if !admitted, let refusal {
            // Refused for good (an invite used before, or expired): what this
            // command made holds nothing worth keeping, and a join there
            // again with a new invite needs it gone.
            if let heldBefore {
                for entry in (try? FileManager.default.contentsOfDirectory(atPath: inv.home.path)) ?? [] where !heldBefore.contains(entry) {
                    try? FileManager.default.removeItem(atPath: inv.home.path + "/" + entry)
                }
            } else {
                try? FileManager.default.removeItem(atPath: inv.home.path)
            }
            throw CommandFailure("not joined: a device of the account refused this device: \(refusal); "
                                 + "nothing was kept in \(inv.home.path): join again with a new invite")
        }
        let names = heard.map { "'\($0)'" }.joined(separator: ", ")
        if admitted {
            announced = "admitted by a sibling that is listening" + (heard.isEmpty ? "" : " (heard from \(names))")
        } else if !heard.isEmpty {
            announced = "heard from \(names), not admitted yet; " + later
        }
        let prefs = try inv.home.prefs.load()
        if args.has("json") {
            Output.json(["home": inv.home.path, "device": identity.deviceID.hex, "name": name,
                         "account": Hex.encode(identity.userIDHash), "relay": prefs.relay, "admitted": admitted, "heardFrom": heard])
        } else {
            Output.line("joined the account as '\(name)' (\(identity.deviceID.hex.prefix(12))) in \(inv.home.path); \(announced)")
        }
    }
}
