import Foundation
import QuireCore
import QuireCrypto

/// A replica `quire repair --take-fleet` moved out of the device. Writes no
/// other device received may live in it only, so it must stay readable
/// (`quire --home FOLDER get | ls`); but it must never sync or write as the
/// device, since two live replicas of one actor would mint the same dots.
/// So the folder holds the replica, a copy of the prefs and a marker naming
/// the device, and no keys: it cannot open a frame or sign a statement, and
/// `open()` refuses it with what it is, so only reading opens it.
extension DeviceHome {
    /// The marker: the device's id (hex) on the first line, what set the
    /// replica aside on the second.
    public var setAsideMarkerPath: String { path + "/set-aside" }

    /// The device whose replica this folder holds, if it is a set-aside one.
    public var setAside: (device: DeviceID, reason: String)? {
        guard let text = try? String(contentsOfFile: setAsideMarkerPath, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let device = DeviceID(hex: lines.first ?? "") else { return nil }
        return (device, lines.count > 1 ? lines[1] : "")
    }

    /// Makes this folder (already holding the moved replica) a set-aside
    /// replica of `device`: the marker first, then a copy of the device's
    /// prefs from `prefsOf`, so no moment shows prefs without the marker.
    public func markSetAside(device: DeviceID, reason: String, prefsOf source: DeviceHome) throws(StoreError) {
        try AtomicFile.write(Array("\(device.hex)\n\(reason)\n".utf8), to: setAsideMarkerPath, mode: 0o600)
        guard let prefs = FileManager.default.contents(atPath: source.prefsPath) else {
            throw StoreError(.notFound, "no prefs at \(source.prefsPath)")
        }
        try AtomicFile.write(Array(prefs), to: prefsPath, mode: 0o600)
    }

    /// Makes a folder `quire restore` moved the device's old files into
    /// (replica, its own prefs, keys) a set-aside replica like repair's: the
    /// marker, so it never opens as the device again, then its keys removed
    /// where the restored device holds every one of them (the same device
    /// keys, a ring it holds in full). A key that differs is kept, folder and
    /// all: it may be the only copy of one this device received after the
    /// backup (a rotation's backup key, its admission). Returns the names of
    /// the key files that differ (empty: no keys are left in the folder).
    public func markRestoredAside(device: DeviceID, reason: String, restored: DeviceHome) throws(StoreError) -> [String] {
        try AtomicFile.write(Array("\(device.hex)\n\(reason)\n".utf8), to: setAsideMarkerPath, mode: 0o600)
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: keysPath) else { return [] }
        let differing = names.sorted().filter { name in
            let mine = fm.contents(atPath: keysPath + "/" + name), theirs = fm.contents(atPath: restored.keysPath + "/" + name)
            if mine == theirs { return false }
            guard name == BackupKeyRing.fileName, let old = try? BackupKeyRing.load(keysPath: keysPath),
                  let new = try? BackupKeyRing.load(keysPath: restored.keysPath) else { return true }
            return old.ids.contains { id in
                guard let mine = old.keys[id], let theirs = new.keys[id] else { return true }
                return !mine.isEqual(to: theirs)
            }
        }
        guard differing.isEmpty else { return differing }
        do { try fm.removeItem(atPath: keysPath) } catch {
            throw StoreError(.permission, "cannot remove the old keys in \(keysPath): \(error.localizedDescription)")
        }
        return []
    }

    /// Every use of a device directory but reading refuses a set-aside one.
    func refuseSetAside() throws(StoreError) {
        guard let aside = setAside else { return }
        throw StoreError(.conflict, "\(path) holds a replica of device \(aside.device.hex.prefix(12)) set aside by \(aside.reason): "
                         + "it is not a device and never syncs; read it with 'quire --home \(path) ls|get', "
                         + "and put what you want back on the device with 'quire put'")
    }

    /// The replica of this device, or of a set-aside folder, for commands
    /// that only read (`get`, `ls`).
    public func openForReading(clock: any Clock = SystemClock()) throws(StoreError) -> ReplicaStore {
        guard let aside = setAside else { return try open(clock: clock).1 }
        try checkPermissions()
        return try ReplicaStore(path: databasePath, deviceID: aside.device, clock: clock)
    }
}
