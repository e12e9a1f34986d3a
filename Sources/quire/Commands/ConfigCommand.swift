import Foundation
import QuireCore
import QuireRelay
import QuireStore

/// `quire config`: this device's own settings (prefs), which ride its
/// backup and are never synced.
enum ConfigCommand {
    static let command = Command(
        name: "config",
        summary: "show or change this device's settings (cloud folder, cloud anchor, trash)",
        usage: """
            usage: quire config [--json]
                   quire config cloud DIR|none
                   quire config cloud-anchor on|off
                   quire config trash-days N
                   quire config trash-size MIB

            Without arguments, prints this device's settings.
              cloud DIR        the cloud folder holding the fleet's anchor (a folder a
                               file-sync service keeps the same on every device; never
                               inside the device directory); 'none' forgets it
              cloud-anchor on|off
                               off: this device never acks a tombstone barrier, which
                               stops tombstone collection for the whole account (it
                               also gives up the anchor's protection of this device)
              trash-days N     keep deleted files and earlier versions N days (default
                               30; 0 keeps none); this device only, never synced
              trash-size MIB   keep at most MIB mebibytes of them, the oldest dropped
                               first (default 512; 0 keeps none)
            Changes take effect when sync next starts (restart 'quire sync' or the mount);
            the trash limits for the next command or mount.
            """,
        flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...2, "")
        let home = inv.home
        // An interrupted restore says how to finish it, not "no device".
        do { try home.refuseInterruptedRestore() } catch { throw CommandFailure("\(error)") }
        guard home.exists else { throw CommandFailure("no quire device at \(home.path); run 'quire init' first") }
        switch args.positional.first {
        case nil:
            let p = try home.prefs.load()
            // A Redis URL's password stays in prefs (mode 0600), never on a screen.
            let relay = (try? RelaySpec(parsing: p.relay))?.description ?? p.relay
            if args.has("json") {
                Output.json(["cloud": p.cloud as Any, "cloudAnchor": p.backupEnabled, "relay": relay, "role": p.role.rawValue,
                             "generation": p.generation, "trashDays": KeptLimits(prefs: p).days, "trashBytes": KeptLimits(prefs: p).bytes])
            } else {
                Output.line("cloud         \(p.cloud ?? "(none)")")
                Output.line("cloud-anchor  \(p.backupEnabled ? "on" : "off")")
                Output.line("relay         \(relay)")
                Output.line("generation    \(p.generation)")
                Output.line("trash-days    \(KeptLimits(prefs: p).days)")
                Output.line("trash-size    \(KeptLimits(prefs: p).bytes >> 20) MiB")
            }
        case "cloud":
            guard args.positional.count == 2 else { throw UsageError("usage: quire config cloud DIR|none") }
            let value = args.positional[1] == "none" ? nil : try cloudFolder(args.positional[1], home: home)
            try home.prefs.update { $0.cloud = value }
            Output.line(value.map { "cloud folder: \($0)" } ?? "no cloud folder: this device can neither lead a barrier nor check the anchor")
        case "cloud-anchor":
            guard args.positional.count == 2, ["on", "off"].contains(args.positional[1]) else {
                throw UsageError("usage: quire config cloud-anchor on|off")
            }
            let on = args.positional[1] == "on"
            try home.prefs.update { $0.backupEnabled = on }
            Output.line(on ? "cloud anchor on: this device takes part in tombstone barriers"
                           : "cloud anchor off: this device never acks a barrier, so no device of this account collects tombstones until it is on again")
        case "trash-days", "trash-size":
            try setTrashLimit(args, home: home)
        case let other?:
            throw UsageError("quire config knows 'cloud', 'cloud-anchor', 'trash-days' and 'trash-size', not '\(other)'")
        }
    }

    /// `trash-days N` or `trash-size MIB`: a whole number, 0 or more.
    static func setTrashLimit(_ args: Arguments, home: DeviceHome) throws {
        let what = args.positional[0]
        guard args.positional.count == 2, let value = Int(args.positional[1]), value >= 0, value <= 1 << 30 else {
            throw UsageError("usage: quire config \(what) \(what == "trash-days" ? "N" : "MIB") (a whole number, 0 or more)")
        }
        try home.prefs.update { what == "trash-days" ? ($0.keptDays = value) : ($0.keptMebibytes = value) }
        if value == 0 {
            Output.line("\(what) 0: deleted files and earlier versions are no longer kept on this device, and those kept are dropped at the next write")
        } else {
            Output.line(what == "trash-days" ? "deleted files and earlier versions are kept \(value) days on this device"
                                             : "at most \(value) MiB of deleted files and earlier versions are kept on this device")
        }
    }

    /// An existing folder outside the device directory, as an absolute path.
    static func cloudFolder(_ path: String, home: DeviceHome) throws -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let resolved = URL(fileURLWithPath: absolute).standardizedFileURL.path
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDir), isDir.boolValue else {
            throw CommandFailure("the cloud folder \(resolved) does not exist or is not a folder")
        }
        let homePath = URL(fileURLWithPath: home.path).standardizedFileURL.path
        if resolved == homePath || resolved.hasPrefix(homePath + "/") {
            throw CommandFailure("the cloud folder must not be inside the device directory (a restore would roll it back with the device)")
        }
        return resolved
    }
}
