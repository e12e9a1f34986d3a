import Foundation
import QuireStore

enum InitCommand {
    static let command = Command(
        name: "init",
        summary: "create a new device (and a new account)",
        usage: """
            usage: quire [--home DIR] init [--name NAME] [--homebase] [--json]

            Creates a device directory with a new replica, new account and device
            keys (mode 0600) and the device's prefs.

              --name NAME   what this device is called (default: the host name)
              --homebase    this device keeps every note body resident and accepts
                            bodies other devices offload
              --json        print the result as JSON
            """,
        valued: ["name"], flags: ["homebase", "json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let name = args.value("name") ?? ProcessInfo.processInfo.hostName
        guard !name.isEmpty, name.utf8.count <= 64 else { throw UsageError("--name must be 1 to 64 bytes") }
        let (identity, _) = try inv.home.create(name: name, role: args.has("homebase") ? .homebase : .device)
        if args.has("json") {
            Output.json(["home": inv.home.path, "device": identity.deviceID.hex, "name": name,
                         "account": Hex.encode(identity.userIDHash)])
        } else {
            Output.line("created device '\(name)' (\(identity.deviceID.hex.prefix(12))) in \(inv.home.path)")
        }
    }
}

import QuireCore
