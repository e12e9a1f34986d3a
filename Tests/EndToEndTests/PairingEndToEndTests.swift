import Foundation
import QuireTestSupport
import XCTest

/// Pairing with real processes: an invite admits one device; the same
/// invite used again (a leaked invite file) admits nobody, and the device
/// that refused it says why.
final class PairingEndToEndTests: SyncEndToEndBase {
    func trust(_ name: String, on device: String) throws -> String? {
        let r = try quireOK(["devices", "--json"], home: home(device))
        let list = (try jsonObject(r.stdout) as! [String: Any])["devices"] as! [[String: Any]]
        return list.first { $0["name"] as? String == name }?["trust"] as? String
    }

    func testAReusedInviteAdmitsNobody() throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        let made = try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive", "--passphrase-words"], home: home("a"))
        let words = try XCTUnwrap(made.stderr.split(separator: "\n").first { $0.hasPrefix("passphrase: ") }).dropFirst("passphrase: ".count)
        XCTAssertEqual(words.split(separator: "-").count, 5, String(words))
        let invite = try String(contentsOfFile: dir + "/invite", encoding: .utf8)
        XCTAssertFalse(invite.contains("quire-invite-1."))
        let pass = ["QUIRE_PASSPHRASE": String(words)]
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: pass)
        try startAll(["a", "b"])
        XCTAssertTrue(eventually(30) { (try? self.trust("b", on: "a")) == "trusted" }, daemons.map(\.output).joined())
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30))
        XCTAssertTrue(FileManager.default.fileExists(atPath: home("b") + "/keys/backup.key"), "b received the backup key when admitted")

        // The same invite file again, later: refused by the device that
        // hears it, which tells the joiner why. The join says so at once and
        // fails, keeping no device directory (a new invite can use it).
        let refused = try quire(["init", "--join", dir + "/invite", "--name", "c", "--relay", relay], home: home("c"), env: pass)
        XCTAssertEqual(refused.status, 1, refused.stdout)
        XCTAssertTrue(refused.stderr.contains("not joined: a device of the account refused this device: its invite was already used"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("c")), "nothing kept")
        // In a folder that was there before, only what the join made goes.
        try FileManager.default.createDirectory(atPath: home("d"), withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: home("d") + "/mine.txt", contents: Data("keep".utf8)))
        XCTAssertEqual(try quire(["init", "--join", dir + "/invite", "--name", "d", "--relay", relay], home: home("d"), env: pass).status, 1)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: home("d")), ["mine.txt"])
        // Joined while nobody listened, the refusal reaches the device's daemon.
        stopAll()
        let joined = try quireOK(["init", "--join", dir + "/invite", "--name", "c", "--relay", relay, "--json"], home: home("c"), env: pass)
        XCTAssertEqual((try jsonObject(joined.stdout) as? [String: Any])?["admitted"] as? Bool, false)
        try startAll(["a", "b"])
        daemons.append(try SyncDaemon(home: home("c"), relay: relay))
        XCTAssertTrue(eventually(20) { self.daemons[0].output.contains("already used") }, daemons[0].output)
        XCTAssertTrue(eventually(20) { self.daemons[2].output.contains("refused to admit this device: its invite was already used") },
                      daemons[2].output)
        XCTAssertTrue(eventually(10) { ((try? quire(["status"], home: self.home("c")))?.stdout ?? "").contains("NOT ADMITTED") },
                      (try? quire(["status"], home: home("c")))?.stdout ?? "")
        try put(home("a"), ["notebook", "Private"], body: "c must never see this")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30))
        sleep(2)
        XCTAssertNotEqual(try trust("c", on: "a"), "trusted")
        XCTAssertNotEqual(try trust("c", on: "b"), "trusted")
        XCTAssertFalse(try quireOK(["ls", "notebook"], home: home("c")).stdout.contains("Private"))
        XCTAssertTrue(try quireOK(["devices"], home: home("c")).stdout.contains("waiting to be admitted"))
    }

    /// `init --join` waits for a listening sibling to admit it (not a fixed
    /// time) and says what happened: admitted, or nobody listening. It pulls
    /// the roster only: the notes are the daemon's to fetch, in full.
    func testJoiningSaysWhetherASiblingAdmittedIt() throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        let pass = ["QUIRE_PASSPHRASE": "a passphrase long enough"]
        try quireOK(["invite", "--out", dir + "/invite-b", "--kdf", "interactive"], home: home("a"), env: pass)
        try quireOK(["invite", "--out", dir + "/invite-c", "--kdf", "interactive"], home: home("a"), env: pass)
        try quireOK(["invite", "--out", dir + "/invite-d", "--kdf", "interactive"], home: home("a"), env: pass)

        // Nobody listens: the join says so, and the device waits to be admitted.
        let alone = try quireOK(["init", "--join", dir + "/invite-b", "--name", "b", "--relay", relay], home: home("b"), env: pass)
        XCTAssertTrue(alone.stdout.contains("no sibling is listening now"), alone.stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: home("b") + "/keys/enrolment"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("b") + "/keys/backup.key"))

        // a listens: the join returns once a admitted it, holding the backup key.
        try quireOK(["put", "notebook", "Kept on a"], home: home("a"), stdin: Array("words\n".utf8))
        try startAll(["a"])
        let log = home("a") + "/quire.log"
        XCTAssertTrue(eventually(10) { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("sync: started on") })
        let admitted = try quireOK(["init", "--join", dir + "/invite-c", "--name", "c", "--relay", relay], home: home("c"), env: pass)
        XCTAssertTrue(admitted.stdout.contains("admitted by a sibling that is listening (heard from 'a')"), admitted.stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: home("c") + "/keys/backup.key"), "c received the backup key when admitted")
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("c") + "/keys/enrolment"))
        XCTAssertFalse(try quireOK(["ls", "notebook"], home: home("c")).stdout.contains("Kept on a"))
        daemons.append(try SyncDaemon(home: home("c"), relay: relay))
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("c")], timeout: 30))
        XCTAssertTrue(try quireOK(["ls", "notebook"], home: home("c")).stdout.contains("Kept on a"))
        XCTAssertEqual(try trust("c", on: "a"), "trusted")
        let json = try jsonObject(try quireOK(["init", "--join", dir + "/invite-d", "--name", "d", "--relay", relay, "--json"],
                                              home: home("d"), env: pass).stdout) as? [String: Any]
        XCTAssertEqual(json?["admitted"] as? Bool, true)
        XCTAssertTrue((json?["heardFrom"] as? [String] ?? []).contains("a"), "\(json ?? [:])")   // and c, if it answered by then
    }

    /// An invite made by a device that was revoked before anyone admitted
    /// its joiner admits nobody, and the joiner is told why (it would
    /// otherwise wait to be admitted for ever).
    func testTheJoinerOfARevokedDevicesInviteIsToldWhy() throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        let pass = ["QUIRE_PASSPHRASE": "a passphrase long enough"]
        try quireOK(["invite", "--out", dir + "/invite-b", "--kdf", "interactive"], home: home("a"), env: pass)
        try quireOK(["init", "--join", dir + "/invite-b", "--name", "b", "--relay", relay], home: home("b"), env: pass)
        try startAll(["a", "b"])
        XCTAssertTrue(eventually(30) { (try? self.trust("b", on: "a")) == "trusted" }, daemons.map(\.output).joined())
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30))
        stopAll()
        // a invites while b is away; b revokes a before hearing of the invite.
        try quireOK(["invite", "--out", dir + "/invite-j", "--kdf", "interactive"], home: home("a"), env: pass)
        try quireOK(["devices", "revoke", "a"], home: home("b"))
        try startAll(["b"])
        let log = home("b") + "/quire.log"
        XCTAssertTrue(eventually(10) { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("sync: started on") })
        let refused = try quire(["init", "--join", dir + "/invite-j", "--name", "j", "--relay", relay], home: home("j"), env: pass)
        XCTAssertEqual(refused.status, 1, refused.stdout)
        XCTAssertTrue(refused.stderr.contains("refused this device: its invite was made by 'a', which was revoked"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("j")), "nothing kept")
        XCTAssertNotEqual(try trust("j", on: "b"), "trusted")
    }
}
