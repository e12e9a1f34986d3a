import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// A revoked device is told by the siblings that refuse its frames
/// (`revoked_notice`), and believes only the statements it can check:
/// engines on a simulated relay.
final class RevocationNoticeTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    /// A revocation of `target` signed by `key` (a device's, or a stranger's).
    func revocation(of target: TestDevice, signedBy key: SigningKeyPair, account: SigningPublicKey, kept: [DeviceID] = []) -> [UInt8] {
        var s = DeviceStatement(kind: .revoke, accountKey: account.bytes, signerKey: key.publicKey.bytes, subject: target.id,
                                at: Timestamp(seconds: 1_800_000_001))
        s.kept = kept
        return s.signed(by: key)
    }

    func revoke(_ target: TestDevice, on device: TestDevice) throws {
        let log = DeviceLog(rows: try device.store.rows(.devices, from: [], to: nil), accountKey: device.identity.account.publicKey)
        let signed = revocation(of: target, signedBy: device.identity.deviceSigning, account: device.identity.account.publicKey,
                                kept: log.countingStatements(signedBy: target.id))
        let (key, record) = DeviceStatement.row(signed, displayName: "revocation")
        try device.store.putRosterEntry(record, key: key)
    }

    func trust(_ d: TestDevice, of id: DeviceID) throws -> RosterMember.Trust? {
        try Roster.load(from: d.store, accountKey: d.identity.account.publicKey).roster[id]?.trust
    }

    /// The device was revoked while its engine was off; once it runs, the
    /// first frames it sends are refused and answered, and it stops
    /// (status `revoked`, naming the revoker) with its note still held.
    func testARevokedDeviceIsToldByTheSiblingsThatRefuseItsFrames() throws {
        let fleet = try SimFleet(["a", "b", "c"], base: base)
        let (a, b, c) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        try revoke(c, on: a)
        try fleet.engines[0].attach()
        try fleet.engines[1].attach()
        for _ in 0..<100 { fleet.tick() }
        XCTAssertEqual(try trust(b, of: c.id), .revoked)
        try c.store.put(note("written on c", "stays on c"))
        try fleet.engines[2].attach()
        for _ in 0..<40 { fleet.tick() }     // two seconds
        XCTAssertEqual(fleet.engines[2].status().phase, .revoked, "c was not told")
        XCTAssertEqual(try trust(c, of: c.id), .revoked)
        XCTAssertEqual(fleet.engines[2].status().revocation?.by, a.id.hex)
        XCTAssertEqual(fleet.engines[2].status().revocation?.byName, "a")
        XCTAssertEqual(try c.store.counts(.notebook).live, 1, "c keeps what it wrote")
        for d in [a, b] { XCTAssertEqual(try d.store.counts(.notebook).live, 0) }
        // Told once or twice each, not at every frame: a revoked device's frames cannot make siblings flood.
        for _ in 0..<400 { fleet.tick() }     // twenty seconds more
        for e in fleet.engines.prefix(2) { XCTAssertLessThanOrEqual(e.metricsSnapshot().revocationNoticesSent, 2) }
        XCTAssertEqual(fleet.engines[2].status().phase, .revoked)
    }

    /// The evidence is the revocation and what makes it count: the
    /// revoker's admission, not the other devices' statements.
    func testTheEvidenceIsTheRevocationAndItsSignersChainOnly() throws {
        let fleet = try SimFleet(["a", "b", "c"], base: base)
        let (a, b, c) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        try revoke(c, on: a)
        let log = DeviceLog(rows: try a.store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey)
        let evidence = log.evidence(against: c.id)
        let revocationID = log.entries.values.first { $0.statement.kind == .revoke && $0.statement.subject == c.id }!.id
        let admitOf = { (d: TestDevice) in log.entries.values.first { $0.statement.kind == .admit && $0.statement.subject == d.id }!.id }
        XCTAssertEqual(evidence, [revocationID, admitOf(a)])
        XCTAssertFalse(evidence.contains(admitOf(b)))
        XCTAssertTrue(log.evidence(against: b.id).isEmpty, "a trusted device has no evidence against it")
    }

    /// The throttle alone: one notice per device per interval, and at most
    /// one look for a refused frame's sender per short interval.
    func testNoticesAreRateLimited() {
        var t = RevocationNoticeThrottle()
        let d = DeviceID(bytes: [UInt8](repeating: 7, count: 16))!
        XCTAssertTrue(t.mayLook(nowMs: 1_000))
        XCTAssertFalse(t.mayLook(nowMs: 1_100))
        XCTAssertTrue(t.mayLook(nowMs: 1_000 + RevocationNoticeThrottle.anyMs))
        XCTAssertTrue(t.mayTell(d, nowMs: 1_000))
        XCTAssertFalse(t.mayTell(d, nowMs: 1_000 + RevocationNoticeThrottle.perDeviceMs - 1))
        XCTAssertTrue(t.mayTell(d, nowMs: 1_000 + RevocationNoticeThrottle.perDeviceMs))
    }

    /// Notices that prove nothing move nothing: raw bytes from the relay,
    /// an anonymous box, a trusted sibling's bare claim, a revocation signed
    /// by a key on no roster, a real-looking one whose signature was
    /// altered. The device stays trusted and syncs on; a real revocation,
    /// told the same way, then does revoke it.
    func testAForgedOrUnsignedNoticeIsIgnored() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let account = a.identity.account.publicKey
        try fleet.engines[1].attach()
        let scratch = try ReplicaStore(path: base + "/scratch.sqlite", deviceID: DeviceID(bytes: [UInt8](repeating: 9, count: 16))!,
                                       create: true, clock: fleet.clock, random: SeededRandom(seed: 9))
        func row(_ signed: [UInt8], key: DeviceID? = nil) throws -> Row {
            let (id, record) = DeviceStatement.row(signed, displayName: "revocation")
            try scratch.putRosterEntry(record, key: key ?? id)
            return try scratch.row(.devices, key ?? id)!
        }
        let stranger = try row(revocation(of: b, signedBy: SigningKeyPair(), account: account))
        var real = revocation(of: b, signedBy: a.identity.deviceSigning, account: account)
        let realID = DeviceStatement.id(of: real)
        real[real.count - 1] ^= 1
        let altered = try row(real, key: realID)
        let notices: [RevocationNotice] = [RevocationNotice(rows: []), RevocationNotice(rows: [stranger]), RevocationNotice(rows: [altered])]

        let channel = SyncChannel.name(userIDHash: b.identity.userIDHash, device: b.id)
        let bBox = b.identity.deviceBox.publicKey
        // As the relay: bytes in no box.
        try fleet.relay.publish(Envelope.magic + [OpaqueEnvelope.formatVersion] + notices[1].encoded(), to: channel)
        // As anyone who knows the account: an anonymous box claiming to be a.
        var anonymous = FrameSealer(identity: FrameIdentity(deviceID: a.id, userIDHash: a.identity.userIDHash, box: BoxKeyPair()),
                                    session: [1, 2, 3, 4, 5, 6, 7, 8], sessionStart: 1, maxFrameSize: fleet.relay.maxFrameSize)
        try fleet.relay.publish(anonymous.sealAnonymously(SyncMessage(subKind: .revocationNotice, payload: notices[1].encoded()),
                                                          to: b.id, boxKey: bBox), to: channel)
        // As a trusted sibling (a's own keys): a bare claim, a stranger's revocation, an altered one.
        var asA = FrameSealer(identity: FrameIdentity(deviceID: a.id, userIDHash: a.identity.userIDHash, box: a.identity.deviceBox),
                              session: [8, 7, 6, 5, 4, 3, 2, 1], sessionStart: 1, maxFrameSize: fleet.relay.maxFrameSize)
        for n in notices {
            for frame in asA.seal(SyncMessage(subKind: .revocationNotice, payload: n.encoded()), to: b.id, boxKey: bBox, messageID: [0, 0, 0, 0, 0, 0, 0, 1]) {
                try fleet.relay.publish(frame, to: channel)
            }
        }
        for _ in 0..<20 { fleet.tick() }
        XCTAssertNotEqual(fleet.engines[1].status().phase, .revoked)
        XCTAssertNil(fleet.engines[1].status().revocation)
        XCTAssertEqual(try trust(b, of: b.id), .trusted)
        XCTAssertEqual(try trust(b, of: a.id), .trusted)
        XCTAssertNil(try b.store.row(.devices, realID), "an altered statement is not stored")
        let dropped = fleet.engines[1].status().dropped
        XCTAssertGreaterThan(dropped[FrameDrop.uncertifiedRoster.rawValue] ?? 0, 0, "\(dropped)")
        XCTAssertGreaterThan(dropped[FrameDrop.unexpected.rawValue] ?? 0, 0, "\(dropped)")
        XCTAssertTrue(fleet.engines[1].status().events.contains { $0.contains("says this device is no longer trusted") })

        // B still syncs with a...
        try fleet.engines[0].attach()
        try a.store.put(note("from a", "reaches b"))
        for _ in 0..<100 { fleet.tick() }
        XCTAssertEqual(try b.store.counts(.notebook).live, 1)
        // ...until a really revokes it, which it is then told.
        try revoke(b, on: a)
        for _ in 0..<40 { fleet.tick() }
        XCTAssertEqual(fleet.engines[1].status().phase, .revoked)
        XCTAssertEqual(fleet.engines[1].status().revocation?.by, a.id.hex)
    }
}
