import Foundation
import QuireCore

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
