import Foundation
import XCTest

/// A homebase put back from a backup older than the bodies it holds: the
/// devices that offloaded them keep only pointers, so `quire restore` keeps
/// the held bodies of the replica it moves aside (a simulator seed, 1316,
/// lost a note's words this way).
final class OffloadRestoreTests: OffloadFleetBase {
    func testRestoringTheHomebaseFromAnOlderBackupKeepsTheBodiesItHolds() throws {
        try makeFleet()
        stop("home")
        let backup = dir + "/home.qbackup"
        try quireOK(["backup", "--to", backup], home: home("home"))
        try start("home")

        let body = Self.body(7, size: 30_000)
        try put("phone", "only on the homebase", body)
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        stop("tablet")   // the resident copy plays no part
        let offload = try quire(["offload", "only on the homebase", "--copies", "1"], home: home("phone"))
        XCTAssertEqual(offload.status, 0, offload.stderr)
        XCTAssertEqual(try offloadedTitles("phone"), ["only on the homebase"])

        stop("home")
        let dry = try quireOK(["restore", "--from", backup, "--dry-run"], home: home("home")).stdout
        XCTAssertTrue(dry.contains("keep the bodies held there for other devices"), dry)
        let restored = try quireOK(["restore", "--from", backup], home: home("home")).stdout
        XCTAssertTrue(restored.contains("kept 1 body this device holds for other devices"), restored)
        let held = try jsonObject(try quireOK(["status", "--json"], home: home("home")).stdout) as! [String: Any]
        let counts = ((held["offload"] as? [String: Any])?["held"] as? [[String: Any]])?.first
        XCTAssertEqual(counts?["count"] as? Int, 1, "\(held)")

        // The tablet stays off: only the restored homebase can give the body back.
        try start("home", env: [:])
        let back = try quire(["recall", "only on the homebase"], home: home("phone"))
        XCTAssertEqual(back.status, 0, back.stderr + daemons.values.map(\.output).joined())
        XCTAssertEqual(try quireOK(["get", "notebook", "only on the homebase"], home: home("phone")).stdout, body)
    }

    func testARestoreLeavesAHeldBodyThatNoLongerMatchesItsHashBehindAndSaysSo() throws {
        try makeFleet()
        stop("home")
        let backup = dir + "/home.qbackup"
        try quireOK(["backup", "--to", backup], home: home("home"))
        try start("home")
        try put("phone", "damaged on disk", Self.body(8, size: 20_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home")], timeout: 30))
        XCTAssertEqual(try quire(["offload", "damaged on disk", "--copies", "1"], home: home("phone")).status, 0)
        stop("home")
        // Flip the held bytes in place: a restore must not adopt them.
        let flip = "UPDATE held_bodies SET body = CAST('not the body' AS BLOB)"
        XCTAssertEqual(shell("sqlite3 '\(home("home"))/replica.sqlite' \"\(flip)\"").status, 0)
        let restored = try quireOK(["restore", "--from", backup], home: home("home")).stdout
        XCTAssertTrue(restored.contains("warning: 1 held body"), restored)
        XCTAssertTrue(restored.contains("did not match its hash and was left there"), restored)
        let status = try jsonObject(try quireOK(["status", "--json"], home: home("home")).stdout) as! [String: Any]
        XCTAssertEqual(((status["offload"] as? [String: Any])?["held"] as? [[String: Any]])?.count ?? 0, 0, "\(status)")
    }
}
