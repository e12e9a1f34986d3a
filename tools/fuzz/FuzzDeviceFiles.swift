import Foundation
import QuireCore
import QuireCrypto
import QuireStore

// libFuzzer entry for the files of a device directory that come back from
// outside: prefs.json (edited by hand, put back by a copy) and a device
// backup file ('quire restore --from FILE'). The first byte picks:
//   even: prefs.json, through PrefsFile.load; what loads saves and loads
//         back to the same prefs;
//   odd:  a backup file, through DeviceBackup(decoding:); what decodes
//         re-encodes and decodes to the same backup.
// Built and run by tools/fuzz/run.

nonisolated(unsafe) private var scratch = ""

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    scratch = fuzzScratchDirectory("device-files")
    writeSeeds(makeSeeds)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] % 2 == 0 {
        let file = PrefsFile(path: scratch + "/prefs.json")
        check(FileManager.default.createFile(atPath: file.path, contents: Data(input)), "the scratch file is written")
        if let prefs = try? file.load() {
            check((try? file.save(prefs)) != nil, "loaded prefs save")
            check((try? file.load()) == prefs, "saved prefs load back the same")
        }
    } else if let backup = try? DeviceBackup(decoding: input, source: "fuzz") {
        check(backup.files.contains { $0.path == "replica.sqlite" } && backup.files.contains { $0.path == "prefs.json" },
              "a backup holds the replica and the prefs")
        check(backup.files.allSatisfy { !$0.path.hasPrefix("/") && !$0.path.contains("..") && $0.mode & ~0o600 == 0 },
              "a backup restores only inside the device directory, never wider than 0600")
        let again = try? DeviceBackup(decoding: backup.encoded(), source: "fuzz")
        check(again?.encoded() == backup.encoded(), "a backup re-encodes to itself")
    }
    return 0
}

/// Real prefs (fresh, and with every optional set) and a real backup.
private func makeSeeds() throws -> [[UInt8]] {
    let home = DeviceHome(path: scratch + "/seed-device")
    defer { try? FileManager.default.removeItem(atPath: home.path) }
    let (identity, store) = try home.create(name: "seed")
    let fresh = Array(FileManager.default.contents(atPath: home.prefs.path)!)
    try home.prefs.update { p in
        p.cloud = "/srv/cloud"
        p.relay = "redis://127.0.0.1:6379"
        p.role = .homebase
        p.generation = 7
        p.backupEnabled = false
        p.recallTimeoutSeconds = 2.5
    }
    let full = Array(FileManager.default.contents(atPath: home.prefs.path)!)
    let real = try DeviceBackup.capture(home, store: store, identity: identity, at: Timestamp(seconds: 1_800_000_000))
    // The decoder never reads inside the database: its first page is enough,
    // and keeps the seed within the run's -max_len.
    let backup = DeviceBackup(takenAt: real.takenAt, deviceID: real.deviceID, deviceName: real.deviceName,
                              files: real.files.map { $0.path == "replica.sqlite" ? ($0.path, $0.mode, Array($0.bytes.prefix(512))) : $0 })
    return [[0] + fresh, [0] + full, [1] + backup.encoded()]
}
