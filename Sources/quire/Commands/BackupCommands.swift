import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon

/// `quire backup` and `quire restore`: a device directory captured while
/// the device runs, and put back. A restore mints a new incarnation before
/// anything else, so nothing the restored device writes can be mistaken
/// for what it wrote before the backup was taken.
enum BackupCommands {
    static let backup = Command(
        name: "backup",
        summary: "write a backup of this device directory to a file",
        usage: """
            usage: quire backup --to FILE [--json]

            Captures this device directory while the device runs (a mount or
            'quire sync' need not stop): a consistent copy of the replica
            (SQLite's online backup), the prefs and the keys, in one file written
            with mode 0600. It is not encrypted: it holds every note in clear,
            this device's private keys and the account's backup key. Keep it
            where only you can read it; a FILE in this device's cloud folder
            (which a file-sync service uploads) or in a quire mount (which syncs
            it to every device) is refused, symlinks and relative paths
            resolved. The cloud folder is never in it, and neither
            are logs, sync state or the scratch area. Put it back with
            'quire restore --from FILE'.
            """,
        valued: ["to"], flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        guard let target = args.value("to") else { throw UsageError("quire backup needs --to FILE") }
        let (identity, store) = try inv.open()
        if let place = BackupTarget.sharedPlace(of: target, home: inv.home) { throw CommandFailure("backup not written: \(place)") }
        let taken = SystemClock().now()
        let archive: DeviceBackup
        do {
            archive = try DeviceBackup.capture(inv.home, store: store, identity: identity, at: taken)
            try archive.write(to: target)
        } catch { throw CommandFailure("backup not written: \(error)") }
        let bytes = archive.files.reduce(0) { $0 + $1.bytes.count }
        if args.has("json") {
            Output.json(["file": target, "device": identity.deviceID.hex, "takenAt": taken.seconds, "bytes": bytes])
        } else {
            Output.line("backed up device '\(archive.deviceName)' (\(identity.deviceID.hex.prefix(12))) to \(target): \(archive.files.count) files, \(bytes) bytes")
        }
    }

    static let restore = Command(
        name: "restore",
        summary: "put a device directory back from a backup file",
        usage: """
            usage: quire restore --from FILE [--dry-run] [--json]

            Puts the device directory (--home) back from a file written by
            'quire backup', and says what it does first. Refused while this
            device is mounted or syncing. The replica, prefs and keys found in the
            device directory are not deleted: they are moved to
            <home>/before-restore-<time>/. Bodies this device holds for other
            devices (a homebase) are kept: the backup may predate them, and the
            devices that offloaded them have no other copy. The restored device mints a new
            incarnation before anything else, so its new writes can never be taken
            for ones it made before the backup; when it next syncs, whatever the
            other devices learned since the backup comes back to it. Writes made
            here that the backup predates and no other device received cannot
            come back that way: they are named (--dry-run names them too), and
            stay readable in the moved-aside folder ('quire --home FOLDER get').
              --dry-run   only say what would be done
            """,
        valued: ["from"], flags: ["dry-run", "json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        guard let source = args.value("from") else { throw UsageError("quire restore needs --from FILE") }
        let data = try Output.readFile(source, what: "backup file")
        let archive: DeviceBackup
        do { archive = try DeviceBackup(decoding: data, source: source) } catch { throw CommandFailure("\(error)") }
        let home = inv.home
        if home.exists, let (identity, _) = try? home.open(), identity.deviceID != archive.deviceID {
            throw CommandFailure("\(home.path) holds another device (\(identity.deviceID.hex.prefix(12))); this backup is of "
                                 + "'\(archive.deviceName)' (\(archive.deviceID.hex.prefix(12))): restore it into its own --home")
        }
        let fm = FileManager.default
        if !fm.fileExists(atPath: home.path) {
            do { try fm.createDirectory(atPath: home.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) } catch {
                throw CommandFailure("cannot create \(home.path): \(error.localizedDescription)")
            }
        }
        // Holding the engine lock keeps a sync or a mount from starting mid-restore.
        let lock: DeviceLock
        do { lock = try DeviceLock.acquire(path: home.syncLockPath) } catch {
            throw CommandFailure("this device is syncing or mounted (\(error)); unmount it or stop 'quire sync', then restore")
        }
        defer { lock.release() }
        if let mounted = liveMount(home) {
            throw CommandFailure("this device is mounted at \(mounted) (sync off); unmount it first ('quire unmount \(mounted)')")
        }
        let stamp = DateText.format(SystemClock().now().seconds, time: true).replacingOccurrences(of: " ", with: "T").replacingOccurrences(of: ":", with: "")
        var aside = home.path + "/before-restore-" + stamp
        var attempt = 1
        while fm.fileExists(atPath: aside) {   // a second restore within the same second
            attempt += 1
            aside = home.path + "/before-restore-" + stamp + "-\(attempt)"
        }
        // A restore killed half way is run again: the device as it was
        // before is in the folder the first attempt moved it to.
        let interrupted = home.interruptedRestore
        let before = interrupted?.aside ?? aside
        let existing = DeviceHome.deviceFiles.filter { fm.fileExists(atPath: home.path + "/" + $0) }
        var plan = ["restore device '\(archive.deviceName)' (\(archive.deviceID.hex.prefix(12))) from a backup taken "
                    + "\(DateText.format(archive.takenAt.seconds, time: true)) into \(home.path):"]
        for f in archive.files { plan.append("  write \(f.path) (\(f.bytes.count) bytes)") }
        if !existing.isEmpty {
            plan.append("  move what is there now (\(existing.joined(separator: ", "))) to \(aside)/")
            plan.append("  keep the bodies held there for other devices")
        }
        plan.append("  then mint a new incarnation, so new writes never reuse a counter from before the backup")
        // Writes no other device received are in no copy but the one moved
        // aside: the user must hear of them before and after, by name.
        let current = home.path + "/replica.sqlite"
        var unshared: [UnsharedWrite] = []
        if interrupted == nil, fm.fileExists(atPath: current),
           let replica = archive.files.first(where: { $0.path == "replica.sqlite" }) {
            unshared = unsharedWrites(in: current, restoring: replica.bytes)
            if !unshared.isEmpty { plan.append("  set aside " + describe(unshared, keptIn: aside)) }
        }
        if !args.has("json") { plan.forEach(Output.line) }
        if args.has("dry-run") {
            if args.has("json") { Output.json(["dryRun": true, "plan": plan, "unsharedSetAside": unshared.map(json)]) }
            return
        }
        if interrupted == nil {
            do { try AtomicFile.write(Array("\(aside)\n\(source)\n".utf8), to: home.restoreMarkerPath, mode: 0o600) } catch {
                throw CommandFailure("nothing restored: cannot write \(home.restoreMarkerPath): \(error)")
            }
        }
        if !existing.isEmpty {
            do {
                try fm.createDirectory(atPath: aside, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                for name in existing { try fm.moveItem(atPath: home.path + "/" + name, toPath: aside + "/" + name) }
            } catch {
                if interrupted == nil, (try? fm.contentsOfDirectory(atPath: aside))?.isEmpty ?? true { try? fm.removeItem(atPath: home.restoreMarkerPath) }
                throw CommandFailure("nothing restored: cannot move the current files to \(aside): \(error.localizedDescription)")
            }
        }
        do {
            _ = mkdir(home.keysPath, 0o700)
            _ = mkdir(home.scratchPath, 0o700)
            for f in archive.files { try AtomicFile.write(f.bytes, to: home.path + "/" + f.path, mode: 0o600) }
            let (_, store) = try home.open(restoring: true)
            let replaced = before + "/replica.sqlite"
            let done = try store.finishRestore(replaced: fm.fileExists(atPath: replaced) ? replaced : nil,
                                               reason: "restored from a backup taken \(DateText.format(archive.takenAt.seconds, time: true))")
            // Left behind, it makes the next command say to run the restore again, which finishes it.
            _ = unlink(home.restoreMarkerPath)
            let actor = done.actor
            let generation = (try? home.prefs.load().generation) ?? 0
            if args.has("json") {
                Output.json(["restored": true, "device": archive.deviceID.hex, "takenAt": archive.takenAt.seconds,
                             "incarnation": String(actor.incarnation, radix: 16), "generation": generation, "movedAside": interrupted != nil ? before : (existing.isEmpty ? "" : aside),
                             "heldBodiesKept": done.adopted, "heldBodiesDamaged": done.damaged, "unsharedSetAside": unshared.map(json)])
            } else {
                if !unshared.isEmpty {
                    Output.line("warning: \(unshared.count) write\(unshared.count == 1 ? "" : "s") no other device received \(unshared.count == 1 ? "was" : "were") "
                                + "set aside (named above): \(unshared.count == 1 ? "it is" : "they are") in \(aside)/ only")
                }
                if done.adopted > 0 {
                    Output.line("kept \(done.adopted) bod\(done.adopted == 1 ? "y" : "ies") this device holds for other devices (the backup predates \(done.adopted == 1 ? "it" : "them"))")
                }
                if done.damaged > 0 {
                    Output.line("warning: \(done.damaged) held bod\(done.damaged == 1 ? "y" : "ies") in \(aside)/replica.sqlite did not match \(done.damaged == 1 ? "its hash" : "their hashes") and \(done.damaged == 1 ? "was" : "were") left there")
                }
                Output.line("restored; this device now writes as incarnation \(String(actor.incarnation, radix: 16).prefix(6)) at generation \(generation). "
                            + "Start 'quire sync' or mount it: what the other devices learned since the backup comes back")
            }
        } catch {
            throw CommandFailure("restore failed: \(error); what was there before is in \(before)/; run it again to finish it")
        }
    }

    /// The writes of the replica at `current` that no sibling confirmed and
    /// the backup's replica (`restoring`, its bytes) lacks. A replica that
    /// cannot be read (the reason for many a restore) names none.
    static func unsharedWrites(in current: String, restoring: [UInt8]) -> [UnsharedWrite] {
        let copy = NSTemporaryDirectory() + "/quire-restore-check-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { _ = unlink(copy + suffix) } }
        do {
            try AtomicFile.write(restoring, to: copy, mode: 0o600)
            return try ReplicaStore.unsharedWrites(in: current, missingFrom: copy)
        } catch {
            return []
        }
    }

    /// "N writes made here that no other device received: ..." and where
    /// they stay (`aside`; nil before anything was moved). `quire repair
    /// --take-fleet` names them too, with its own `lacking` clause.
    static func describe(_ writes: [UnsharedWrite], keptIn aside: String?, lacking: String = "newer than the backup") -> String {
        let shown = writes.prefix(10).map { write in
            let name = write.name.isEmpty ? write.key.hex.prefix(12) + "…" : "'" + write.name + "'"
            return "\(write.namespace) \(name)\(write.isDeletion ? " (a deletion)" : "")"
        }
        let more = writes.count > shown.count ? " and \(writes.count - shown.count) more" : ""
        let listed = "\(writes.count) write\(writes.count == 1 ? "" : "s") made on this device that no other device received, "
            + "\(lacking): \(shown.joined(separator: ", "))\(more)"
        guard let aside else { return listed }
        let example = writes.first { !$0.isDeletion && !$0.name.isEmpty }
        let read = example.map { " (read one with 'quire --home \(aside) get \($0.namespace) \"\($0.name)\"', put it back with 'quire put')" } ?? ""
        return listed + ". They stay in \(aside)/\(read)"
    }

    static func json(_ write: UnsharedWrite) -> [String: Any] {
        ["namespace": write.namespace.name, "key": write.key.hex, "name": write.name, "deletion": write.isDeletion]
    }

    /// A mount of this device whose daemon is still alive, if any.
    static func liveMount(_ home: DeviceHome) -> String? {
        let dir = home.mountsPath
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasSuffix(".pid") {
            guard let text = try? String(contentsOfFile: dir + "/" + name, encoding: .utf8) else { continue }
            let lines = text.split(separator: "\n")
            if let first = lines.first, let pid = Int32(first), kill(pid, 0) == 0 { return lines.count > 1 ? String(lines[1]) : "a mountpoint" }
        }
        return nil
    }
}
