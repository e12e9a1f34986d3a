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

    func copyFixture(_ name: String) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/schema3/\(name)").path
        let home = dir + "/" + name
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
    }
}
