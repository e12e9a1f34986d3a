import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync
import XCTest

/// Device directories made before backup-key rotation (Fixtures/schema8:
/// one backup key, no `keys/backup-keys`) with an anchor in the format
/// quire wrote then (format 1, the original key): after the upgrade the
/// original key is epoch 0, the old anchor and commit record still open,
/// and a device behind them recovers from them as before; the anchors it
/// writes afterwards are format 2 under the same key.
final class AnchorUpgradeEndToEndTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func testAnAnchorFromBeforeRotationStillOpensAndIsRecoveredFrom() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/schema8/a").path
        let home = dir + "/a", cloud = dir + "/cloud"
        XCTAssertEqual(shell("cp -a '\(source)' '\(home)' && chmod 700 '\(home)' '\(home)/keys' && chmod 600 '\(home)'/keys/*").status, 0)
        try FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home + "/keys/backup-keys"))

        // The fleet's anchor, as the previous quire wrote it: generation 1,
        // this device's rows and one more note, and a commit record at 1.
        let (account, original, rows): ([UInt8], SecretBytes, [Row]) = try {
            let (identity, store) = try DeviceHome(path: home).open()
            var rows: [Row] = []
            for ns in Namespace.allCases { rows += try store.rows(ns, from: [], to: nil) }
            return (identity.userIDHash, identity.backupKey, rows)
        }()
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 0x42, count: 16))!, incarnation: 1)
        let extra = Row.tombstone(.notebook, RowKey(bytes: [UInt8](repeating: 0x43, count: 16))!, context: VersionVector())
            .edited(by: actor, to: .note(Note(title: "From the old anchor", body: Array("kept by the fleet\n".utf8),
                                               createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        let folder = CloudFolder(path: cloud, accountID: account)
        try folder.write(try AnchorFile.sealFormat1(AnchorSnapshot(generation: 1, rows: rows + [extra]), accountID: account,
                                                    backupKey: original, at: Timestamp(seconds: 1_800_000_000)))
        let record = try AEAD.seal([0, 0, 0, 0, 0, 0, 0, 1], associatedData: Array("quire.commit-record".utf8) + account, with: original)
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.commitRecordPath, contents: Data(record)))

        try quireOK(["config", "cloud", cloud], home: home)
        let devices = try quireOK(["devices"], home: home).stdout
        XCTAssertTrue(devices.contains("backup key: the original one (no revocation has rotated it)"), devices)
        let daemon = try SyncDaemon(home: home, relay: "local:\(dir)/relay")
        let recovered = eventually(15) {
            ((try? jsonObject(try quireOK(["config", "--json"], home: home).stdout)) as? [String: Any])?["generation"] as? Int == 1
        }
        daemon.stop()
        XCTAssertTrue(recovered, daemon.output)
        XCTAssertTrue(try quireOK(["ls", "notebook"], home: home).stdout.contains("From the old anchor"))
        XCTAssertTrue(try quireOK(["status"], home: home).stdout.contains("recovered from the cloud anchor"))
        XCTAssertEqual(try folder.candidates().first?.header.format, 1, "read, not rewritten: only a barrier writes the anchor")
        // What this quire writes under the same, original key is format 2 with an empty key set, and opens.
        let keys = try AnchorKeys.original(original, accountKey: try SigningPublicKey(bytes: Array(
            try XCTUnwrap(FileManager.default.contents(atPath: home + "/keys/account.pub")))))
        let next = try AnchorFile.seal(AnchorSnapshot(generation: 2, rows: []), accountID: account, keys: keys, at: Timestamp(seconds: 2))
        XCTAssertEqual(try AnchorFile.header(of: next, accountID: account).keySet, [])
        XCTAssertEqual(try AnchorFile.open(next, accountID: account, key: original).1.generation, 2, "epoch 0 is the original key")
    }
}
