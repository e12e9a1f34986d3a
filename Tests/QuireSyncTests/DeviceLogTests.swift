import Foundation
import QuireCore
import QuireCrypto
import XCTest
@testable import QuireStore
@testable import QuireSync

/// The device log's rules, on statements alone: what a revoked device signs
/// counts for nothing, whatever order the statements arrive in.
final class DeviceLogTests: XCTestCase {
    struct Device {
        let name: String
        let signing = SigningKeyPair()
        let box = BoxKeyPair()
        var id: DeviceID { Identity.deviceID(for: signing.publicKey) }
    }

    let account = SigningKeyPair()
    var counter: UInt64 = 0

    func row(_ signed: [UInt8], key: DeviceID? = nil, revocation: [UInt8]? = nil) -> Row {
        counter += 1
        return Row.single(.devices, key ?? DeviceStatement.id(of: signed),
                          dot: Dot(actor: Actor(device: DeviceID(bytes: [UInt8](repeating: 9, count: 16))!, incarnation: 1), counter: counter),
                          context: VersionVector(), content: .device(DeviceRecord(name: "x", certificate: signed, revocation: revocation)))
    }

    /// The first device: certified by the account key (a legacy-form row keyed by its id).
    func genesis(_ d: Device) -> Row {
        row(DeviceCertificate(accountKey: account.publicKey.bytes, deviceID: d.id, name: d.name, signingKey: d.signing.publicKey.bytes,
                              boxKey: d.box.publicKey.bytes, role: "device", issuedAt: Timestamp(seconds: 1)).signed(by: account), key: d.id)
    }

    func admit(_ d: Device, by signer: Device, at: Int64 = 10, grant: DeviceID? = nil) -> Row {
        var s = DeviceStatement(kind: .admit, accountKey: account.publicKey.bytes, signerKey: signer.signing.publicKey.bytes,
                                subject: d.id, at: Timestamp(seconds: at))
        s.name = d.name; s.subjectSigningKey = d.signing.publicKey.bytes; s.subjectBoxKey = d.box.publicKey.bytes; s.role = "device"
        s.grant = grant
        return row(s.signed(by: signer.signing))
    }

    func revoke(_ d: Device, by signer: Device, keeping kept: [Row] = [], at: Int64 = 20) -> Row {
        var s = DeviceStatement(kind: .revoke, accountKey: account.publicKey.bytes, signerKey: signer.signing.publicKey.bytes,
                                subject: d.id, at: Timestamp(seconds: at))
        s.kept = kept.map(\.key)
        return row(s.signed(by: signer.signing))
    }

    func grant(by signer: Device, pairing: SigningKeyPair = SigningKeyPair()) -> Row {
        var s = DeviceStatement(kind: .grant, accountKey: account.publicKey.bytes, signerKey: signer.signing.publicKey.bytes,
                                subject: signer.id, at: Timestamp(seconds: 5))
        s.pairingKey = pairing.publicKey.bytes
        s.expiresAt = Timestamp(seconds: 1_000)
        return row(s.signed(by: signer.signing))
    }

    func trust(_ rows: [Row]) -> [String: RosterMember.Trust] {
        // Every order gives the same answer: the log is a function of the set.
        var answers = Set<[String: RosterMember.Trust]>()
        var shuffled = rows
        for _ in 0..<5 {
            shuffled.shuffle()
            let roster = DeviceLog(rows: shuffled, accountKey: account.publicKey).roster()
            answers.insert(Dictionary(uniqueKeysWithValues: roster.members.values.map { ($0.name, $0.trust) }))
        }
        XCTAssertEqual(answers.count, 1, "the roster depends on the order of the statements")
        return answers.first!
    }

    func testARevokedDeviceCannotAddRevokeOrUndoAndWhatItAddedBeforeStays() {
        let laptop = Device(name: "laptop"), phone = Device(name: "phone"), tablet = Device(name: "tablet")
        let early = Device(name: "early"), thief = Device(name: "thief")
        let phoneAdmit = admit(phone, by: laptop), tabletAdmit = admit(tablet, by: laptop)
        let base = [genesis(laptop), phoneAdmit, tabletAdmit]
        let earlyAdmit = admit(early, by: phone)
        let revocation = revoke(phone, by: laptop, keeping: [earlyAdmit])
        // After its revocation the phone admits a new device, which revokes the
        // laptop; the phone revokes the tablet and admits itself again.
        let thiefAdmit = admit(thief, by: phone, at: 30)
        let all = base + [earlyAdmit, revocation, thiefAdmit, revoke(laptop, by: thief, keeping: [phoneAdmit, tabletAdmit], at: 31),
                          revoke(tablet, by: phone, at: 32),
                          admit(phone, by: phone, at: 33)]
        let t = trust(all)
        XCTAssertEqual(t["laptop"], .trusted)
        XCTAssertEqual(t["tablet"], .trusted)
        XCTAssertEqual(t["phone"], .revoked)
        XCTAssertEqual(t["early"], .trusted, "a device the phone admitted before, as the revoker saw it, stays")
        XCTAssertEqual(t["thief"], .untrusted)
        let roster = DeviceLog(rows: all, accountKey: account.publicKey).roster()
        XCTAssertEqual(roster[phone.id]?.revokedBy, laptop.id)
        XCTAssertEqual(roster[thief.id]?.addedBy, phone.id)
        XCTAssertEqual(Set(roster.siblings(of: laptop.id).map(\.name)), ["tablet", "early"])
    }

    func testADeviceAdmittedConcurrentlyWithItsAdmittersRevocationIsNotTrusted() {
        let laptop = Device(name: "laptop"), phone = Device(name: "phone"), newcomer = Device(name: "newcomer")
        // The laptop did not see the newcomer's admission when it revoked the phone.
        let t = trust([genesis(laptop), admit(phone, by: laptop), admit(newcomer, by: phone, at: 19), revoke(phone, by: laptop)])
        XCTAssertEqual(t["newcomer"], .untrusted)
    }

    func testTwoDevicesRevokingEachOtherConcurrentlyAreBothRevoked() {
        let laptop = Device(name: "laptop"), phone = Device(name: "phone"), desk = Device(name: "desk")
        let phoneAdmit = admit(phone, by: laptop), deskAdmit = admit(desk, by: laptop)
        let t = trust([genesis(laptop), phoneAdmit, deskAdmit, revoke(phone, by: laptop), revoke(laptop, by: phone, keeping: [phoneAdmit, deskAdmit])])
        XCTAssertEqual(t["phone"], .revoked)
        XCTAssertEqual(t["laptop"], .revoked, "the thief never wins alone; the user re-pairs the laptop from the desk")
        XCTAssertEqual(t["desk"], .trusted)
    }

    func testAGrantAdmitsOneDeviceAndAGrantOfARevokedDeviceAdmitsNone() {
        let laptop = Device(name: "laptop"), phone = Device(name: "phone"), first = Device(name: "first"), second = Device(name: "second")
        let g = grant(by: laptop)
        XCTAssertEqual(trust([genesis(laptop), g, admit(first, by: laptop, grant: g.key)])["first"], .trusted)
        // Two devices under one grant (a leaked invite used twice): neither counts.
        let twice = trust([genesis(laptop), g, admit(first, by: laptop, grant: g.key), admit(second, by: laptop, grant: g.key)])
        XCTAssertEqual(twice["first"], .untrusted)
        XCTAssertEqual(twice["second"], .untrusted)
        // The phone's invite made after its revocation: even an honest device
        // that had not heard of the revocation admits nobody with it.
        let phoneGrant = grant(by: phone)
        let t = trust([genesis(laptop), admit(phone, by: laptop), revoke(phone, by: laptop), phoneGrant, admit(first, by: laptop, grant: phoneGrant.key)])
        XCTAssertEqual(t["first"], .untrusted)
    }

    func testRetiredAccountKeyCertifiesNothingNew() {
        let laptop = Device(name: "laptop"), phone = Device(name: "phone"), stranger = Device(name: "stranger")
        let laptopRow = genesis(laptop), phoneRow = genesis(phone)
        var retire = DeviceStatement(kind: .retire, accountKey: account.publicKey.bytes, signerKey: account.publicKey.bytes,
                                     subject: laptop.id, at: Timestamp(seconds: 2))
        retire.kept = [laptopRow, phoneRow].map { r -> DeviceID in
            guard case .device(let d)? = r.content else { fatalError() }
            return DeviceStatement.id(of: d.certificate)
        }
        let t = trust([laptopRow, phoneRow, row(retire.signed(by: account)), genesis(stranger)])
        XCTAssertEqual(t["laptop"], .trusted)
        XCTAssertEqual(t["phone"], .trusted)
        XCTAssertNil(t["stranger"].flatMap { $0 == .trusted ? $0 : nil }, "a certificate signed with the retired key after the upgrade counts nowhere")
    }

    func testStatementsOfAnotherAccountOrWithABadSignatureAreRefused() {
        let laptop = Device(name: "laptop"), phone = Device(name: "phone")
        var forged = admit(phone, by: laptop)
        guard case .device(var record)? = forged.content else { return XCTFail() }
        record.certificate[record.certificate.count - 3] ^= 1
        forged = row(record.certificate)
        XCTAssertFalse(Roster.isWellFormed(forged, accountKey: account.publicKey))
        XCTAssertFalse(Roster.isWellFormed(admit(phone, by: laptop), accountKey: SigningKeyPair().publicKey))
        // Keyed by something else than its id: refused.
        guard case .device(let good)? = admit(phone, by: laptop).content else { return XCTFail() }
        XCTAssertFalse(Roster.isWellFormed(row(good.certificate, key: phone.id), accountKey: account.publicKey))
        // A tombstone: nothing deletes a statement.
        XCTAssertFalse(Roster.isWellFormed(Row(namespace: .devices, key: phone.id, context: VersionVector(), heads: []), accountKey: account.publicKey))
    }

    /// The merge path that used to un-revoke: a legacy roster row whose new
    /// head (a dominating version vector) drops the revocation.
    func testALegacyRowThatWouldDropARevocationIsRefused() {
        let phone = Device(name: "phone")
        let cert = DeviceCertificate(accountKey: account.publicKey.bytes, deviceID: phone.id, name: "phone", signingKey: phone.signing.publicKey.bytes,
                                     boxKey: phone.box.publicKey.bytes, role: "device", issuedAt: Timestamp(seconds: 1)).signed(by: account)
        let revoked = row(cert, key: phone.id, revocation: DeviceRevocation(deviceID: phone.id, revokedAt: Timestamp(seconds: 2)).signed(by: account))
        let unrevoked = row(cert, key: phone.id)
        XCTAssertTrue(Roster.wouldUnrevoke(unrevoked, over: revoked))
        XCTAssertFalse(Roster.wouldUnrevoke(revoked, over: unrevoked))
        XCTAssertFalse(Roster.wouldUnrevoke(revoked, over: nil))
    }
}
