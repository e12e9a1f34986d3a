import Foundation
import QuireCore

/// A backup of one device directory, in one file: the replica (a
/// consistent copy taken with SQLite's online backup API while the device
/// runs), prefs and keys. Never the cloud folder, and never the state a
/// restore must not bring back from the past (sync replay floors and
/// status, logs, the scratch area, mount pid files).
///
/// The file holds the device's private keys, so it is written with mode
/// 0600 (temporary file, fsync, rename); keep it where only you can read it.
/// Format: canonical CBOR `{1: "quire-device-backup", 2: 1 (format),
/// 3: taken at (seconds), 4: device id, 5: device name, 6: [[path, mode, bytes], ...]}`.
public struct DeviceBackup: Sendable {
    public static let kind = "quire-device-backup"
    public static let formatVersion: UInt64 = 1

    public var takenAt: Timestamp
    public var deviceID: DeviceID
    public var deviceName: String
    /// Paths relative to the device directory, with their modes.
    public var files: [(path: String, mode: UInt32, bytes: [UInt8])]

    /// Captures `home` while it may be in use (the replica through the
    /// store's online backup, so a running mount or sync is not stopped).
    public static func capture(_ home: DeviceHome, store: ReplicaStore, identity: Identity, at: Timestamp) throws(StoreError) -> DeviceBackup {
        let prefs = try home.prefs.load()
        let scratch = home.path + "/.backup-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try store.backup(to: scratch)
        guard let replica = FileManager.default.contents(atPath: scratch) else {
            throw StoreError(.notFound, "the backup copy of the replica at \(scratch) cannot be read")
        }
        var files: [(String, UInt32, [UInt8])] = [("replica.sqlite", 0o600, Array(replica))]
        guard let prefsBytes = FileManager.default.contents(atPath: home.prefsPath) else {
            throw StoreError(.notFound, "no prefs at \(home.prefsPath)")
        }
        files.append(("prefs.json", 0o600, Array(prefsBytes)))
        let keyNames = (try? FileManager.default.contentsOfDirectory(atPath: home.keysPath)) ?? []
        for name in keyNames.sorted() where !name.hasPrefix(".") {
            guard let bytes = FileManager.default.contents(atPath: home.keysPath + "/" + name) else { continue }
            files.append(("keys/" + name, 0o600, Array(bytes)))
        }
        return DeviceBackup(takenAt: at, deviceID: identity.deviceID, deviceName: prefs.deviceName,
                            files: files.map { (path: $0.0, mode: $0.1, bytes: $0.2) })
    }

    public func encoded() -> [UInt8] {
        CBORWriter.encode(.map([
            (.unsigned(1), .text(DeviceBackup.kind)),
            (.unsigned(2), .unsigned(DeviceBackup.formatVersion)),
            (.unsigned(3), .int(takenAt.seconds)),
            (.unsigned(4), .bytes(deviceID.bytes)),
            (.unsigned(5), .text(deviceName)),
            (.unsigned(6), .array(files.map { .array([.text($0.path), .unsigned(UInt64($0.mode)), .bytes($0.bytes)]) })),
        ]))
    }

    public init(takenAt: Timestamp, deviceID: DeviceID, deviceName: String, files: [(path: String, mode: UInt32, bytes: [UInt8])]) {
        self.takenAt = takenAt
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.files = files
    }

    /// Reads a backup file, refusing anything that is not one (or names a
    /// path outside the device directory).
    public init(decoding bytes: [UInt8], source: String) throws(StoreError) {
        do {
            let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 8, maxItemLength: Int(Int32.max))).asFieldMap()
            guard try f.required(1, "kind").asText() == DeviceBackup.kind else {
                throw StoreError(.invalidInput, "\(source) is not a quire device backup")
            }
            let version = try f.required(2, "format").asUInt()
            guard version == DeviceBackup.formatVersion else {
                throw StoreError(.invalidInput, "\(source) is a backup of format \(version), which this quire does not read; upgrade quire")
            }
            takenAt = Timestamp(seconds: try f.required(3, "taken at").asInt())
            guard let id = ID16(bytes: try f.required(4, "device").asBytes()) else { throw StoreError(.invalidInput, "\(source): bad device id") }
            deviceID = id
            deviceName = try f.required(5, "name").asText()
            var files: [(path: String, mode: UInt32, bytes: [UInt8])] = []
            for item in try f.required(6, "files").asArray() {
                let parts = try item.asArray()
                guard parts.count == 3 else { throw StoreError(.invalidInput, "\(source): a malformed file entry") }
                let path = try parts[0].asText()
                let allowed = path == "replica.sqlite" || path == "prefs.json"
                    || (path.hasPrefix("keys/") && !path.dropFirst(5).contains("/") && !path.contains("..") && path.count > 5)
                guard allowed else { throw StoreError(.invalidInput, "\(source) names a file quire does not restore: '\(path)'") }
                files.append((path, UInt32(clamping: try parts[1].asUInt()) & 0o600, try parts[2].asBytes()))
            }
            guard files.contains(where: { $0.path == "replica.sqlite" }), files.contains(where: { $0.path == "prefs.json" }) else {
                throw StoreError(.invalidInput, "\(source) lacks the replica or the prefs")
            }
            self.files = files
        } catch let e as StoreError {
            throw e
        } catch {
            throw StoreError(.invalidInput, "\(source) is not a readable quire device backup: \(error)")
        }
    }

    /// Writes the backup file atomically with mode 0600: whole or not at
    /// all, so a replaced backup stays intact until the new one is complete.
    /// `replacing: false` never replaces a file already at `path`.
    public func write(to path: String, replacing: Bool = true) throws(StoreError) {
        try AtomicFile.write(encoded(), to: path, mode: 0o600, replacing: replacing)
    }
}
