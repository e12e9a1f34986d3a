import Foundation
import QuireTestSupport
import XCTest

/// The attack with real processes: a phone is revoked on the
/// laptop; the phone (keeping everything it ever held, and not yet told:
/// `RevokedDeviceToldEndToEndTests` is the telling) then tries every command it has: it invites a new device that joins, writes,
/// syncs, and revokes the laptop. Nothing of it reaches the honest devices,
/// it gets nothing from them, and they lose nothing.
final class RevocationEndToEndTests: SyncEndToEndBase {
    func devices(_ name: String) throws -> [String: [String: Any]] {
        let r = try quireOK(["devices", "--json"], home: home(name))
        let list = (try jsonObject(r.stdout) as! [String: Any])["devices"] as! [[String: Any]]
        return Dictionary(uniqueKeysWithValues: list.map { ($0["name"] as! String, $0) })
    }

    /// `quire ls notebook`: one line per note (key, size, date, title).
    func notes(_ name: String) throws -> String {
        try quireOK(["ls", "notebook"], home: home(name)).stdout
    }

    func invite(from inviter: String, to file: String) throws {
        try quireOK(["invite", "--out", file, "--kdf", "interactive"], home: home(inviter), env: env)
    }

    func testARevokedDeviceFailsAtEveryStepAndHonestDevicesLoseNothing() throws {
        try quireOK(["init", "--name", "laptop", "--relay", relay], home: home("laptop"))
        for n in ["phone", "tablet"] {
            try invite(from: "laptop", to: dir + "/invite-" + n)
            try quireOK(["init", "--join", dir + "/invite-" + n, "--name", n, "--relay", relay], home: home(n), env: env)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("phone") + "/keys/account.key"), "no device holds the account key")
        try startAll(["laptop", "phone", "tablet"])
        try put(home("laptop"), ["notebook", "Laptop note"], body: "written before the revocation")
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("phone"), home("tablet")], timeout: 30), daemons.map(\.output).joined())
        XCTAssertTrue(eventually(20) { ((try? self.devices("tablet")) ?? [:]).values.filter { $0["trust"] as? String == "trusted" }.count == 3 })
        let shown = try quireOK(["devices"], home: home("tablet")).stdout
        XCTAssertTrue(shown.contains("added by 'laptop'"), shown)
        stopAll()

        // An invite the phone made while trusted, not yet used: void once the phone is revoked.
        try invite(from: "phone", to: dir + "/invite-early")

        // Revoke on the laptop; it says what it did and what remains.
        let revoked = try quireOK(["devices", "revoke", "phone"], home: home("laptop")).stdout
        XCTAssertTrue(revoked.contains("revoked 'phone'"), revoked)
        XCTAssertTrue(revoked.contains("still to do") && revoked.contains("'tablet'"), revoked)
        try startAll(["laptop", "tablet"])
        XCTAssertTrue(eventually(30) { (try? self.devices("tablet"))?["phone"]?["trust"] as? String == "revoked" }, daemons.map(\.output).joined())
        XCTAssertEqual(try devices("tablet")["phone"]?["revokedBy"] as? String, try devices("laptop")["laptop"]?["device"] as? String)
        try put(home("laptop"), ["notebook", "After revocation"], body: "the phone must never see this")
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("tablet")], timeout: 30))
        let honestNotes = try notes("laptop")

        // The phone, never told, tries everything it has.
        try put(home("phone"), ["notebook", "From the phone"], body: "refused everywhere")
        try invite(from: "phone", to: dir + "/invite-thief")
        // Heard by the honest devices, a join with an invite of the revoked
        // phone is refused, and the joiner told why.
        for (file, name) in [("invite-thief", "thief"), ("invite-early", "thief2")] {
            let refused = try quire(["init", "--join", dir + "/" + file, "--name", name, "--relay", relay], home: home(name), env: env)
            XCTAssertEqual(refused.status, 1, "\(name): \(refused.stdout)")
            XCTAssertTrue(refused.stderr.contains("its invite was made by 'phone', which was revoked"), "\(name): \(refused.stderr)")
        }
        // With none of them listening, the joins wait, and only the phone will admit them.
        stopAll()
        try quireOK(["init", "--join", dir + "/invite-thief", "--name", "thief", "--relay", relay], home: home("thief"), env: env)
        try quireOK(["init", "--join", dir + "/invite-early", "--name", "thief2", "--relay", relay], home: home("thief2"), env: env)
        // The thief signs before it listens: once its sync has heard an
        // honest device, it is told it was revoked, and quire signs nothing
        // for it (a thief's own build could; so sign first).
        try quireOK(["devices", "revoke", "laptop"], home: home("phone"))
        try quireOK(["devices", "revoke", "tablet"], home: home("phone"))
        try startAll(["laptop", "tablet"])
        let sync = try quire(["sync", "--until-converged", "--timeout", "8"], home: home("phone"))
        XCTAssertNotEqual(sync.status, 0, "a revoked device never reports convergence: \(sync.stdout)")
        try startAll(["phone", "thief", "thief2"])
        sleep(8)
        // The thief is admitted by nobody but the phone, and refused by the honest devices.
        try put(home("thief"), ["notebook", "From the thief"], body: "refused everywhere")
        sleep(4)

        for n in ["laptop", "tablet"] {
            let d = try devices(n)
            XCTAssertEqual(d["laptop"]?["trust"] as? String, "trusted", "\(n): \(d)")
            XCTAssertEqual(d["tablet"]?["trust"] as? String, "trusted", "\(n): \(d)")
            XCTAssertEqual(d["phone"]?["trust"] as? String, "revoked", "\(n): \(d)")
            for t in ["thief", "thief2"] { XCTAssertNotEqual(d[t]?["trust"] as? String, "trusted", "\(n): \(d)") }
            XCTAssertEqual(try notes(n), honestNotes, "\(n) lost or gained notes")
        }
        for n in ["phone", "thief", "thief2"] {
            XCTAssertFalse(try notes(n).contains("After revocation"), "\(n) got a row from an honest device")
        }
        // (What the phone held before, it can hand to anyone: the thief may
        // have it. Revocation protects the future, not the past.)
        XCTAssertTrue(try notes("phone").contains("Laptop note"), "the phone keeps what it held before")
        // And the honest devices still sync with each other.
        try put(home("tablet"), ["notebook", "Still in sync"], body: "yes")
        XCTAssertTrue(try waitForEqualDigests([home("laptop"), home("tablet")], timeout: 30))
    }
}
