import Foundation
import XCTest

/// A write of the laptop that only the phone received, the phone then lost
/// and revoked, the laptop put back from a backup older than the write: the
/// restore names it, and says where it is. A revoked device is never heard
/// again, so what only it holds is held by no device that counts.
final class RestoreRevokedHolderEndToEndTests: SyncEndToEndBase {
    func testARestoreNamesAWriteOnlyARevokedDeviceReceived() throws {
        try quireOK(["init", "--name", "laptop", "--relay", relay], home: home("laptop"))
        for n in ["phone", "tablet"] {
            try quireOK(["invite", "--out", dir + "/invite-" + n, "--kdf", "interactive"], home: home("laptop"), env: env)
            try quireOK(["init", "--join", dir + "/invite-" + n, "--name", n, "--relay", relay], home: home(n), env: env)
        }
        try startAll(["laptop", "phone", "tablet"])
        try put(home("laptop"), ["notebook", "base"], body: "everyone has this\n")
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("phone"), home("tablet")], timeout: 30), daemons.map(\.output).joined())
        stopAll()
        let backup = dir + "/laptop.qbackup"
        try quireOK(["backup", "--to", backup], home: home("laptop"))
        // The tablet is off; only the phone receives X.
        try startAll(["laptop", "phone"])
        try put(home("laptop"), ["notebook", "X"], body: "reached only the phone\n")
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("phone")], timeout: 30), daemons.map(\.output).joined())
        // The laptop saw the phone hold it: no longer an unconfirmed write.
        XCTAssertTrue(eventually(20) {
            let status = (try? quire(["status", "--json"], home: self.home("laptop")).stdout).flatMap { try? jsonObject($0) } as? [String: Any]
            return status?["unconfirmedWrites"] as? Int == 0
        })
        stopAll()
        try quireOK(["devices", "revoke", "phone"], home: home("laptop"))
        let dry = try quireOK(["restore", "--from", backup, "--dry-run"], home: home("laptop")).stdout
        XCTAssertTrue(dry.contains("notebook 'X'"), dry)
        let restored = try quireOK(["restore", "--from", backup, "--json"], home: home("laptop")).stdout
        let object = try XCTUnwrap(try jsonObject(restored) as? [String: Any])
        let names = (object["unsharedSetAside"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        XCTAssertTrue(names.contains("X"), restored)
        let aside = try XCTUnwrap(object["movedAside"] as? String)
        XCTAssertEqual(try quireOK(["get", "notebook", "X"], home: aside).stdout, "reached only the phone\n")
    }
}
