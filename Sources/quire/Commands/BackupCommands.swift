import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon
import QuireRelay

/// `quire backup` and `quire restore`: a device directory captured while
/// the device runs, and put back. A restore mints a new incarnation before
/// anything else, so nothing the restored device writes can be mistaken
/// for what it wrote before the backup was taken.
enum BackupCommands {
    static let backup = Command(
        name: "backup",
        summary: "write a backup of this device directory to a file",
        usage: """
            usage: quire backup --to FILE [--replace] [--json]

            Captures this device directory while the device runs (a mount or
            'quire sync' need not stop): a consistent copy of the replica
            (SQLite's online backup), the prefs and the keys, in one file written
            with mode 0600. It is not encrypted: it holds every note in clear,
            this device's private keys and the account's backup key. Keep it
            where only you can read it; a FILE in this device's cloud folder
            (which a file-sync service uploads) or in a quire mount (which syncs
            it to every device) is refused, symlinks and relative paths
            resolved. FILE must be a new name: a file already there is refused
            with what it holds, and never replaced, except a backup of this
            device with --replace (the new backup is written whole beside it
            first and renamed over it, so an interrupted replace leaves the old
            one intact). The cloud folder is never in it, and neither
            are logs, sync state or the scratch area. Put it back with
            'quire restore --from FILE'. Its working copy of the replica is made in
            the device directory, never in /tmp; Ctrl-C removes it, and one left by
            a process that was killed is removed at the next start.
            """,
        valued: ["to"], flags: ["json", "replace"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        guard let target = args.value("to") else { throw UsageError("quire backup needs --to FILE") }
        let (identity, store) = try inv.open()
        if let place = BackupTarget.sharedPlace(of: target, home: inv.home) { throw CommandFailure("backup not written: \(place)") }
        let replacing = args.has("replace")
        if let occupant = BackupTarget.occupant(of: target, device: identity.deviceID, replacing: replacing) {
            throw CommandFailure("backup not written: \(occupant)")
        }
        let taken = SystemClock().now()
        let archive: DeviceBackup
        // Ctrl-C mid-copy leaves no partial copy of the replica behind.
        let home = inv.home
        let interrupt = ScratchOnInterrupt { home.removeScratch(ofProcess: getpid()) }
        defer { interrupt.release() }
        do {
            archive = try DeviceBackup.capture(inv.home, store: store, identity: identity, at: taken)
            try archive.write(to: target, replacing: replacing)
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
            usage: quire restore --from FILE [--dry-run] [--force] [--json]

            Puts the device directory (--home) back from a file written by
            'quire backup', and says what it does first. Refused while this
            device is mounted or syncing. The backup's files are first written into
            a staging folder inside the device directory and checked (the replica
            opens, every note body matches its hash); until that is done nothing of
            the device is touched, so a failure (a full disk, a damaged backup)
            leaves it as it was. Then the replica, prefs and keys found in the
            device directory are moved (not deleted) to <home>/before-restore-<time>/
            and the staged ones put in their place, by renames. That folder is then
            marked as set aside (readable with 'quire --home FOLDER ls|get', never a
            device again) and holds no keys, unless one of its keys differs from the
            backup's (it may be the only copy): the output says so. A restore that is
            killed during that switch is finished by running it again. Bodies this
            device holds for other devices (a homebase) are kept: the backup may
            predate them, and the devices that offloaded them have no other copy.
            This device's cloud folder and relay are kept, not the backup's: they
            say where the device lives now (the fleet may have moved its cloud
            folder since), and the output says so when the backup's differ.
            If the cloud folder's anchor is ahead of the backup, the rows the fleet
            deleted and collected since are removed before it returns (as the sync
            would at its start; writes no other device saw stay).
            The restored device mints a new
            incarnation before anything else, so its new writes can never be taken
            for ones it made before the backup; when it next syncs, whatever the
            other devices learned since the backup comes back to it. Writes made
            here that the backup predates and no other device received (or only
            devices revoked since) cannot come back that way: they are named
            (--dry-run names them too), and stay readable in the moved-aside
            folder ('quire --home FOLDER get').
              --dry-run   only say what would be done
              --force     restore a backup whose note bodies do not all match their
                          hashes; those notes are restored as damaged (a good copy
                          comes back only from a device that holds one)
            """,
        valued: ["from"], flags: ["dry-run", "json", "force"]
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
        home.removeStaleScratch()
        let interrupted = home.interruptedRestore
        let aside = interrupted?.aside ?? newAsideFolder(in: home)
        // A restore killed during its switch is finished from the files it
        // staged; one killed under an older quire (no staging folder) has
        // its device files brought together in its folder, then staged anew.
        // (A staging folder already gone means only the marker's removal was left.)
        let resuming = interrupted.flatMap { $0.staging != nil ? $0 : nil }
        // The switch finishes with what it staged, which is the first backup's:
        // finishing it under another --from would put back what the user did
        // not ask for and say it was this one. Refused before anything moves.
        if let resuming, !resuming.backup.isEmpty, !isSameFile(resuming.backup, source) {
            throw CommandFailure("nothing restored, nothing was changed: a restore from \(resuming.backup) was interrupted, and it finishes "
                                 + "with the files it staged from that backup, not from \(source). Finish it first with "
                                 + "'quire restore --from \(resuming.backup)' (its staged files are checked already); then, to put back "
                                 + "\(source) instead, run 'quire restore --from \(source)'")
        }
        if let interrupted, !args.has("dry-run") {
            // The old files come together first, before anything opens them.
            do {
                if interrupted.staging == nil { try gatherLegacyAside(interrupted, home: home) }
                else { try DeviceRestore.moveOldAside(interrupted, home: home) }
            } catch { throw CommandFailure("restore not finished: \(error)") }
        }
        // Where the device's own files are now: still in place, or (once a
        // switch began) in the before-restore folder.
        let oldDirectory = interrupted == nil ? home.path : aside
        let existing = DeviceHome.deviceFiles.filter { fm.fileExists(atPath: home.path + "/" + $0) }
        var plan = ["restore device '\(archive.deviceName)' (\(archive.deviceID.hex.prefix(12))) from a backup taken "
                    + "\(DateText.format(archive.takenAt.seconds, time: true)) into \(home.path):"]
        if let interrupted {
            plan.append("  finish the restore that was interrupted")
        }
        plan.append("  stage the backup's files in a folder in the device directory and check them before anything is moved:")
        for f in archive.files { plan.append("  write \(f.path) (\(f.bytes.count) bytes)") }
        if interrupted != nil || !existing.isEmpty {
            plan.append("  move what is there now to \(aside)/")
            plan.append("  keep the bodies held there for other devices")
        }
        plan.append("  then mint a new incarnation, so new writes never reuse a counter from before the backup")

        // Stage and check everything new before anything is moved: a
        // failure here leaves the device as it was.
        // Until the marker names it the staging folder is scratch: Ctrl-C
        // removes it, and a kill leaves it for the next start to remove.
        let ownsStaging = resuming == nil
        let staged = resuming?.staging.map { DeviceRestore(home: home, staging: $0) } ?? DeviceRestore.newStaging(in: home)
        let interrupt = ScratchOnInterrupt { ownsStaging ? staged.discard() : true }
        defer { interrupt.release() }
        var kept = RestoredPlace()
        var damagedNotes: [String] = []
        if ownsStaging {
            do { try staged.makeStaging() } catch {
                throw CommandFailure(nothingChanged(error))
            }
            do {
                let currentPrefs = try? PrefsFile(path: oldDirectory + "/prefs.json").load()
                kept = try staged.write(archive, keepingPlaceOf: currentPrefs)
                damagedNotes = try staged.damagedNotes(deviceID: archive.deviceID)
            } catch {
                staged.discard()
                throw CommandFailure(nothingChanged(error))
            }
        }
        if !damagedNotes.isEmpty {
            let names = damagedNotes.prefix(10).map { "'\($0)'" }.joined(separator: ", ") + (damagedNotes.count > 10 ? " and \(damagedNotes.count - 10) more" : "")
            if !args.has("force") {
                staged.discard()
                throw CommandFailure("nothing restored, nothing was changed: the backup \(source) is damaged: \(damagedNotes.count) note bod\(damagedNotes.count == 1 ? "y does" : "ies do") "
                                     + "not match \(damagedNotes.count == 1 ? "its hash" : "their hashes") (\(names)); use another backup, or --force to restore it without "
                                     + "\(damagedNotes.count == 1 ? "that body" : "those bodies") (a sibling or the homebase may still hold them)")
            }
            plan.append("  restore \(damagedNotes.count) damaged note bod\(damagedNotes.count == 1 ? "y" : "ies") (\(names)) as damaged: a good copy comes back only from a device that holds it")
        }
        if kept.cloudDiffers {
            plan.append("  keep this device's cloud folder \(kept.cloud ?? "(none)") (the backup's is \(kept.backupCloud ?? "(none)")): it says where the device lives now")
        }
        if kept.relayDiffers {
            plan.append("  keep this device's relay \(shownRelay(kept.relay)) (the backup's is \(shownRelay(kept.backupRelay))): it says where the device lives now")
        }
        // Writes no other device received are in no copy but the one moved
        // aside: the user must hear of them before and after, by name.
        let current = interrupted != nil && fm.fileExists(atPath: aside + "/replica.sqlite") ? aside + "/replica.sqlite" : home.databasePath
        let restored = fm.fileExists(atPath: staged.stagedReplicaPath) ? staged.stagedReplicaPath : home.databasePath
        var unshared: [UnsharedWrite] = []
        if fm.fileExists(atPath: current), current != restored {
            unshared = (try? ReplicaStore.unsharedWrites(in: current, missingFrom: restored, revoked: revokedDevices(home, replica: current))) ?? []
            if !unshared.isEmpty { plan.append("  set aside " + describe(unshared, keptIn: aside)) }
        }
        if !args.has("json") { plan.forEach(Output.line) }
        if args.has("dry-run") {
            if ownsStaging { staged.discard() }
            if args.has("json") { Output.json(["dryRun": true, "plan": plan, "unsharedSetAside": unshared.map(json)]) }
            return
        }
        var done: (actor: Actor, adopted: Int, damaged: Int)? = nil
        if resuming == nil {
            do {
                let replaced = current
                done = try staged.finish(deviceID: archive.deviceID, replaced: fm.fileExists(atPath: replaced) ? replaced : nil,
                                         reason: "restored from a backup taken \(DateText.format(archive.takenAt.seconds, time: true))")
            } catch {
                staged.discard()
                throw CommandFailure(nothingChanged(error))
            }
        }
        interrupt.release()
        do {
            try DeviceRestore.switchIn(RestoreMarker(aside: aside, backup: source, staging: staged.staging), home: home)
        } catch {
            throw CommandFailure("restore not finished: \(error); what was there before is in \(home.interruptedRestore == nil ? home.path : aside)/; run it again to finish it")
        }
        // The old files are a copy of this device, not a device: marked so
        // they never open as it again (two live copies of one actor would
        // mint the same dots), readable as repair's set-aside replica is.
        var oldKeysKept: [String] = []
        if fm.fileExists(atPath: aside) {
            do {
                oldKeysKept = try DeviceHome(path: aside).markRestoredAside(device: archive.deviceID, reason: "'quire restore' from \(source)",
                                                                             restored: home)
            } catch { Output.error("warning: restored, but the folder set aside \(aside) could not be marked as one: \(error)") }
        }
        let actor: Actor
        let anchor: AnchorCatchUp.Record?
        do {
            let (identity, store) = try home.open()
            actor = try store.actor()
            // What the fleet collected since the backup goes before any command shows it.
            anchor = AnchorCatchUp.run(home: home, store: store, identity: identity, holdingLock: true, trigger: "at the end of 'quire restore'")
        } catch { throw CommandFailure("restored, but the device does not open: \(error)") }
        let generation = (try? home.prefs.load().generation) ?? 0
        let adopted = done?.adopted ?? 0, heldDamaged = done?.damaged ?? 0
        let movedAside = fm.fileExists(atPath: aside) ? aside : ""
        if args.has("json") {
            Output.json(["restored": true, "device": archive.deviceID.hex, "takenAt": archive.takenAt.seconds,
                         "incarnation": String(actor.incarnation, radix: 16), "generation": generation, "movedAside": movedAside,
                         "heldBodiesKept": adopted, "heldBodiesDamaged": heldDamaged, "unsharedSetAside": unshared.map(json),
                         "damagedNotes": damagedNotes, "cloud": kept.cloud ?? "", "backupCloud": kept.backupCloud ?? "",
                         "oldKeysKept": oldKeysKept, "anchorRecovered": anchor?.recovered as Any, "behindFleet": anchor?.behind as Any])
        } else {
            if let words = anchor?.recovered { Output.line("the cloud anchor is ahead of the backup: " + words) }
            if let words = anchor?.behind { Output.line("warning: " + words) }
            if !unshared.isEmpty {
                Output.line("warning: \(unshared.count) write\(unshared.count == 1 ? "" : "s") no other device received \(unshared.count == 1 ? "was" : "were") "
                            + "set aside (named above): \(unshared.count == 1 ? "it is" : "they are") in \(aside)/ only")
            }
            if !damagedNotes.isEmpty {
                Output.line("warning: \(damagedNotes.count) note bod\(damagedNotes.count == 1 ? "y" : "ies") of the backup \(damagedNotes.count == 1 ? "was" : "were") damaged and restored as damaged (named above)")
            }
            if !oldKeysKept.isEmpty {
                Output.line("warning: \(aside)/keys still holds this device's old private keys: \(oldKeysKept.joined(separator: ", ")) "
                            + "differ\(oldKeysKept.count == 1 ? "s" : "") from the backup's, so \(oldKeysKept.count == 1 ? "it" : "they") may be the only copy "
                            + "of a key this device received after the backup was taken (a backup key a revocation sent); keep the folder where only you can read it")
            }
            if kept.cloudDiffers {
                Output.line("kept this device's cloud folder \(kept.cloud ?? "(none)"), not the backup's \(kept.backupCloud ?? "(none)")")
            }
            if adopted > 0 {
                Output.line("kept \(adopted) bod\(adopted == 1 ? "y" : "ies") this device holds for other devices (the backup predates \(adopted == 1 ? "it" : "them"))")
            }
            if heldDamaged > 0 {
                Output.line("warning: \(heldDamaged) held bod\(heldDamaged == 1 ? "y" : "ies") in \(aside)/replica.sqlite did not match \(heldDamaged == 1 ? "its hash" : "their hashes") and \(heldDamaged == 1 ? "was" : "were") left there")
            }
            Output.line("restored; this device now writes as incarnation \(String(actor.incarnation, radix: 16).prefix(6)) at generation \(generation). "
                        + "Start 'quire sync' or mount it: what the other devices learned since the backup comes back")
        }
    }

    /// Whether two paths name one backup file: the same words, the same
    /// absolute path, or the same file (device and inode).
    static func isSameFile(_ a: String, _ b: String) -> Bool {
        if a == b || MountProcess.absolutePath(a) == MountProcess.absolutePath(b) { return true }
        var sa = stat(), sb = stat()
        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }

    /// A relay as `quire config` shows it: a Redis password never printed.
    static func shownRelay(_ spec: String?) -> String {
        guard let spec else { return "(none)" }
        return (try? RelaySpec(parsing: spec))?.description ?? spec
    }

    /// A failure before the switch: the device is as it was, and the message says so once.
    static func nothingChanged(_ error: any Error) -> String {
        let text = "\(error)"
        return "nothing restored: " + text + (text.contains("nothing was changed") ? "" : "; nothing was changed")
    }

    /// A new `before-restore-<time>` folder name (not made yet).
    static func newAsideFolder(in home: DeviceHome) -> String {
        let stamp = DateText.format(SystemClock().now().seconds, time: true).replacingOccurrences(of: " ", with: "T").replacingOccurrences(of: ":", with: "")
        var aside = home.path + "/before-restore-" + stamp
        var attempt = 1
        while FileManager.default.fileExists(atPath: aside) {   // a second restore within the same second
            attempt += 1
            aside = home.path + "/before-restore-" + stamp + "-\(attempt)"
        }
        return aside
    }

    /// A restore interrupted under an older quire moved the device's files
    /// (replica, WAL, prefs, keys, in that order) into its folder, then wrote
    /// the backup's in place. Until `keys` is in the folder no write began:
    /// what is left in place is the device's own and joins the rest; after,
    /// what is in place is a partial write of the backup's, removed (the
    /// restore stages it anew). Then the marker names a staging folder.
    static func gatherLegacyAside(_ marker: RestoreMarker, home: DeviceHome) throws {
        let fm = FileManager.default
        if !fm.fileExists(atPath: marker.aside) { try fm.createDirectory(atPath: marker.aside, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700]) }
        let writesBegan = fm.fileExists(atPath: marker.aside + "/keys")
        for name in DeviceHome.deviceFiles where fm.fileExists(atPath: home.path + "/" + name) {
            if writesBegan || fm.fileExists(atPath: marker.aside + "/" + name) {
                try fm.removeItem(atPath: home.path + "/" + name)
            } else {
                try fm.moveItem(atPath: home.path + "/" + name, toPath: marker.aside + "/" + name)
            }
        }
    }

    /// Devices this device's roster says are revoked: a write only they
    /// received is received by no device that counts.
    /// Read as the device's own files are (opened without minting).
    static func revokedDevices(_ home: DeviceHome, replica: String) -> Set<DeviceID> {
        let directory = DeviceHome(path: parentDirectory(of: replica))
        guard let (identity, store) = try? directory.open(restoring: true),
              let (roster, _) = try? Roster.load(from: store, accountKey: identity.account.publicKey) else { return [] }
        return Set(roster.members.values.filter(\.isRevoked).map(\.deviceID))
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
        // A device statement (a revocation) is not put back with 'quire put'.
        let example = writes.first { !$0.isDeletion && !$0.name.isEmpty && $0.namespace != .devices }
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
