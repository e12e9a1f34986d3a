import Foundation
import XCTest

/// The cases that made rows a join-semilattice, end to end: real `quire`
/// processes, devices made with init + invite + join, `quire sync` daemons
/// on a local relay between chosen pairs, a device directory copied back.
final class ReplicaCorrectnessTests: XCTestCase {
    var dir = ""
    let env = ["QUIRE_PASSPHRASE": "correct horse battery staple"]
    var relay: String { "local:\(dir)/relay" }
    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func home(_ name: String) -> String { dir + "/" + name }

    func makeDevices(_ names: [String]) throws {
        try quireOK(["init", "--name", names[0], "--relay", relay], home: home(names[0]))
        for n in names.dropFirst() {
            // An invite admits one device: one each.
            try quireOK(["invite", "--out", dir + "/invite-" + n, "--kdf", "interactive"], home: home(names[0]), env: env)
            try quireOK(["init", "--join", dir + "/invite-" + n, "--name", n, "--relay", relay], home: home(n), env: env)
        }
    }

    /// Runs `quire sync` on exactly these devices until their digests agree.
    func sync(_ names: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let daemons = try names.map { try SyncDaemon(home: home($0), relay: relay) }
        let ok = try waitForEqualDigests(names.map(home), timeout: 30)
        daemons.forEach { $0.stop() }
        XCTAssertTrue(ok, "did not converge: \(daemons.map(\.output).joined(separator: "\n"))", file: file, line: line)
    }

    /// Writes of `device` no sibling has confirmed (`status --json`).
    func unconfirmed(_ device: String) throws -> Int {
        try XCTUnwrap((try jsonObject(try quireOK(["status", "--json"], home: home(device)).stdout) as? [String: Any])?["unconfirmedWrites"] as? Int)
    }

    func setting(_ name: String, _ device: String) throws -> String? {
        let r = try quire(["get", "settings", name], home: home(device))
        return r.status == 0 ? r.stdout.trimmingCharacters(in: .newlines) : nil
    }

    /// Case 1: the delete saw B's edit, not A's; whatever the meeting
    /// order, every device ends with A's value and B's never comes back.
    func testTheSameEditsGiveTheSameAnswerWhateverTheMeetingOrder() throws {
        try makeDevices(["a", "b", "c"])
        try quireOK(["put", "settings", "color", "p0"], home: home("a"))
        try sync(["a", "b", "c"])
        try quireOK(["put", "settings", "color", "a"], home: home("a"))
        sleep(1)
        try quireOK(["put", "settings", "color", "b"], home: home("b"))
        try sync(["b", "c"])
        try quireOK(["rm", "settings", "color"], home: home("c"))
        let snapshot = dir + "/snapshot"
        XCTAssertEqual(shell("mkdir '\(snapshot)' && cp -a '\(home("a"))' '\(home("b"))' '\(home("c"))' '\(snapshot)/'").status, 0)

        // A and B meet first, then all three.
        try sync(["a", "b"])
        try sync(["a", "b", "c"])
        let first = try ["a", "b", "c"].map { try setting("color", $0) }
        // Same devices from the same point, A and C meet first.
        for n in ["a", "b", "c"] { XCTAssertEqual(shell("rm -rf '\(home(n))' && cp -a '\(snapshot)/\(n)' '\(home(n))'").status, 0) }
        try sync(["a", "c"])
        try sync(["a", "b", "c"])
        let second = try ["a", "b", "c"].map { try setting("color", $0) }
        XCTAssertEqual(first, ["a", "a", "a"], "the one write the delete never saw survives, everywhere")
        XCTAssertEqual(second, first, "the meeting order does not decide the outcome")
    }

    /// Case 2: a device directory copied back, an edit that synced lost,
    /// an offline edit under the counter the fleet already saw: both edits
    /// survive on every device, and status says what happened.
    func testADeviceCopiedBackKeepsItsOfflineEditAndSaysSo() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "plans", "Trip", "--notes", "v1"], home: home("a"))
        try quireOK(["put", "contacts", "Ada", "--email", "ada@example.org"], home: home("a"))
        try sync(["a", "b"])
        XCTAssertEqual(shell("cp -a '\(home("a"))' '\(dir)/a-copy'").status, 0)
        try quireOK(["put", "plans", "Trip", "--notes", "v2 before the copy came back"], home: home("a"))
        try sync(["a", "b"])
        try quireOK(["put", "plans", "Trip", "--notes", "v3 by the phone"], home: home("b"))
        XCTAssertEqual(shell("rm -rf '\(home("a"))' && mv '\(dir)/a-copy' '\(home("a"))'").status, 0)
        try quireOK(["put", "plans", "Trip", "--notes", "written offline after the copy came back"], home: home("a"))
        try quireOK(["put", "contacts", "Ada", "--email", "ada@example.org", "--phone", "123"], home: home("a"))
        try sync(["a", "b"])
        for n in ["a", "b"] {
            let trip = try jsonObject(try quireOK(["get", "plans", "Trip", "--json"], home: home(n)).stdout) as! [String: Any]
            XCTAssertEqual((trip["heads"] as? [String])?.count, 2, "both edits are kept on \(n): \(trip)")
            let ada = try quireOK(["get", "contacts", "Ada"], home: home(n)).stdout
            XCTAssertTrue(ada.contains("123"), "the contact edit made offline reached \(n): \(ada)")
        }
        let status = try quireOK(["status"], home: home("a")).stdout
        XCTAssertTrue(status.contains("rolled back"), status)
        // 'cp -a' made new files: the device knew before its first write.
        XCTAssertTrue(status.contains("its replica file is not the one it last wrote to"), status)
        // Editing the plan joins both versions.
        try quireOK(["put", "plans", "Trip", "--notes", "read both"], home: home("a"))
        try sync(["a", "b"])
        let joined = try jsonObject(try quireOK(["get", "plans", "Trip", "--json"], home: home("b")).stdout) as! [String: Any]
        XCTAssertEqual((joined["heads"] as? [String])?.count, 1)
    }

    /// Case 5: a value that changes only its Unicode normalization is an
    /// edit, it syncs, and the fleet settles (no storm).
    func testANormalizationOnlyEditSyncsAndSettles() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "settings", "cafe", "caf\u{e9}"], home: home("a"))
        try sync(["a", "b"])
        let before = try quireOK(["get", "settings", "cafe", "--json"], home: home("b")).stdout
        try quireOK(["put", "settings", "cafe", "cafe\u{301}"], home: home("b"))
        let after = try quireOK(["get", "settings", "cafe", "--json"], home: home("b")).stdout
        XCTAssertNotEqual(before, after, "a new version")
        try sync(["a", "b"])
        XCTAssertEqual(Array(try quireOK(["get", "settings", "cafe"], home: home("a")).stdoutBytes), Array("cafe\u{301}\n".utf8))
    }

    /// A body that no longer matches its hash (a flipped byte on disk) is
    /// never shown or served; fsck finds it, status names it, and a good
    /// copy comes back from a sibling.
    func testADamagedBodyIsSetAsideAndRepairedFromASibling() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "notebook", "Diary"], home: home("a"), stdin: Array("every word counts\n".utf8))
        try sync(["a", "b"])
        let flip = "UPDATE rows SET body = CAST('every word count$\n' AS BLOB) WHERE name = 'Diary'"
        XCTAssertEqual(shell("sqlite3 '\(home("a"))/replica.sqlite' \"\(flip)\"").status, 0)
        let fsck = try quire(["fsck"], home: home("a"))
        XCTAssertEqual(fsck.status, 1)
        XCTAssertTrue(fsck.stdout.contains("did not match"), fsck.stdout)
        XCTAssertFalse(try quire(["get", "notebook", "Diary"], home: home("a")).stdout.contains("count$"), "never shown")
        XCTAssertTrue(try quireOK(["status"], home: home("a")).stdout.contains("found damaged on disk"))
        let b = try SyncDaemon(home: home("b"), relay: relay)
        defer { b.stop() }
        try quireOK(["recall", "--all", "--timeout", "20"], home: home("a"))
        XCTAssertEqual(try quireOK(["get", "notebook", "Diary"], home: home("a")).stdout, "every word counts\n")
        XCTAssertTrue(try quireOK(["status"], home: home("a")).stdout.contains("repaired from a good copy"))
    }

    /// `quire backup` while the device syncs, `quire restore` refused while
    /// it syncs, then put back: the restored device writes as a new
    /// incarnation, so its offline edit and the phone's later one both
    /// survive, and what it wrote after the backup comes back from the phone.
    func testBackupWhileSyncingAndRestoreWithANewIncarnation() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "plans", "Trip", "--notes", "v1"], home: home("a"))
        try sync(["a", "b"])
        let running = try SyncDaemon(home: home("a"), relay: relay, waitsForControlChannel: true)
        let file = dir + "/a.qbackup"
        try quireOK(["backup", "--to", file], home: home("a"))
        var mode = stat()
        XCTAssertEqual(stat(file, &mode), 0)
        XCTAssertEqual(mode.st_mode & 0o777, 0o600, "the backup holds private keys")
        let refused = try quire(["restore", "--from", file], home: home("a"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("syncing or mounted"), refused.stderr)
        running.stop()
        try quireOK(["put", "notebook", "After the backup"], home: home("a"), stdin: Array("kept by the phone\n".utf8))
        try quireOK(["put", "plans", "Trip", "--notes", "v2"], home: home("a"))
        try sync(["a", "b"])
        // The phone's word that it holds them may come after the digests met.
        for _ in 0..<5 where try unconfirmed("a") > 0 { try sync(["a", "b"]) }
        XCTAssertEqual(try unconfirmed("a"), 0, "the phone confirmed every write")
        try quireOK(["put", "plans", "Trip", "--notes", "v3 by the phone"], home: home("b"))
        // Written after the phone last heard from it: no other device has it.
        try quireOK(["put", "notebook", "Offline only"], home: home("a"), stdin: Array("an afternoon of work\n".utf8))
        let dry = try quireOK(["restore", "--from", file, "--dry-run"], home: home("a")).stdout
        XCTAssertTrue(dry.contains("move what is there now"), dry)
        XCTAssertTrue(dry.contains("set aside 1 write made on this device that no other device received"), dry)
        XCTAssertTrue(dry.contains("notebook 'Offline only'"), dry)
        XCTAssertFalse(dry.contains("After the backup"), "the phone holds that one, and gives it back: \(dry)")
        XCTAssertTrue(try quireOK(["ls", "notebook"], home: home("a")).stdout.contains("After the backup"), "a dry run changes nothing")
        let restored = try quireOK(["restore", "--from", file, "--json"], home: home("a")).stdout
        let setAside = (try jsonObject(restored) as? [String: Any])?["unsharedSetAside"] as? [[String: Any]]
        XCTAssertEqual(setAside?.compactMap { $0["name"] as? String }, ["Offline only"], restored)
        XCTAssertFalse(try quireOK(["ls", "notebook"], home: home("a")).stdout.contains("After the backup"))
        let aside = try FileManager.default.contentsOfDirectory(atPath: home("a")).filter { $0.hasPrefix("before-restore-") }
        XCTAssertEqual(aside.count, 1, "the replica that was there is kept")
        XCTAssertEqual(try quireOK(["get", "notebook", "Offline only"], home: home("a") + "/" + aside[0]).stdout, "an afternoon of work\n",
                       "the set-aside write reads from the folder the restore named")
        try quireOK(["put", "plans", "Trip", "--notes", "offline after the restore"], home: home("a"))
        try sync(["a", "b"])
        XCTAssertTrue(try quireOK(["get", "notebook", "After the backup"], home: home("a")).stdout.contains("kept by the phone"))
        for n in ["a", "b"] {
            let trip = try jsonObject(try quireOK(["get", "plans", "Trip", "--json"], home: home(n)).stdout) as! [String: Any]
            XCTAssertEqual((trip["heads"] as? [String])?.count, 2, "the phone's edit and the restored device's both kept on \(n): \(trip)")
        }
    }

    /// `quire repair` backs the device up first, names the three answers,
    /// and --take-fleet sets the replica aside and takes the fleet's copy.
    func testRepairBacksUpFirstAndTakesTheFleetsCopy() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "notebook", "Shared"], home: home("a"), stdin: Array("from a\n".utf8))
        try sync(["a", "b"])
        // Its control socket appears once the engine holds the device lock.
        let running = try SyncDaemon(home: home("b"), relay: relay, waitsForControlChannel: true)
        XCTAssertTrue(try quire(["repair"], home: home("b")).stderr.contains("syncing or mounted"))
        running.stop()
        let offer = try quireOK(["repair", "--backup-to", dir + "/b-repair.qbackup"], home: home("b")).stdout
        for answer in ["--keep-mine", "--take-fleet", "--leave"] { XCTAssertTrue(offer.contains(answer), offer) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/b-repair.qbackup"), "the backup comes first")
        let unusable = try quire(["repair", "--leave", "--backup-to", dir + "/no/such/dir/x.qbackup"], home: home("b"))
        XCTAssertEqual(unusable.status, 1)
        XCTAssertTrue(unusable.stderr.contains("nothing repaired"), unusable.stderr)
        try quireOK(["repair", "--take-fleet"], home: home("b"))
        XCTAssertFalse(try quireOK(["ls", "notebook"], home: home("b")).stdout.contains("Shared"), "the replica was set aside")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: home("b")).filter { $0.hasPrefix("before-repair-") }.count, 1)
        try sync(["a", "b"])
        XCTAssertEqual(try quireOK(["get", "notebook", "Shared"], home: home("b")).stdout, "from a\n", "the fleet's copy came back")
    }

    /// `quire repair --take-fleet` on a device holding a write no sibling
    /// received names it and changes nothing; with --drop-unshared it names
    /// it again, and the replica set aside reads with `--home FOLDER get|ls`
    /// but can never sync, mount or write as the device.
    func testRepairTakeFleetNamesUnsharedWritesAndSetsAsideAReadableReplica() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "notebook", "Shared"], home: home("a"), stdin: Array("from a\n".utf8))
        try sync(["a", "b"])
        try quireOK(["put", "notebook", "Only B"], home: home("b"), stdin: Array("written while a was away\n".utf8))

        let refused = try quire(["repair", "--take-fleet"], home: home("b"))
        XCTAssertEqual(refused.status, 1, refused.stdout)
        XCTAssertTrue(refused.stderr.contains("notebook 'Only B'") && refused.stderr.contains("--drop-unshared"), refused.stderr)
        func asideFolders() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: home("b")).filter { $0.hasPrefix("before-repair-") }
        }
        XCTAssertEqual(try asideFolders(), [], "a refusal moves nothing")
        XCTAssertEqual(try quireOK(["get", "notebook", "Only B"], home: home("b")).stdout, "written while a was away\n")
        XCTAssertEqual(try quire(["repair", "--leave", "--drop-unshared"], home: home("b")).status, 2)

        let taken = try quireOK(["repair", "--take-fleet", "--drop-unshared"], home: home("b")).stdout
        XCTAssertTrue(taken.contains("notebook 'Only B'"), taken)
        let aside = home("b") + "/" + (try XCTUnwrap(try asideFolders().first))
        XCTAssertTrue(taken.contains(aside), taken)
        XCTAssertFalse(FileManager.default.fileExists(atPath: aside + "/keys"), "no keys: it can never sign or open a frame")
        XCTAssertEqual(try quireOK(["get", "notebook", "Only B"], home: aside).stdout, "written while a was away\n")
        let listed = try quireOK(["ls", "notebook"], home: aside).stdout
        XCTAssertTrue(listed.contains("Only B") && listed.contains("Shared"), listed)
        for refusedUse in [["put", "notebook", "Later"], ["sync", "--once"], ["status"], ["repair", "--leave"]] {
            let r = try quire(refusedUse, home: aside, stdin: Array("x\n".utf8))
            XCTAssertEqual(r.status, 1, "\(refusedUse): \(r.stdout)")
            XCTAssertTrue(r.stderr.contains("set aside") && r.stderr.contains("never syncs"), "\(refusedUse): \(r.stderr)")
        }

        try sync(["a", "b"])
        XCTAssertEqual(try quireOK(["get", "notebook", "Shared"], home: home("b")).stdout, "from a\n", "the fleet's copy came back")
        XCTAssertEqual(try quire(["get", "notebook", "Only B"], home: home("b")).status, 1, "dropped from the device, as asked")
        XCTAssertEqual(try quireOK(["get", "notebook", "Only B"], home: aside).stdout, "written while a was away\n", "still in the folder")
    }

    /// Plain `quire repair` names the writes only this device holds, in the
    /// words --take-fleet uses, before the user picks an answer; `--json`
    /// says the same to a script (and what was done), for every answer.
    func testPlainRepairNamesUnsharedWritesAndJSONSaysWhatWasFoundAndDone() throws {
        try makeDevices(["a", "b"])
        try quireOK(["put", "notebook", "Shared"], home: home("a"), stdin: Array("from a\n".utf8))
        try sync(["a", "b"])
        try quireOK(["put", "notebook", "Only B"], home: home("b"), stdin: Array("written while a was away\n".utf8))

        let offer = try quireOK(["repair", "--backup-to", dir + "/b1.qbackup"], home: home("b")).stdout
        XCTAssertTrue(offer.contains("made on this device that no other device received") && offer.contains("notebook 'Only B'"), offer)
        XCTAssertFalse(offer.contains("notebook 'Shared'"), offer)
        XCTAssertTrue(offer.contains("--take-fleet") && offer.contains("--keep-mine"), offer)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("b") + "/replica-fleet-copy.sqlite"), "nothing is left staged")

        let plain = try quireOK(["repair", "--json", "--backup-to", dir + "/b2.qbackup"], home: home("b")).stdout
        let found = try XCTUnwrap(try jsonObject(plain) as? [String: Any], plain)
        XCTAssertEqual(found["backup"] as? String, dir + "/b2.qbackup")
        XCTAssertEqual(found["choice"] as? String, "none")
        let unshared = try XCTUnwrap(found["unshared"] as? [[String: Any]], plain)
        XCTAssertEqual(unshared.map { $0["name"] as? String }, ["Only B"], plain)

        let left = try XCTUnwrap(try jsonObject(try quireOK(["repair", "--leave", "--json"], home: home("b")).stdout) as? [String: Any])
        XCTAssertEqual(left["choice"] as? String, "leave")
        let taken = try quireOK(["repair", "--take-fleet", "--drop-unshared", "--json"], home: home("b")).stdout
        let object = try XCTUnwrap(try jsonObject(taken) as? [String: Any], taken)
        let aside = try XCTUnwrap(object["setAside"] as? String, taken)
        XCTAssertEqual((object["unshared"] as? [[String: Any]])?.map { $0["name"] as? String }, ["Only B"], taken)
        XCTAssertEqual(try quireOK(["get", "notebook", "Only B"], home: aside).stdout, "written while a was away\n")
    }
}
