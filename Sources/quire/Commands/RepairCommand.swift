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
                        sibling, which must be online. A replica that does not open at all
                        is put back from a backup ('quire restore'), or the device joins the
                        account anew (the error says how).
          --leave       change nothing. Right when the cause is outside quire (the relay
                        is down, the cloud folder is not mounted) and will pass.
        """

    static let command = Command(
        name: "repair",
        summary: "back this device up, then bring a wedged device back",
        usage: """
            usage: quire repair [--keep-mine | --take-fleet | --leave] [--backup-to FILE] [--json]

            First writes a backup of this device (to --backup-to, default
            <home>/repair-<time>.qbackup) and stops if it cannot. Without a choice,
            says what is wrong and prints these answers; with one, does it:
            \(answers)
            Refused while this device is syncing or mounted.
            """,
        valued: ["backup-to"], flags: ["keep-mine", "take-fleet", "leave", "json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let choices = ["keep-mine", "take-fleet", "leave"].filter { args.has($0) }
        guard choices.count <= 1 else { throw UsageError("choose one of --keep-mine, --take-fleet, --leave") }
        let home = inv.home
        let (identity, store) = try inv.open()
        let lock: DeviceLock
        do { lock = try DeviceLock.acquire(path: home.syncLockPath) } catch {
            throw CommandFailure("this device is syncing or mounted (\(error)); stop it first, then repair")
        }
        defer { lock.release() }
        let stamp = DateText.format(SystemClock().now().seconds, time: true).replacingOccurrences(of: " ", with: "T").replacingOccurrences(of: ":", with: "")
        let backupPath = args.value("backup-to") ?? home.path + "/repair-\(stamp).qbackup"
        do {
            try DeviceBackup.capture(home, store: store, identity: identity, at: SystemClock().now()).write(to: backupPath)
        } catch {
            throw CommandFailure("nothing repaired: the backup of this device could not be written to \(backupPath) (\(error))")
        }
        Output.line("backed up this device to \(backupPath)")
        let status = SyncStatus.load(from: home)
        let problem = status?.wedgedReason ?? status?.anchor
        guard let choice = choices.first else {
            Output.line(problem.map { "what is wrong: \($0)" } ?? "this device does not say it is wedged; repair is rarely needed")
            Output.line("choose one:\n" + answers)
            return
        }
        switch choice {
        case "keep-mine":
            try? FileManager.default.removeItem(atPath: home.syncStatePath)
            Output.line("kept this device's content; its sync state is cleared. Start 'quire sync' or mount it: it merges into the fleet")
        case "take-fleet":
            let aside = home.path + "/before-repair-" + stamp
            let roster = try store.rows(.devices, from: [], to: nil)
            let prefs = try home.prefs.load()
            do {
                try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                for name in ["replica.sqlite", "replica.sqlite-wal", "replica.sqlite-shm", "sync-state.json"]
                where FileManager.default.fileExists(atPath: home.path + "/" + name) {
                    try FileManager.default.moveItem(atPath: home.path + "/" + name, toPath: aside + "/" + name)
                }
            } catch { throw CommandFailure("nothing repaired: cannot set the replica aside in \(aside): \(error.localizedDescription)") }
            let fresh = try ReplicaStore(path: home.databasePath, deviceID: identity.deviceID, create: true)
            try fresh.apply(roster)
            // Behind every sibling now: it catches up from the anchor or a sibling's snapshot.
            try home.prefs.update { $0.generation = 0 }
            Output.line("set this device's replica aside in \(aside) (generation \(prefs.generation) there); "
                        + "start 'quire sync' or mount it with a sibling online: it takes the fleet's copy")
        default:
            Output.line("changed nothing; the backup is at \(backupPath)")
        }
    }
}
