import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon

/// `quire repair`: the way back for a device that says it is wedged, in the
/// seed's paranoid order: a backup of this device first (and nothing else if
/// it cannot be written), then one of three truthful answers, by name.
enum RepairCommand {
    static let answers = """
          --keep-mine   keep what this device has and merge it into the fleet. Right in
                        almost every case: merges never lose a write, so nothing the
                        siblings hold is overwritten. Clears this device's sync state
                        (replay floors), so its siblings are heard afresh; at the next
                        start it checks the anchor and catches up.
          --take-fleet  take the fleet's copy. Right when this device's replica is damaged
                        but still opens, or holds what you want gone: the replica is set aside
                        (it is in the backup) and the next sync pulls everything from a
                        sibling, which must be online. Writes made here that no other device
                        received would be lost to the fleet: they are named, and nothing is
                        done unless --drop-unshared is given too. The replica set aside stays
                        readable ('quire --home <home>/before-repair-<time> ls|get'); it is
                        not a device and never syncs. A replica that does not open at all
                        is put back from a backup ('quire restore'), or the device joins the
                        account anew (the error says how).
          --drop-unshared
                        with --take-fleet: take the fleet's copy even though this device holds
                        writes no other device received (or cannot tell which it holds).
          --leave       change nothing. Right when the cause is outside quire (the relay
                        is down, the cloud folder is not mounted) and will pass.
        """

    static let command = Command(
        name: "repair",
        summary: "back this device up, then bring a wedged device back",
        usage: """
            usage: quire repair [--keep-mine | --take-fleet [--drop-unshared] | --leave] [--backup-to FILE [--replace]] [--json]

            First writes a backup of this device (to --backup-to, default
            <home>/repair-<time>.qbackup; never in the cloud folder or a quire
            mount) and stops if it cannot. A --backup-to FILE that exists is
            refused and never replaced, except a backup of this device with
            --replace (written whole beside it, then renamed over it). Without a choice,
            says what is wrong, names the writes only this device holds (which
            --take-fleet would drop) and prints these answers; with one, does it:
            \(answers)
            Refused while this device is syncing or mounted. With --json, prints
            what it found and did as one JSON object (backup, problem, choice,
            done, unshared writes; setAside for --take-fleet).
            """,
        valued: ["backup-to"], flags: ["keep-mine", "take-fleet", "drop-unshared", "leave", "json", "replace"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let choices = ["keep-mine", "take-fleet", "leave"].filter { args.has($0) }
        guard choices.count <= 1 else { throw UsageError("choose one of --keep-mine, --take-fleet, --leave") }
        if args.has("drop-unshared") && choices != ["take-fleet"] { throw UsageError("--drop-unshared goes with --take-fleet") }
        let home = inv.home
        let (identity, store) = try inv.open()
        let lock: DeviceLock
        do { lock = try DeviceLock.acquire(path: home.syncLockPath) } catch {
            throw CommandFailure("this device is syncing or mounted (\(error)); stop it first, then repair")
        }
        defer { lock.release() }
        let stamp = DateText.format(SystemClock().now().seconds, time: true).replacingOccurrences(of: " ", with: "T").replacingOccurrences(of: ":", with: "")
        if args.has("replace") && args.value("backup-to") == nil { throw UsageError("--replace goes with --backup-to FILE") }
        let backupPath = args.value("backup-to") ?? freeName(home.path + "/repair-\(stamp)", suffix: ".qbackup")
        if let place = BackupTarget.sharedPlace(of: backupPath, home: home) { throw CommandFailure("nothing repaired: \(place)") }
        let replacing = args.has("replace")
        if let occupant = BackupTarget.occupant(of: backupPath, device: identity.deviceID, replacing: replacing) {
            throw CommandFailure("nothing repaired: \(occupant)")
        }
        let aside = freeName(home.path + "/before-repair-" + stamp, suffix: "")
        // Before the backup, so a refusal changes nothing: the writes only
        // this device holds, which taking the fleet's copy drops. Without a
        // choice too: the user weighs the answers knowing what --take-fleet drops.
        var fleetCopy: FleetCopy? = nil
        if choices == ["take-fleet"] || choices.isEmpty {
            fleetCopy = try FleetCopy.stage(home, identity: identity, store: store)
            if choices == ["take-fleet"], !args.has("drop-unshared"), let refusal = fleetCopy?.refusal {
                fleetCopy?.discard()
                throw CommandFailure("nothing repaired: taking the fleet's copy would drop \(refusal). Keep them with --keep-mine "
                                     + "(merges never lose a write), or sync this device with a sibling first; to drop them from "
                                     + "this device anyway (they stay readable in \(home.path)/before-repair-<time>/), add --drop-unshared")
            }
        }
        do {
            try DeviceBackup.capture(home, store: store, identity: identity, at: SystemClock().now()).write(to: backupPath, replacing: replacing)
        } catch {
            fleetCopy?.discard()
            throw CommandFailure("nothing repaired: the backup of this device could not be written to \(backupPath) (\(error))")
        }
        let isJSON = args.has("json")
        let say: (String) -> Void = { if !isJSON { Output.line($0) } }
        say("backed up this device to \(backupPath)")
        let status = SyncStatus.load(from: home)
        let problem = status?.wedgedReason ?? status?.anchor
        var result: [String: Any] = ["backup": backupPath, "problem": problem as Any, "choice": choices.first ?? "none"]
        guard let choice = choices.first else {
            say(problem.map { "what is wrong: \($0)" } ?? "this device does not say it is wedged; repair is rarely needed")
            if let fleetCopy {
                fleetCopy.discard()
                if let refusal = fleetCopy.refusal {
                    say("this device holds " + refusal + ": --take-fleet would drop them from this device (only with --drop-unshared); --keep-mine keeps them")
                }
                result["unshared"] = fleetCopy.unshared.map(BackupCommands.json)
                result["unsharedUnreadable"] = fleetCopy.unreadable as Any
            }
            say("choose one:\n" + answers)
            result["done"] = "nothing"
            if isJSON { Output.json(result) }
            return
        }
        switch choice {
        case "keep-mine":
            try? FileManager.default.removeItem(atPath: home.syncStatePath)
            say("kept this device's content; its sync state is cleared. Start 'quire sync' or mount it: it merges into the fleet")
            result["done"] = "kept this device's content; cleared its sync state"
        case "take-fleet":
            guard let fleetCopy else { return }
            let prefs = try home.prefs.load()
            // Everything committed goes into the file that moves, so the
            // folder set aside reads whole without this process's WAL.
            try? store.compact()
            let fm = FileManager.default
            do {
                try fm.createDirectory(atPath: aside, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                for name in ["replica.sqlite", "replica.sqlite-wal", "replica.sqlite-shm", "sync-state.json"]
                where fm.fileExists(atPath: home.path + "/" + name) {
                    try fm.moveItem(atPath: home.path + "/" + name, toPath: aside + "/" + name)
                }
                try DeviceHome(path: aside).markSetAside(device: identity.deviceID, reason: "'quire repair --take-fleet' on \(stamp)",
                                                         prefsOf: home)
            } catch {
                fleetCopy.discard()
                throw CommandFailure("nothing repaired: cannot set the replica aside in \(aside): \(error)")
            }
            do { try fleetCopy.install() } catch {
                throw CommandFailure("the replica is set aside in \(aside), but the fleet's copy could not be put in its place (\(error)); "
                                     + "move \(aside)/replica.sqlite back to \(home.databasePath) and run the repair again")
            }
            // Behind every sibling now: it catches up from the anchor or a sibling's snapshot.
            try home.prefs.update { $0.generation = 0 }
            if !fleetCopy.unshared.isEmpty {
                say("set aside " + BackupCommands.describe(fleetCopy.unshared, keptIn: aside, lacking: "which the fleet's copy lacks"))
                say("warning: \(fleetCopy.unshared.count) write\(fleetCopy.unshared.count == 1 ? "" : "s") no other device received "
                    + "\(fleetCopy.unshared.count == 1 ? "is" : "are") in \(aside)/ only, not on this device or any other")
            } else if let unreadable = fleetCopy.unreadable {
                say("warning: could not tell which writes only this device held (\(unreadable)); "
                    + "whatever it held is in \(aside)/ (read it with 'quire --home \(aside) ls|get')")
            }
            say("set this device's replica aside in \(aside) (generation \(prefs.generation) there; read it with "
                + "'quire --home \(aside) ls|get', it never syncs); "
                + "start 'quire sync' or mount it with a sibling online: it takes the fleet's copy")
            result["done"] = "set this device's replica aside; the next sync takes the fleet's copy"
            result["setAside"] = aside
            result["setAsideGeneration"] = prefs.generation
            result["unshared"] = fleetCopy.unshared.map(BackupCommands.json)
            result["unsharedUnreadable"] = fleetCopy.unreadable as Any
        default:
            say("changed nothing; the backup is at \(backupPath)")
            result["done"] = "nothing"
        }
        if isJSON { Output.json(result) }
    }

    /// `base + suffix`, or with "-2", "-3"... when a repair in the same
    /// second took it: a default name never refuses or replaces.
    static func freeName(_ base: String, suffix: String) -> String {
        var name = base + suffix, attempt = 1
        while FileManager.default.fileExists(atPath: name) {
            attempt += 1
            name = base + "-\(attempt)" + suffix
        }
        return name
    }
}

/// What `quire repair --take-fleet` puts in place of the replica: a new one
/// holding only the roster (so the device still knows its siblings), made
/// beside the replica before anything moves. Comparing the replica with it
/// names the writes that taking it drops: those no sibling received, which
/// `quire restore` names the same way.
struct FleetCopy {
    let path: String
    let home: DeviceHome
    let unshared: [UnsharedWrite]
    /// Why the replica could not be compared (a damaged one may not read).
    let unreadable: String?

    static func stage(_ home: DeviceHome, identity: Identity, store: ReplicaStore) throws -> FleetCopy {
        let path = home.path + "/replica-fleet-copy.sqlite"
        let roster = try store.rows(.devices, from: [], to: nil)
        remove(path)   // left by a repair that stopped half way
        do { try makeReplica(at: path, deviceID: identity.deviceID, roster: roster) } catch {
            remove(path)
            throw CommandFailure("nothing repaired: cannot make a new replica at \(path): \(error)")
        }
        do {
            let unshared = try ReplicaStore.unsharedWrites(in: home.databasePath, missingFrom: path)
            return FleetCopy(path: path, home: home, unshared: unshared, unreadable: nil)
        } catch {
            return FleetCopy(path: path, home: home, unshared: [], unreadable: "\(error)")
        }
    }

    /// In its own scope, so the store is closed (its WAL checkpointed and
    /// gone) before the file is renamed into place.
    private static func makeReplica(at path: String, deviceID: DeviceID, roster: [Row]) throws {
        let fresh = try ReplicaStore(path: path, deviceID: deviceID, create: true)
        try fresh.apply(roster)
        try fresh.compact()
    }

    /// What a refusal names, or nil when nothing would be lost.
    var refusal: String? {
        if let unreadable { return "whatever writes only this device holds: which they are cannot be told (\(unreadable))" }
        return unshared.isEmpty ? nil : BackupCommands.describe(unshared, keptIn: nil, lacking: "which the fleet's copy lacks")
    }

    /// Renames the new replica to the device's (keeping the file identity
    /// recorded when it was made, so no incarnation is minted for it).
    func install() throws {
        try FileManager.default.moveItem(atPath: path, toPath: home.databasePath)
        FleetCopy.remove(path, keepingDatabase: true)
    }

    func discard() { FleetCopy.remove(path) }

    private static func remove(_ path: String, keepingDatabase: Bool = false) {
        for suffix in keepingDatabase ? ["-wal", "-shm"] : ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}
