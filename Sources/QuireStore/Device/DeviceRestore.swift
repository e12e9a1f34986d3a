import Foundation
import QuireCore

/// A restore of the device directory as one switch. Everything new (the
/// backup's replica, prefs and keys) is first written into a staging folder
/// inside the device directory, fsynced, opened and checked, and given its
/// new incarnation; only then is the marker written and the switch made:
/// the device's files renamed into the before-restore folder and the staged
/// ones renamed in. Renames on one filesystem need no room and cannot be
/// half done, so a failure (a full disk, a damaged backup) before the
/// marker leaves the device exactly as it was, and one after it (a kill, a
/// power cut) is finished by running the restore again.
public struct DeviceRestore: Sendable {
    public let home: DeviceHome
    /// The staging folder (`.restore-<pid>-<random>` in the device directory).
    public let staging: String

    /// The files a switch moves in, in this order.
    public static let stagedNames = ["keys", "prefs.json", "replica.sqlite"]
    static let stagingPrefix = ".restore-"

    public var stagedReplicaPath: String { staging + "/replica.sqlite" }
    public var stagedPrefsPath: String { staging + "/prefs.json" }

    /// A new staging folder's name in `home` (made by `makeStaging`).
    public static func newStaging(in home: DeviceHome) -> DeviceRestore {
        DeviceRestore(home: home, staging: home.path + "/" + stagingPrefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    }

    /// Makes the staging folder, empty and 0700.
    public func makeStaging() throws(StoreError) {
        guard mkdir(staging, 0o700) == 0 else { throw AtomicFile.posixError("cannot create the staging folder \(staging)") }
    }

    public init(home: DeviceHome, staging: String) {
        self.home = home
        self.staging = staging
    }

    /// Writes the backup's files into the staging folder, each fsynced.
    /// The prefs keep `current`'s cloud folder and relay: those say where the
    /// device lives now (a fleet may have moved its cloud folder since the
    /// backup; going back to the old one would miss the anchor that catches
    /// this very rollback), not what the device held.
    public func write(_ archive: DeviceBackup, keepingPlaceOf current: Prefs?) throws(StoreError) -> RestoredPlace {
        guard mkdir(staging + "/keys", 0o700) == 0 || errno == EEXIST else {
            throw AtomicFile.posixError("cannot create \(staging)/keys")
        }
        var kept = RestoredPlace()
        for file in archive.files {
            var bytes = file.bytes
            if file.path == "prefs.json", let current {
                var prefs: Prefs
                do { prefs = try JSONDecoder().decode(Prefs.self, from: Data(bytes)) } catch {
                    throw StoreError(.invalidInput, "the backup's prefs.json does not parse: \(error.localizedDescription)")
                }
                kept = RestoredPlace(cloud: current.cloud, backupCloud: prefs.cloud, relay: current.relay, backupRelay: prefs.relay)
                prefs.cloud = current.cloud
                prefs.relay = current.relay
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                do { bytes = Array(try encoder.encode(prefs)) } catch { throw StoreError(.invalidInput, "prefs do not encode: \(error)") }
            }
            try AtomicFile.write(bytes, to: staging + "/" + file.path, mode: 0o600)
        }
        return kept
    }

    /// Opens the staged replica and refuses it if SQLite finds it damaged or
    /// a note body fails its hash: such a backup must not replace anything.
    /// Returns the names of the damaged notes (empty: every body is whole).
    public func damagedNotes(deviceID: DeviceID) throws(StoreError) -> [String] {
        let store = try ReplicaStore(path: stagedReplicaPath, deviceID: deviceID, restoring: true)
        guard try store.checkBodies() > 0 else { return [] }
        return try store.damagedBodies().map { $0.name.isEmpty ? $0.key.hex : $0.name }
    }

    /// Gives the staged replica its new incarnation and the bodies this
    /// device holds for others (`ReplicaStore.finishRestore`), then closes
    /// it with its WAL folded in, so the switch moves one file.
    public func finish(deviceID: DeviceID, replaced: String?, reason: String) throws(StoreError) -> (actor: Actor, adopted: Int, damaged: Int) {
        let done: (actor: Actor, adopted: Int, damaged: Int)
        do {
            let store = try ReplicaStore(path: stagedReplicaPath, deviceID: deviceID, restoring: true)
            try store.bindDevice()
            done = try store.finishRestore(replaced: replaced, reason: reason)
            try store.compact()
        }
        // The store is closed here; a WAL left behind holds nothing.
        for suffix in ["-wal", "-shm"] {
            var st = stat()
            let path = stagedReplicaPath + suffix
            if stat(path, &st) == 0 {
                guard suffix == "-shm" || st.st_size == 0 else {
                    throw StoreError(.conflict, "the staged replica's WAL \(path) was not folded in; nothing was changed")
                }
                _ = unlink(path)
            }
        }
        return done
    }

    /// Removes the staging folder and all in it; whether it is gone.
    @discardableResult
    public func discard() -> Bool {
        try? FileManager.default.removeItem(atPath: staging)
        return !FileManager.default.fileExists(atPath: staging)
    }

    /// The switch: records `marker` (so a kill from here on is finished by
    /// running the restore again), then moves the device's files into
    /// `marker.aside` and the staged ones in. Safe to call again on the same
    /// marker after an interruption at any point.
    public static func switchIn(_ marker: RestoreMarker, home: DeviceHome) throws(StoreError) {
        if home.interruptedRestore != marker {
            try AtomicFile.write(marker.encoded(), to: home.restoreMarkerPath, mode: 0o600)
        }
        try moveOldAside(marker, home: home)
        guard let staging = marker.staging else { throw StoreError(.conflict, "the restore marker names no staging folder") }
        let fm = FileManager.default
        for name in marker.staged where fm.fileExists(atPath: staging + "/" + name) {
            try rename(staging + "/" + name, to: home.path + "/" + name)
        }
        try? fm.removeItem(atPath: staging)
        _ = mkdir(home.scratchPath, 0o700)
        syncDirectory(home.path)
        if unlink(home.restoreMarkerPath) != 0 && errno != ENOENT {
            throw AtomicFile.posixError("cannot remove \(home.restoreMarkerPath)")
        }
        syncDirectory(home.path)
    }

    /// The first half of the switch: every file of the device as it was
    /// goes into the before-restore folder. A rerun does this before it
    /// opens the old replica, so a replica moved without its WAL (a kill
    /// between the two renames) is never opened apart from it.
    public static func moveOldAside(_ marker: RestoreMarker, home: DeviceHome) throws(StoreError) {
        let fm = FileManager.default
        guard let staging = marker.staging else { return }
        // Once one staged file is in, every old file is already aside.
        guard !marker.staged.contains(where: { !fm.fileExists(atPath: staging + "/" + $0) }) else { return }
        if mkdir(marker.aside, 0o700) != 0 && errno != EEXIST {
            throw AtomicFile.posixError("cannot create \(marker.aside)")
        }
        for name in DeviceHome.deviceFiles where fm.fileExists(atPath: home.path + "/" + name) {
            let target = marker.aside + "/" + name
            var st = stat()
            // An index (-shm) or an empty WAL that a reader of the folder made
            // meanwhile holds nothing: the device's own one replaces it.
            if stat(target, &st) == 0, name.hasSuffix("-shm") || (name.hasSuffix("-wal") && st.st_size == 0) { _ = unlink(target) }
            guard !fm.fileExists(atPath: target) else {
                throw StoreError(.conflict, "both \(home.path)/\(name) and \(target) exist; move one away by hand, then run the restore again")
            }
            try rename(home.path + "/" + name, to: target)
        }
        syncDirectory(marker.aside)
    }

    static func rename(_ from: String, to: String) throws(StoreError) {
        guard Glibc.rename(from, to) == 0 else { throw AtomicFile.posixError("cannot move \(from) to \(to)") }
    }

    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }
}

/// Where the device lives (cloud folder, relay) as a restore keeps it, and
/// what the backup held there.
public struct RestoredPlace: Equatable, Sendable {
    public var cloud: String?
    public var backupCloud: String?
    public var relay: String?
    public var backupRelay: String?
    public init(cloud: String? = nil, backupCloud: String? = nil, relay: String? = nil, backupRelay: String? = nil) {
        self.cloud = cloud
        self.backupCloud = backupCloud
        self.relay = relay
        self.backupRelay = backupRelay
    }
    public var cloudDiffers: Bool { cloud != backupCloud }
    public var relayDiffers: Bool { relay != nil && relay != backupRelay }
}

/// `restore-in-progress`: written once the new files are staged and
/// checked, removed when the switch is done. Lines: the before-restore
/// folder, the backup file, the staging folder, the staged names
/// (comma-separated). A marker of an older quire has only the first two:
/// it moved the device's files aside before writing the backup's.
public struct RestoreMarker: Equatable, Sendable {
    public var aside: String
    public var backup: String
    public var staging: String?
    public var staged: [String]

    public init(aside: String, backup: String, staging: String?, staged: [String] = DeviceRestore.stagedNames) {
        self.aside = aside
        self.backup = backup
        self.staging = staging
        self.staged = staging == nil ? [] : staged
    }

    public init(decoding text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        aside = lines.first ?? ""
        backup = lines.count > 1 ? lines[1] : ""
        staging = lines.count > 2 && !lines[2].isEmpty ? lines[2] : nil
        staged = staging != nil && lines.count > 3 ? lines[3].split(separator: ",").map(String.init) : []
    }

    public func encoded() -> [UInt8] {
        Array("\(aside)\n\(backup)\n\(staging ?? "")\n\(staged.joined(separator: ","))\n".utf8)
    }
}

extension DeviceHome {
    /// Removes scratch copies left in the device directory by a backup or
    /// restore that died (killed, Ctrl-C, a power cut): `.backup-<pid>-…`
    /// files and `.restore-<pid>-…` staging folders whose process is gone.
    /// Never the staging folder an interrupted restore's marker names: the
    /// rerun finishes the switch from it.
    public func removeStaleScratch() {
        removeScratch { pid in pid != getpid() && kill(pid, 0) != 0 && errno != EPERM }
    }

    /// Removes the scratch copies `pid` made (a backup interrupted by a
    /// signal); whether none is left.
    @discardableResult
    public func removeScratch(ofProcess pid: Int32) -> Bool {
        removeScratch { $0 == pid }
    }

    @discardableResult
    private func removeScratch(where isGone: (Int32) -> Bool) -> Bool {
        var isClean = true
        let fm = FileManager.default
        let kept = interruptedRestore?.staging
        for name in (try? fm.contentsOfDirectory(atPath: path)) ?? [] {
            let rest: Substring
            if name.hasPrefix(".backup-") { rest = name.dropFirst(".backup-".count) }
            else if name.hasPrefix(DeviceRestore.stagingPrefix) { rest = name.dropFirst(DeviceRestore.stagingPrefix.count) }
            else { continue }
            let full = path + "/" + name
            guard full != kept, let pid = Int32(rest.prefix { $0.isNumber }), pid > 0, isGone(pid) else { continue }
            try? fm.removeItem(atPath: full)
            if fm.fileExists(atPath: full) { isClean = false }
        }
        return isClean
    }
}
