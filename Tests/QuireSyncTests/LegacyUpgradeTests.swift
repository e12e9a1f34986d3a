import Foundation
import QuireCore
import QuireCrypto
import XCTest
@testable import QuireStore
@testable import QuireSync

/// A device directory from before the device log (the account seed in
/// `keys/account.key`, revocations as fields of roster rows) is upgraded
/// when opened: the seed is retired and deleted, revocations become
/// immutable statements, and what the old seed signs afterwards counts nowhere.
final class LegacyUpgradeTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func testOpeningALegacyDeviceRetiresTheAccountKeyAndKeepsItsRevocations() throws {
        let account = SigningKeyPair()
        let clock = SimClock()
        let home = DeviceHome(path: base + "/laptop")
        let (laptop, store) = try home.create(name: "laptop", identity: Identity(account: account, deviceSigning: SigningKeyPair(),
                                                                                deviceBox: BoxKeyPair(), backupKey: SecretBytes(randomCount: 32)),
                                              clock: clock)
        // The legacy layout: the seed on disk, a phone certified by it and revoked by it.
        var seed = account.seed().withUnsafeBytes { Array($0) }
        try AtomicFile.write(seed, to: home.keysPath + "/account.key", mode: 0o600)
        secureZero(&seed)
        let phone = Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: laptop.backupKey)
        let phoneCert = phone.signedCertificate(name: "phone", issuedAt: clock.now())
        try store.putRosterEntry(DeviceRecord(name: "phone", certificate: phoneCert), key: phone.deviceID)
        try store.putRosterEntry(DeviceRecord(name: "phone", certificate: phoneCert,
                                              revocation: DeviceRevocation(deviceID: phone.deviceID, revokedAt: clock.now()).signed(by: account)),
                                 key: phone.deviceID)

        let (opened, reopened) = try home.open(clock: clock)
        XCTAssertNil(opened.account.secret)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home.keysPath + "/account.key"), "the legacy account seed is deleted")
        XCTAssertEqual(opened.userIDHash, laptop.userIDHash, "the account id does not change")
        var roster = try Roster.load(from: reopened, accountKey: account.publicKey).roster
        XCTAssertEqual(roster[laptop.deviceID]?.trust, .trusted)
        XCTAssertEqual(roster[phone.deviceID]?.trust, .revoked)

        // The merge path that used to un-revoke: a row with a dominating
        // version vector and no revocation, stored directly. The revocation
        // statement written at the upgrade still stands.
        try reopened.putRosterEntry(DeviceRecord(name: "phone", certificate: phoneCert), key: phone.deviceID)
        roster = try Roster.load(from: reopened, accountKey: account.publicKey).roster
        XCTAssertEqual(roster[phone.deviceID]?.trust, .revoked, "a revocation never goes away")

        // The phone kept the old seed: a certificate it signs now for a new
        // device, and a revocation of the laptop, count for nothing.
        let stranger = Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: laptop.backupKey)
        try reopened.putRosterEntry(DeviceRecord(name: "stranger", certificate: stranger.signedCertificate(name: "stranger", issuedAt: clock.now())),
                                    key: stranger.deviceID)
        let laptopRevocation = DeviceStatement(kind: .revoke, accountKey: account.publicKey.bytes, signerKey: account.publicKey.bytes,
                                               subject: laptop.deviceID, at: clock.now()).signed(by: account)
        let (key, record) = DeviceStatement.row(laptopRevocation, displayName: "forged")
        try reopened.putRosterEntry(record, key: key)
        roster = try Roster.load(from: reopened, accountKey: account.publicKey).roster
        XCTAssertNotEqual(roster[stranger.deviceID]?.trust, .trusted)
        XCTAssertEqual(roster[laptop.deviceID]?.trust, .trusted)

        // Opening again changes nothing more (the upgrade ran once).
        let before = try reopened.rows(.devices, from: [], to: nil).count
        _ = try home.open(clock: clock)
        XCTAssertEqual(try reopened.rows(.devices, from: [], to: nil).count, before)
    }

    func testAKeyFileReplacedByGarbageOrCutShortIsRefusedByName() throws {
        let home = DeviceHome(path: base + "/d")
        try home.create(name: "d")
        try AtomicFile.write(Array("not a key at all, but some text".utf8) + [1, 2, 3], to: home.keysPath + "/device-sign.key", mode: 0o600)
        XCTAssertThrowsError(try home.open()) { XCTAssertTrue("\($0)".contains("device-sign.key") && "\($0)".contains("replaced"), "\($0)") }
    }

    func testAKeyFileReplacedByAnotherDevicesKeyIsRefused() throws {
        let a = DeviceHome(path: base + "/a"), b = DeviceHome(path: base + "/b")
        try a.create(name: "a")
        try b.create(name: "b")
        for file in ["device-sign.key", "device-box.key"] {
            XCTAssertEqual(shell("cp '\(b.keysPath)/\(file)' '\(a.keysPath)/\(file)'"), 0)
        }
        XCTAssertThrowsError(try a.open()) { XCTAssertTrue("\($0)".contains("a key file was replaced"), "\($0)") }
    }

    func shell(_ command: String) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        try? p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }
}
