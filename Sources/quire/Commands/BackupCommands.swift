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
            with mode 0600. It holds this device's private keys: keep it where
            only you can read it. The cloud folder is never in it, and neither
            are logs, sync state or the scratch area. Put it back with
            'quire restore --from FILE'.
            """,
        valued: ["to"], flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        guard let target = args.value("to") else { throw UsageError("quire backup needs --to FILE") }
        let (identity, store) = try inv.open()
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
            other devices learned since the backup comes back to it.
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
        if !args.has("json") { plan.forEach(Output.line) }
        if args.has("dry-run") {
            if args.has("json") { Output.json(["dryRun": true, "plan": plan]) }
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
                             "heldBodiesKept": done.adopted, "heldBodiesDamaged": done.damaged])
            } else {
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
