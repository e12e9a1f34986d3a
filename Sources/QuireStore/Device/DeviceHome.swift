import Foundation
import QuireCore
import QuireCrypto

/// The device directory (`--home`): replica database, prefs, keys. This is
/// what a device backup captures and a restore puts back. The cloud
/// directory is never inside it.
public struct DeviceHome: Sendable {
    public let path: String

    /// A relative `path` is taken from the current directory and kept
    /// absolute, so every file named from it survives a change of directory
    /// (the mount daemon changes to /).
    public init(path: String) {
        self.path = path.hasPrefix("/") || path.isEmpty
            ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// `$XDG_DATA_HOME/quire`, else `~/.local/share/quire`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/quire" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/quire"
    }

    public var databasePath: String { path + "/replica.sqlite" }
    public var prefsPath: String { path + "/prefs.json" }
    public var keysPath: String { path + "/keys" }
    /// Local scratch area for editor junk files shown in the mount (never rows).
    public var scratchPath: String { path + "/scratch" }
    public var logPath: String { path + "/quire.log" }
    /// Held (flock) by the one process that syncs this device.
    public var syncLockPath: String { path + "/sync.lock" }
    /// Replay floors and session stamps, kept across restarts.
    public var syncStatePath: String { path + "/sync-state.json" }
    /// The engine's status snapshot, for `quire status` and `.quire/status`.
    public var syncStatusPath: String { path + "/sync-status.json" }
    /// While a mount's sync waits for a relay that does not answer: which,
    /// since when, the last error (no engine runs to write a snapshot).
    public var relayWaitPath: String { path + "/sync-relay-wait.json" }
    /// Pid files of the mount daemons serving this device.
    public var mountsPath: String { path + "/mounts" }
    /// The control channel's socket (when the path fits AF_UNIX).
    public var controlSocketPath: String { path + "/offload.sock" }
    /// Required copies of each offloaded body.
    public var offloadCopiesPath: String { path + "/offload-copies.json" }
    /// The files that make up the device, as a backup or restore moves them.
    public static let deviceFiles = ["replica.sqlite", "replica.sqlite-wal", "replica.sqlite-shm", "prefs.json", "keys"]
    /// A joining device's enrolment (signed by the invite's pairing key),
    /// until a sibling admits it.
    public var enrolmentPath: String { keysPath + "/enrolment" }
    public var prefs: PrefsFile { PrefsFile(path: prefsPath) }
    /// Written by `quire restore` once the new files are staged and
    /// checked, before it moves anything; removed when it is done
    /// (`RestoreMarker`, `DeviceRestore`).
    public var restoreMarkerPath: String { path + "/restore-in-progress" }

    /// A restore that did not finish (killed, a power cut): where the files
    /// from before it go, the backup it was putting back, and the staging
    /// folder holding the new files.
    public var interruptedRestore: RestoreMarker? {
        guard let text = try? String(contentsOfFile: restoreMarkerPath, encoding: .utf8) else { return nil }
        return RestoreMarker(decoding: text)
    }

    /// Refuses to use or replace a device directory a restore left half
    /// done, naming where the files from before it are now.
    public func refuseInterruptedRestore() throws(StoreError) {
        guard let restore = interruptedRestore else { return }
        let fm = FileManager.default
        let moved = ((try? fm.contentsOfDirectory(atPath: restore.aside)) ?? []).filter { DeviceHome.deviceFiles.contains($0) }
        let left = DeviceHome.deviceFiles.filter { fm.fileExists(atPath: path + "/" + $0) }
        // Say where they are, not where they were to go: a kill may land
        // before the folder was made, or half way through the moves.
        let movingIn = restore.staging.map { staging in restore.staged.contains { !fm.fileExists(atPath: staging + "/" + $0) } } ?? true
        let whereTheyAre = moved.isEmpty ? "the files from before it are still in \(path)/"
            : left.isEmpty || movingIn ? "the files from before it are in \(restore.aside)/"
            : "the files from before it are in \(restore.aside)/ and \(path)/"
        throw StoreError(.conflict, "a restore into \(path) was interrupted (\(whereTheyAre)): "
                         + "run 'quire restore --from \(restore.backup.isEmpty ? "FILE" : restore.backup)' again to finish it; nothing is lost")
    }

    public var exists: Bool { FileManager.default.fileExists(atPath: prefsPath) }

    /// Creates a new device on a new account (or on `identity`'s account when joining).
    @discardableResult
    public func create(name: String, role: Prefs.Role = .device, identity given: Identity? = nil,
                       clock: any Clock = SystemClock()) throws(StoreError) -> (Identity, ReplicaStore) {
        try refuseInterruptedRestore()
        if exists { throw StoreError(.conflict, "\(path) already holds a quire device; choose another --home") }
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: path, isDirectory: &isDir) {
            guard isDir.boolValue else { throw StoreError(.conflict, "\(path) exists and is not a directory") }
            if let entries = try? fm.contentsOfDirectory(atPath: path), entries.contains("replica.sqlite") {
                throw StoreError(.conflict, "\(path) holds a replica database but no prefs; refusing to overwrite it")
            }
        }
        // Parents such as ~/.local/share may not exist on a fresh machine.
        let parent = parentDirectory(of: path)
        if !fm.fileExists(atPath: parent) {
            do { try fm.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
                throw StoreError(.permission, "cannot create \(parent): \(error.localizedDescription)")
            }
        }
        for dir in [path, keysPath, scratchPath] {
            if mkdir(dir, 0o700) != 0 && errno != EEXIST {
                throw AtomicFile.posixError("cannot create directory \(dir)")
            }
        }
        try checkPermissions()
        let identity = given ?? Identity.generate()
        try identity.save(in: keysPath)
        var prefs = Prefs(deviceName: name)
        prefs.role = role
        try self.prefs.save(prefs)
        let store = try ReplicaStore(path: databasePath, deviceID: identity.deviceID, create: true, clock: clock)
        try store.bindDevice()
        // The account key certifies the first device of a new account (and a
        // device rebuilt from the recovery file); it is then forgotten. A
        // joining device has no certificate until a sibling admits it.
        if identity.account.secret != nil {
            let certificate = identity.signedCertificate(name: name, role: role.rawValue, issuedAt: clock.now())
            try store.putRosterEntry(DeviceRecord(name: name, certificate: certificate), key: identity.deviceID)
        }
        return (identity, store)
    }

    /// Opens an existing device: checks the directory, loads keys, opens the
    /// replica (`restoring`: see `ReplicaStore.init`).
    public func open(clock: any Clock = SystemClock(), restoring: Bool = false) throws(StoreError) -> (Identity, ReplicaStore) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.notFound, "no quire device at \(path); run 'quire init' (or pass --home)")
        }
        try checkPermissions()
        if !restoring { try refuseInterruptedRestore() }
        try refuseSetAside()
        removeStaleScratch()
        guard exists else { throw StoreError(.notFound, "\(path) is not a quire device directory (no prefs.json); run 'quire init'") }
        let (identity, legacySecret) = try Identity.load(from: keysPath)
        let store: ReplicaStore
        do { store = try ReplicaStore(path: databasePath, deviceID: identity.deviceID, clock: clock, restoring: restoring) } catch {
            // The ways back for a device whose replica is gone or unreadable.
            let back = "put it back from a backup ('quire restore --from FILE'), or, with none, make this device again: move \(path) aside "
                + "and join the account anew ('quire invite' on another device, then 'quire init --join' here); what the other devices "
                + "hold comes back"
            switch error.kind {
            case .notFound where !FileManager.default.fileExists(atPath: databasePath):
                throw StoreError(.notFound, "\(path) has this device's keys and prefs but no replica (replica.sqlite was moved or deleted): \(back)")
            case .corrupt:
                let what = error.message.replacingOccurrences(of: "; restore it from a backup or move it aside", with: "")
                throw StoreError(.corrupt, "\(what); to get this device back, \(back)")
            default: throw error
            }
        }
        try store.bindDevice()
        // How long and how much trash and earlier versions are kept (prefs).
        if let prefs = try? prefs.load() { store.keptLimits = KeptLimits(prefs: prefs) }
        if let legacySecret {
            try store.retireLegacyAccountKey(legacySecret, clock: clock)
            try identity.save(in: keysPath)
            if unlink(keysPath + "/" + Identity.legacySecretFile) != 0 && errno != ENOENT {
                throw AtomicFile.posixError("cannot delete the retired account key \(keysPath)/\(Identity.legacySecretFile)")
            }
        }
        return (identity, store)
    }

    /// The directory must be a directory its owner can read, write and enter.
    public func checkPermissions() throws(StoreError) {
        var st = stat()
        guard stat(path, &st) == 0 else { throw AtomicFile.posixError("cannot inspect device directory \(path)") }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw StoreError(.conflict, "\(path) is not a directory") }
        let mode = st.st_mode & 0o777
        if mode & 0o700 != 0o700 {
            throw StoreError(.permission, "device directory \(path) has mode \(String(mode, radix: 8)); its owner needs read, write and search (run 'chmod 700 \(path)')")
        }
        if st.st_uid != getuid() {
            throw StoreError(.permission, "device directory \(path) belongs to uid \(st.st_uid), not to you (uid \(getuid()))")
        }
        try tightenModes()
        if access(path, W_OK) != 0 {
            throw AtomicFile.posixError("device directory \(path) is not writable")
        }
    }
}

extension ReplicaStore {
    /// Writes a roster entry as a local edit (the roster is otherwise
    /// changed only by signed records arriving from siblings).
    public func putRosterEntry(_ record: DeviceRecord, key: RowKey) throws(StoreError) {
        try write { ctx in try ctx.putRoster(record, key: key) }
    }
}

extension WriteContext {
    mutating func putRoster(_ record: DeviceRecord, key: RowKey) throws(StoreError) {
        let existing = try RowRecord.load(db, .devices, key, withBody: false)
        let existingRow = try existing?.row(path: store.path)
        if case .device(let old)? = existingRow?.content, old == record, existingRow?.heads.count == 1 { return }
        _ = try writeLocalVersion(.device(record), key: key, existing: existing, existingRow: existingRow)
    }
}

extension DeviceHome {
    /// Other local users must read nothing here: the directory and every
    /// folder in it are made 0700 and every file 0600 (key files excepted:
    /// those are refused instead), whatever the umask
    /// and whatever an older quire or a copy (`cp -a`, a tar) left behind.
    /// Each change is said on standard error, once.
    public func tightenModes() throws(StoreError) {
        var changed: [String] = []
        func tighten(_ item: String, depth: Int) {
            var st = stat()
            guard lstat(item, &st) == 0 else { return }
            let kind = st.st_mode & S_IFMT
            guard kind == S_IFDIR || kind == S_IFREG || kind == S_IFSOCK else { return }  // symlinks are left alone, not followed
            let wanted: mode_t = kind == S_IFDIR ? 0o700 : 0o600
            if st.st_mode & 0o077 != 0 && st.st_uid == getuid() {
                if chmod(item, wanted) == 0 {
                    changed.append("\(item) (was \(String(st.st_mode & 0o777, radix: 8)))")
                }
            }
            // Key files are not tightened but refused when others could read
            // them (Identity.readKeyFile): such a key may already be known.
            guard kind == S_IFDIR, depth < 2, item != keysPath, let names = try? FileManager.default.contentsOfDirectory(atPath: item) else { return }
            for name in names { tighten(item + "/" + name, depth: depth + 1) }
        }
        tighten(path, depth: 0)
        if !changed.isEmpty {
            try? FileHandle.standardError.write(contentsOf: Data(("quire: other users could read files of the device directory; made owner-only: "
                                                 + changed.prefix(8).joined(separator: ", ") + (changed.count > 8 ? ", …" : "") + "\n").utf8))
        }
    }
}
