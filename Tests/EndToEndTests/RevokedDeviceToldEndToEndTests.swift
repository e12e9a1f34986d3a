import Foundation
import QuireTestSupport
import XCTest

/// With no cloud folder, a revoked device learns it over the relay alone,
/// from the siblings that refuse its frames (`revoked_notice`): its status
/// says who revoked it, when, and what to do, instead of "nothing waits to
/// be advertised"; it keeps every note it holds, and nothing of it reaches
/// the others. (Before, it was never told.)
final class RevokedDeviceToldEndToEndTests: SyncEndToEndBase {
    func status(_ name: String) throws -> [String: Any] {
        try jsonObject(try quireOK(["status", "--json"], home: home(name)).stdout) as! [String: Any]
    }

    func deviceID(_ name: String) throws -> String { try status(name)["device"] as! String }

    /// The running sync's word on this device's revocation (nil: none).
    func revocation(_ name: String) -> [String: Any]? {
        ((try? status(name))?["sync"] as? [String: Any])?["revocation"] as? [String: Any]
    }

    func notes(_ name: String) throws -> String { try quireOK(["ls", "notebook"], home: home(name)).stdout }

    func converged() throws {
        try startAll()
        try put(home("a"), ["notebook", "Before"], body: "everyone has this")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b"), home("c")], timeout: 30), daemons.map(\.output).joined())
    }

    /// Revoked while it was off: the first frames it sends are refused and
    /// answered, and within seconds it knows.
    func testARevokedDeviceThatWasOffIsToldByTheFirstSiblingThatRefusesIt() throws {
        try makeThreeDevices()
        try converged()
        stopAll()
        let a = try deviceID("a")
        try quireOK(["devices", "revoke", "b"], home: home("a"))
        try startAll(["a", "c"])
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("c")], timeout: 30))
        try put(home("b"), ["notebook", "Written on b after"], body: "stays on b")
        try startAll(["b"])
        XCTAssertTrue(eventually(15) { self.revocation("b")?["by"] as? String == a }, daemons.map(\.output).joined())
        guard let r = revocation("b") else { return XCTFail("b's status says nothing of its revocation") }
        XCTAssertEqual(r["byName"] as? String, "a")
        XCTAssertNotNil(r["at"] as? Int)
        let text = try quireOK(["status"], home: home("b")).stdout
        XCTAssertTrue(text.contains("this device was REVOKED by 'a' on "), text)
        XCTAssertTrue(text.contains("edits made here no longer reach them"), text)
        XCTAssertTrue(text.contains("quire invite") && text.contains("init --join"), text)
        XCTAssertFalse(text.contains("nothing waits to be advertised"), text)
        XCTAssertEqual(((try status("b"))["sync"] as? [String: Any])?["phase"] as? String, "revoked")
        XCTAssertEqual(((try status("b"))["revoked"] as? [String: Any])?["by"] as? String, a, "read from the log, sync running or not")
        // B keeps everything it holds, and nothing of it reached the others.
        for n in ["Before", "Written on b after"] { XCTAssertTrue(try notes("b").contains(n), n) }
        for n in ["a", "c"] { XCTAssertFalse(try notes(n).contains("Written on b after"), n) }
        // Said once in its log, not at every refused frame.
        sleep(6)
        let said = daemons.map(\.output).joined().components(separatedBy: "this device was REVOKED by 'a'").count - 1
        XCTAssertEqual(said, 1, daemons.map(\.output).joined())
        // Its roster shows it too, and it cannot revoke anyone now.
        XCTAssertTrue(try quireOK(["devices"], home: home("b")).stdout.contains("REVOKED by 'a'"))
        XCTAssertEqual(try quire(["devices", "revoke", "c"], home: home("b")).status, 1)
        // A sync asked to converge says why it never will, at once.
        stopAll()
        let started = Date()
        let sync = try quire(["sync", "--until-converged", "--timeout", "30"], home: home("b"))
        XCTAssertEqual(sync.status, 1)
        XCTAssertTrue((sync.stdout + sync.stderr).contains("this device was REVOKED by 'a'"), sync.stdout + sync.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 15)
    }

    /// Revoked while it runs and sends nothing: the revoking device tells
    /// it at once.
    func testARunningRevokedDeviceIsToldAtOnce() throws {
        try makeThreeDevices()
        try converged()
        let a = try deviceID("a")
        try quireOK(["devices", "revoke", "b"], home: home("a"))
        XCTAssertTrue(eventually(10) { self.revocation("b")?["by"] as? String == a }, daemons.map(\.output).joined())
        XCTAssertTrue(try quireOK(["status"], home: home("b")).stdout.contains("this device was REVOKED by 'a'"))
        XCTAssertTrue(try notes("b").contains("Before"))
    }
}
