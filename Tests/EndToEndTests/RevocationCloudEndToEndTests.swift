import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync
import XCTest

/// The revoked-device scenario on the cloud-folder path, with real
/// processes: the phone is revoked, the backup key rotates, and the phone
/// (which keeps every key it held, and still reaches the cloud folder)
/// cannot open the anchor written since; the anchor it forges with its old
/// key at a higher generation, with a commit record to match, moves no
/// honest device, not even one put back from a backup older than the
/// revocation; a rebuild from the recovery file does not take it either.
final class RevocationCloudEndToEndTests: CloudDrillTestCase {
    var daemons: [SyncDaemon] = []

    override func tearDown() {
        stopAll()
        super.tearDown()
    }

    func start(_ names: [String]) throws { for n in names { daemons.append(try SyncDaemon(home: home(n), relay: relay, env: drill)) } }
    func stopAll() { daemons.forEach { $0.stop() }; daemons = [] }
    var output: String { daemons.map(\.output).joined(separator: "\n") }

    func notes(_ name: String) throws -> String { try quireOK(["ls", "notebook"], home: home(name)).stdout }
    func put(_ name: String, _ title: String) throws {
        try quireOK(["put", "notebook", title], home: home(name), stdin: Array("words of \(title)\n".utf8))
    }
    func statusText(_ name: String) throws -> String { try quireOK(["status"], home: home(name)).stdout }
    func trust(_ name: String, of device: String) throws -> String? {
        let list = (try jsonObject(try quireOK(["devices", "--json"], home: home(name)).stdout) as! [String: Any])["devices"] as! [[String: Any]]
        return list.first { $0["name"] as? String == device }?["trust"] as? String
    }

    /// The account id and the original backup key, read from a device directory as a thief would.
    func stolenKeys(_ name: String) throws -> (account: [UInt8], original: SecretBytes, ring: BackupKeyRing) {
        let keys = home(name) + "/keys"
        let pub = try XCTUnwrap(FileManager.default.contents(atPath: keys + "/account.pub")).map { $0 }
        let original = SecretBytes(copying: try XCTUnwrap(FileManager.default.contents(atPath: keys + "/backup.key")).map { $0 })
        return (SHA256.hash(pub), original, try BackupKeyRing.load(keysPath: keys))
    }

    func testARevokedDeviceCannotReadTheRotatedAnchorAndItsForgeryMovesNoHonestDevice() throws {
        let made = try quireOK(["init", "--name", "laptop", "--relay", relay, "--cloud", cloud, "--kdf", "interactive"], home: home("laptop")).stdout
        let code = try XCTUnwrap(made.split(separator: "\n").first { $0.hasPrefix("recovery code: ") }).dropFirst("recovery code: ".count)
        for n in ["phone", "tablet"] {
            try quireOK(["invite", "--out", dir + "/invite-" + n, "--kdf", "interactive"], home: home("laptop"), env: env)
            try quireOK(["init", "--join", dir + "/invite-" + n, "--name", n, "--relay", relay, "--cloud", cloud], home: home(n), env: env)
        }
        for title in ["Kept one", "Kept two", "Doomed"] { try put("laptop", title) }
        try start(["laptop", "phone", "tablet"])
        XCTAssertTrue(try waitForEqualDigests(["laptop", "phone", "tablet"].map(home), timeout: 40), output)
        try quireOK(["rm", "notebook", "Doomed"], home: home("laptop"))
        XCTAssertTrue(eventually(40) { ["laptop", "phone", "tablet"].allSatisfy { (try? self.generation($0)) == 1 } }, "a first barrier: " + output)
        stopAll()
        let tabletBackup = dir + "/tablet.qbackup"
        try quireOK(["backup", "--to", tabletBackup], home: home("tablet"))

        // The laptop revokes the phone: the key rotates, the anchor is sealed again under it.
        let revoked = try quireOK(["devices", "revoke", "phone"], home: home("laptop")).stdout
        XCTAssertTrue(revoked.contains("the backup key is rotated"), revoked)
        XCTAssertTrue(revoked.contains("the revocation is in this device's copy of the device log; "
                                       + "sealed again under the new key: the anchor at generation 1 and the commit record"), revoked)
        XCTAssertTrue(revoked.contains("take its access to the cloud folder away"), revoked)
        try start(["laptop", "tablet"])
        XCTAssertTrue(eventually(30) { (try? self.trust("tablet", of: "phone")) == "revoked" }, output)
        try put("laptop", "After revocation")
        try put("laptop", "Doomed too")
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("tablet")], timeout: 30), output)
        try quireOK(["rm", "notebook", "Doomed too"], home: home("laptop"))
        XCTAssertTrue(eventually(40) { (try? self.generation("laptop")) == 2 && (try? self.generation("tablet")) == 2 }, "a barrier after the revocation: " + output)
        stopAll()
        XCTAssertTrue(FileManager.default.fileExists(atPath: home("tablet") + "/keys/backup-keys"), "the tablet keeps the new key")
        let shown = try quireOK(["devices"], home: home("tablet")).stdout
        XCTAssertTrue(shown.contains("backup key: rotated by 1 revocation; this device holds every key"), shown)
        let honest = try notes("laptop")
        XCTAssertTrue(honest.contains("After revocation"))

        // The phone, holding everything it held, cannot open the newest anchor.
        let thief = try stolenKeys("phone")
        let folder = CloudFolder(path: cloud, accountID: thief.account)
        let newest = try XCTUnwrap(try folder.candidates().first)
        XCTAssertEqual(newest.header.generation, 2)
        XCTAssertFalse(newest.header.keySet.isEmpty, "sealed under the rotation's key")
        let bytes = Array(try XCTUnwrap(FileManager.default.contents(atPath: newest.path)))
        XCTAssertThrowsError(try AnchorFile.open(bytes, accountID: thief.account, key: thief.original))
        XCTAssertNil(thief.ring.key(for: newest.header.keySet, original: thief.original), "it lacks the key of its own revocation")
        // Turned on, never told of its revocation by a sibling, it reads it
        // in the folder's copies of the device log.
        daemons.append(try SyncDaemon(home: home("phone"), relay: relay, env: drill))
        XCTAssertTrue(eventually(15) { (try? self.statusText("phone"))?.contains("this device was REVOKED by 'laptop'") ?? false },
                      (try? statusText("phone")) ?? "-")
        stopAll()
        XCTAssertFalse(try notes("phone").contains("After revocation"))

        // It forges generation 9 with its original key: its own note only, and a commit record at 9.
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 0x77, count: 16))!, incarnation: 1)
        let forgedNote = Row.tombstone(.notebook, RowKey(bytes: [UInt8](repeating: 0x66, count: 16))!, context: VersionVector())
            .edited(by: actor, to: .note(Note(title: "Forged", body: Array("not yours\n".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        let forged = try AnchorFile.sealFormat1(AnchorSnapshot(generation: 9, rows: [forgedNote]), accountID: thief.account,
                                                backupKey: thief.original, at: Timestamp(seconds: Int64(Date().timeIntervalSince1970)))
        let forgedPath = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (conflicted copy).qanchor")
        XCTAssertTrue(FileManager.default.createFile(atPath: forgedPath, contents: Data(forged)))
        let record = try AEAD.seal([0, 0, 0, 0, 0, 0, 0, 9], associatedData: Array("quire.commit-record".utf8) + thief.account, with: thief.original)
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.commitRecordPath, contents: Data(record)))

        // The honest devices start: they refuse it, say so, and lose nothing.
        try start(["laptop", "tablet"])
        XCTAssertTrue(eventually(15) { (try? self.statusText("laptop"))?.contains("REFUSED an anchor above this device's generation 2") ?? false },
                      (try? statusText("laptop")) ?? "-")
        sleep(3)
        stopAll()
        for n in ["laptop", "tablet"] {
            XCTAssertEqual(try generation(n), 2, "\(n) did not move to the forged generation")
            XCTAssertEqual(try notes(n), honest, "\(n) lost or gained notes")
        }
        XCTAssertTrue(try statusText("laptop").contains(forgedPath), "the status names the file to delete")

        // The tablet put back from its backup, older than the revocation: its
        // log learns it again from the folder's copies, with no sibling, so the
        // forgery is refused. The forged commit record hides which generation
        // the fleet committed, so it does not recover from the honest anchor
        // either until a sibling at generation 2 is heard.
        // The restore's own anchor check reads those copies before it returns.
        let restored = try quireOK(["restore", "--from", tabletBackup], home: home("tablet")).stdout
        XCTAssertEqual(try generation("tablet"), 1)
        XCTAssertEqual(try trust("tablet", of: "phone"), "revoked", "learned again from the folder's copies, though the backup predates it")
        let log = (try? String(contentsOfFile: home("tablet") + "/quire.log", encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("anchor check: cloud folder: learned 1 roster statement from the copies of the device log"), log)
        XCTAssertTrue(restored.contains("behind the fleet's anchor"), restored)
        try start(["tablet"])
        XCTAssertTrue(eventually(20) { (try? self.statusText("tablet"))?.contains("REFUSED an anchor above this device's generation 1") ?? false },
                      (try? statusText("tablet")) ?? "-")
        XCTAssertEqual(try generation("tablet"), 1, "not recovered from the forgery")
        XCTAssertFalse(try notes("tablet").contains("Forged"))
        try start(["laptop"])
        XCTAssertTrue(eventually(40) { (try? self.generation("tablet")) == 2 }, "caught up once the laptop is heard: " + output)
        XCTAssertTrue(eventually(20) { (try? self.trust("tablet", of: "phone")) == "revoked" }, output)
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("tablet")], timeout: 30), output)
        stopAll()
        XCTAssertEqual(try notes("tablet"), honest)

        // Every device lost, and the honest anchor gone from the folder too:
        // only the forgery opens, so nothing is made, and the words say why.
        let aside = dir + "/honest.qanchor"
        try FileManager.default.moveItem(atPath: newest.path, toPath: aside)
        let refused = try quire(["init", "--from-cloud", cloud, "--name", "rebuilt"], home: home("rebuilt"),
                                env: ["QUIRE_RECOVERY_CODE": String(code)])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("holds anchors of this account, but none may be used"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("the anchor at generation 9"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("nothing was created"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("rebuilt") + "/prefs.json"), "no device was made")
        try FileManager.default.moveItem(atPath: aside, toPath: newest.path)

        // With it back, the rebuild takes the honest anchor, not the forgery.
        let rebuilt = try quireOK(["init", "--from-cloud", cloud, "--name", "rebuilt"], home: home("rebuilt"),
                                  env: ["QUIRE_RECOVERY_CODE": String(code)])
        XCTAssertTrue(rebuilt.stdout.contains("generation 2"), rebuilt.stdout)
        XCTAssertTrue(rebuilt.stderr.contains("not used: the anchor at generation 9"), rebuilt.stderr)
        XCTAssertTrue(try notes("rebuilt").contains("After revocation"))
        XCTAssertFalse(try notes("rebuilt").contains("Forged"))
    }

    /// Every sibling revoked: `sync --until-converged` says there is nobody
    /// to converge with (exit 3), never "converged".
    func testUntilConvergedWithEverySiblingRevokedSaysThereIsNobody() throws {
        try quireOK(["init", "--name", "laptop", "--relay", relay], home: home("laptop"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("laptop"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "phone", "--relay", relay], home: home("phone"), env: env)
        try start(["laptop", "phone"])
        XCTAssertTrue(eventually(30) { (try? self.trust("laptop", of: "phone")) == "trusted" }, output)
        stopAll()
        try quireOK(["devices", "revoke", "phone"], home: home("laptop"))
        let sync = try quire(["sync", "--relay", relay, "--until-converged", "--timeout", "20"], home: home("laptop"))
        XCTAssertEqual(sync.status, 3, sync.stdout + sync.stderr)
        XCTAssertTrue(sync.stderr.contains("nobody to converge with: every other device of the account was revoked ('phone')"), sync.stderr)
        XCTAssertFalse(sync.stdout.contains("converged with every sibling"), sync.stdout)
        let help = try quireOK(["sync", "--help"], home: home("laptop")).stdout
        XCTAssertTrue(help.contains("nobody to converge with") && help.contains("exits 3"), help)
    }
}
