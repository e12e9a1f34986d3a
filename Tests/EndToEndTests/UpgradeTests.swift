import Foundation
import XCTest

/// Replicas written by the previous quire (schema 3: one value per row
/// under a version vector) are upgraded in place when opened. The fixture
/// in Fixtures/schema3 was made with that build: two devices of one
/// account ("laptop" a, "phone" b) synced, with a tombstone (Note 5), a
/// concurrent merge of Note 1, and one edit of Note 2 on b never synced.
final class UpgradeTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func copyFixture(_ name: String, schema: String = "schema3") throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(schema)/\(name)").path
        let home = dir + "/" + schema + "-" + name
        // Git keeps no modes but 644/755: give the copy the modes a real
        // device directory has (quire refuses keys others can read).
        XCTAssertEqual(shell("cp -a '\(source)' '\(home)' && chmod 700 '\(home)' '\(home)/keys' && chmod 600 '\(home)'/keys/*").status, 0)
        return home
    }

    func testASchema3FleetIsUpgradedInPlaceAndKeepsSyncing() throws {
        let a = try copyFixture("a"), b = try copyFixture("b")
        // Every row survives the upgrade, with its content.
        let list = try quireOK(["ls", "notebook"], home: a).stdout
        for n in 1...4 { XCTAssertTrue(list.contains("Note \(n)"), list) }
        XCTAssertFalse(list.contains("Note 5"), "a tombstone stays a tombstone")
        let merged = try quireOK(["get", "notebook", "Note 1"], home: a).stdout
        XCTAssertTrue(merged.contains("from the laptop") && merged.contains("from the phone"), merged)
        XCTAssertTrue(try quireOK(["get", "plans", "Ship v1", "--json"], home: a).stdout.contains("2026-12-25"))
        // The upgrade is deterministic: rows both held alike get the same
        // leaves on both devices without any sync (only Note 2 differs).
        let rootsA = try digestRoots(a), rootsB = try digestRoots(b)
        XCTAssertEqual(rootsA["plans"], rootsB["plans"])
        XCTAssertEqual(rootsA["contacts"], rootsB["contacts"])
        XCTAssertNotEqual(rootsA["notebook"], rootsB["notebook"])
        XCTAssertEqual(try quireOK(["digest", "--verify"], home: a).status, 0)
        // New writes, and sync with the new wire format.
        try quireOK(["put", "notebook", "After the upgrade"], home: a, stdin: Array("written after\n".utf8))
        let relay = "local:\(dir)/relay"
        let daemons = [try SyncDaemon(home: a, relay: relay), try SyncDaemon(home: b, relay: relay)]
        XCTAssertTrue(try waitForEqualDigests([a, b], timeout: 30), daemons.map(\.output).joined(separator: "\n"))
        daemons.forEach { $0.stop() }
        XCTAssertTrue(try quireOK(["get", "notebook", "Note 2"], home: a).stdout.contains("phone only, not yet synced"))
        XCTAssertTrue(try quireOK(["get", "notebook", "After the upgrade"], home: b).stdout.contains("written after"))

        // The upgraded notes are the notebook tree's: a folder made through
        // the mount takes one of them in, and nothing else moves.
        let mountpoint = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try quireOK(["mount", mountpoint, "-o", "nosync"], home: a)
        defer { _ = try? quire(["unmount", mountpoint], home: a) }
        XCTAssertEqual(mkdir(mountpoint + "/notebook/Old notes", 0o755), 0)
        XCTAssertEqual(Syscall.rename(mountpoint + "/notebook/Note 1.md", mountpoint + "/notebook/Old notes/Note 1.md"), 0)
        XCTAssertTrue(try String(contentsOfFile: mountpoint + "/notebook/Old notes/Note 1.md", encoding: .utf8).contains("from the phone"))
        let top = try FileManager.default.contentsOfDirectory(atPath: mountpoint + "/notebook").sorted()
        XCTAssertEqual(top, ["After the upgrade.md", "Note 2.md", "Note 3.md", "Note 4.md", "Old notes"])
        let status = try jsonObject(quireOK(["status", "--json"], home: a).stdout) as! [String: Any]
        let kinds = (status["namespaces"] as? [String: Any])?["notebookKinds"] as? [String: Int]
        XCTAssertEqual(kinds, ["notes": 5, "attachments": 0, "folders": 1])
        XCTAssertEqual(try quireOK(["digest", "--verify"], home: a).status, 0)
    }

    /// Contacts and plans became whole vCard and iCalendar files (schema 9,
    /// leaf version 3). The fixture in Fixtures/schema8 (see its README) was
    /// made with the build before: each head becomes the card the old mount
    /// showed, deterministically, so both devices agree without a sync.
    func testASchema8FleetGetsWholeCardsInPlace() throws {
        let a = try copyFixture("a", schema: "schema8"), b = try copyFixture("b", schema: "schema8")
        let ada = try jsonObject(quireOK(["get", "contacts", "Ada Lovelace", "--json"], home: a).stdout) as! [String: Any]
        // The concurrent edits (a's phone, b's email) are both kept, as heads,
        // and the card shows every line of both versions: nothing lost.
        XCTAssertEqual((ada["heads"] as? [String])?.count, 2, "\(ada)")
        let card = try XCTUnwrap(ada["vcard"] as? String)
        let key = try XCTUnwrap(ada["key"] as? String)
        let uuid = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(Array(key)[$0]) }.joined(separator: "-")
        XCTAssertTrue(card.hasPrefix("BEGIN:VCARD\r\nVERSION:4.0\r\nUID:\(uuid)\r\nFN:Ada Lovelace\r\n") && card.hasSuffix("END:VCARD\r\n"),
                      "a UID from the row key, as khard needs: \(card)")
        for line in ["EMAIL:ada@example.org", "EMAIL:ada@work.example", "TEL:+44 20 7946 0001", "NOTE:first programmer"] {
            XCTAssertTrue(card.contains(line + "\r\n"), "\(line) in \(card)")
        }
        XCTAssertEqual(card.components(separatedBy: "\r\nFN:").count - 1, 1, card)
        let ls = try quireOK(["ls", "contacts", "--tombstones", "--json"], home: a).stdout
        XCTAssertEqual((try jsonObject(ls) as! [[String: Any]]).filter { $0["tombstone"] as? Bool == true }.count, 1, "Doomed stays deleted")
        let plan = try jsonObject(quireOK(["get", "plans", "Ship v1", "--json"], home: a).stdout) as! [String: Any]
        XCTAssertEqual(plan["done"] as? Bool, true)
        XCTAssertEqual(plan["due"] as? String, "2026-12-25")
        XCTAssertEqual(plan["notes"] as? String, "the release")
        XCTAssertEqual(plan["summary"] as? String, "Ship v1")
        let ics = try XCTUnwrap(plan["ics"] as? String)
        XCTAssertTrue(ics.contains("BEGIN:VTODO\r\nUID:") && ics.contains("STATUS:COMPLETED\r\n"), ics)
        XCTAssertEqual(try quireOK(["digest", "--verify"], home: a).status, 0)
        XCTAssertEqual(try quireOK(["digest", "--verify"], home: b).status, 0)
        // Deterministic: rows both held alike have the same leaves without a sync.
        let rootsA = try digestRoots(a), rootsB = try digestRoots(b)
        XCTAssertEqual(rootsA["contacts"], rootsB["contacts"])
        XCTAssertNotEqual(rootsA["plans"], rootsB["plans"], "b's unsynced edit of Water plants")
        // The same UID on both devices (a function of the old plan).
        let planB = try jsonObject(quireOK(["get", "plans", "Ship v1", "--json"], home: b).stdout) as! [String: Any]
        XCTAssertEqual(planB["uid"] as? String, plan["uid"] as? String)

        // They sync in the new format, and an edit through the card joins the heads.
        let relay = "local:\(dir)/relay"
        let daemons = [try SyncDaemon(home: a, relay: relay), try SyncDaemon(home: b, relay: relay)]
        XCTAssertTrue(try waitForEqualDigests([a, b], timeout: 30), daemons.map(\.output).joined(separator: "\n"))
        XCTAssertEqual(try quireOK(["get", "plans", "Water plants", "--json"], home: a).stdout.contains("fern, on b only"), true)
        try quireOK(["put", "contacts", "Ada Lovelace", "--email", "ada@example.org"], home: b)
        XCTAssertTrue(try waitForEqualDigests([a, b], timeout: 30), daemons.map(\.output).joined(separator: "\n"))
        daemons.forEach { $0.stop() }
        let after = try jsonObject(quireOK(["get", "contacts", "Ada Lovelace", "--json"], home: a).stdout) as! [String: Any]
        XCTAssertEqual((after["heads"] as? [String])?.count, 1)
        XCTAssertEqual(after["emails"] as? [String], ["ada@example.org"])
        let status = try quireOK(["status"], home: a).stdout
        XCTAssertFalse(status.lowercased().contains("rolled back"), status)
    }
}
