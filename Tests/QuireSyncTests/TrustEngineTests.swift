import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// Revocation and admission through real engines on a simulated relay.
final class TrustEngineTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func revoke(_ target: TestDevice, on device: TestDevice) throws {
        let log = DeviceLog(rows: try device.store.rows(.devices, from: [], to: nil), accountKey: device.identity.account.publicKey)
        var s = DeviceStatement(kind: .revoke, accountKey: device.identity.account.publicKey.bytes,
                                signerKey: device.identity.deviceSigning.publicKey.bytes, subject: target.id, at: Timestamp(seconds: 1_800_000_001))
        s.kept = log.countingStatements(signedBy: target.id)
        let (key, record) = DeviceStatement.row(s.signed(by: device.identity.deviceSigning), displayName: "revocation")
        try device.store.putRosterEntry(record, key: key)
    }

    func roster(_ d: TestDevice) throws -> Roster { try Roster.load(from: d.store, accountKey: d.identity.account.publicKey).roster }

    /// A legacy roster row that drops a revocation (a head with a dominating
    /// version vector) is refused on arrival: the revocation only grows.
    func testARowThatWouldUndoARevocationIsRefusedOnArrival() throws {
        let fleet = try SimFleet(["a", "b", "c"], base: base)
        let (a, b, c) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        guard case .device(var record)? = try a.store.row(.devices, c.id)?.content else { return XCTFail() }
        record.revocation = DeviceRevocation(deviceID: c.id, revokedAt: fleet.clock.now()).signed(by: a.identity.account.secret!)
        try a.store.putRosterEntry(record, key: c.id)
        // B saw the revocation and then wrote c's row again without it (what a
        // device holding the old account key could do): its head dominates.
        try b.store.apply([try a.store.row(.devices, c.id)!])
        record.revocation = nil
        try b.store.putRosterEntry(record, key: c.id)
        XCTAssertEqual(try roster(b)[c.id]?.isRevoked, false, "the row merge alone un-revokes")
        try fleet.engines[0].attach()
        try fleet.engines[1].attach()
        for _ in 0..<100 { fleet.tick() }
        XCTAssertEqual(try roster(a)[c.id]?.trust, .revoked)
        XCTAssertGreaterThan(fleet.engines[0].status().dropped[FrameDrop.uncertifiedRoster.rawValue] ?? 0, 0)
    }

    /// The attack, in the engine: a revoked device that never learned
    /// of its revocation admits a new device and revokes an honest one.
    func testARevokedDevicesLaterStatementsCountNowhere() throws {
        let fleet = try SimFleet(["a", "b", "c"], base: base)
        let (a, b, c) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        try revoke(c, on: a)
        try fleet.engines[0].attach()
        try fleet.engines[1].attach()
        for _ in 0..<100 { fleet.tick() }
        XCTAssertEqual(try roster(b)[c.id]?.trust, .revoked)
        // C (which never heard) revokes A and writes a note.
        try revoke(a, on: c)
        try c.store.put(note("from the revoked", "should not arrive"))
        try fleet.engines[2].attach()
        for _ in 0..<200 { fleet.tick() }
        for d in [a, b] {
            XCTAssertEqual(try roster(d)[a.id]?.trust, .trusted)
            XCTAssertEqual(try d.store.counts(.notebook).live, 0)
        }
        XCTAssertNil(try a.store.row(.devices, DeviceLog(rows: try c.store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey)
            .entries.values.first { $0.statement.kind == .revoke && $0.statement.subject == a.id }!.id))
    }

    /// Pairing through engines: the invite's grant admits the first joiner
    /// (which then holds the backup key), refuses a second, and an expired
    /// invite admits nobody, by the admitting device's own clock.
    func testAnInviteAdmitsOneDeviceOnceAndNotAfterItExpires() throws {
        let clock = SimClock()
        let relay = MemoryRelay(maxFrameSize: 64 << 10)
        let homeA = DeviceHome(path: base + "/a")
        let (ia, sa) = try homeA.create(name: "a", clock: clock)
        let passphrase = "correct horse battery"
        let text = try Invite.make(identity: ia, store: sa, prefs: try homeA.prefs.load(), passphrase: passphrase, strength: .testing,
                                   now: clock.now(), lifetime: 3600)
        let invite = try Invite.open(text, passphrase: passphrase, now: clock.now())
        var engines: [SyncEngine] = []
        var stores: [ReplicaStore] = [sa]
        func engine(_ identity: Identity, _ store: ReplicaStore, _ home: DeviceHome) throws -> SyncEngine {
            var deps = SyncEngine.Dependencies(store: store, identity: identity, relay: relay, clock: clock,
                                               random: SeededRandom(seed: UInt64(engines.count + 3)), relayDescription: "test")
            deps.enrolment = FileManager.default.contents(atPath: home.enrolmentPath).map { Array($0) }
            deps.admitted = { key in
                _ = try identity.withBackupKey(key, savingIn: home.keysPath)
                unlink(home.enrolmentPath)
            }
            let e = SyncEngine(deps)
            try e.attach()
            engines.append(e)
            return e
        }
        func tick(_ n: Int) { for _ in 0..<n { relay.deliverAll(limit: 100_000); for e in engines { e.step() }; clock.advance(ms: 50) } }
        func trust(_ store: ReplicaStore, _ id: DeviceID) throws -> RosterMember.Trust? {
            try Roster.load(from: store, accountKey: ia.account.publicKey).roster[id]?.trust
        }
        _ = try engine(ia, sa, homeA)
        let homeB = DeviceHome(path: base + "/b")
        let (ib, sb) = try invite.join(home: homeB, name: "b", role: .device, clock: clock)
        stores.append(sb)
        _ = try engine(ib, sb, homeB)
        tick(200)
        XCTAssertEqual(try trust(sa, ib.deviceID), .trusted)
        XCTAssertEqual(try trust(sb, ib.deviceID), .trusted)
        XCTAssertEqual(try Roster.load(from: sa, accountKey: ia.account.publicKey).roster[ib.deviceID]?.addedBy, ia.deviceID)
        XCTAssertEqual(FileManager.default.contents(atPath: homeB.keysPath + "/backup.key").map { Array($0) },
                       ia.backupKey.withUnsafeBytes { Array($0) }, "the joiner received the backup key sealed to it")
        XCTAssertFalse(FileManager.default.fileExists(atPath: homeB.enrolmentPath))
        try sa.put(note("shared", "reaches b"))
        tick(100)
        XCTAssertEqual(try sb.counts(.notebook).live, 1)

        // The same invite again: refused.
        let homeC = DeviceHome(path: base + "/c")
        let (ic, sc) = try invite.join(home: homeC, name: "c", role: .device, clock: clock)
        _ = try engine(ic, sc, homeC)
        tick(200)
        XCTAssertNotEqual(try trust(sa, ic.deviceID), .trusted)
        XCTAssertNotEqual(try trust(sc, ic.deviceID), .trusted)
        XCTAssertEqual(try sc.counts(.notebook).live, 0)

        // A fresh invite used after its expiry (by the admitting device's clock): refused.
        let late = try Invite.open(try Invite.make(identity: ia, store: sa, prefs: try homeA.prefs.load(), passphrase: passphrase,
                                                   strength: .testing, now: clock.now(), lifetime: 3600), passphrase: passphrase, now: clock.now())
        let homeD = DeviceHome(path: base + "/d")
        let (id, sd) = try late.join(home: homeD, name: "d", role: .device, clock: clock)
        clock.advance(ms: 3_700_000)
        _ = try engine(id, sd, homeD)
        tick(200)
        XCTAssertNotEqual(try trust(sa, id.deviceID), .trusted)
        for e in engines { e.stop() }
    }

    /// Introductions with made-up sender ids and enrolments (anyone who knows
    /// the account id can send them) are refused, counted, and logged at most
    /// once a minute.
    func testMadeUpSendersCannotFloodTheLog() throws {
        let fleet = try SimFleet(["a"], base: base)
        let a = fleet.devices[0]
        let lines = Locked(0)
        var deps = SyncEngine.Dependencies(store: a.store, identity: a.identity, relay: fleet.relay, clock: fleet.clock,
                                           random: SeededRandom(seed: 9), log: { _ in lines.value += 1 }, relayDescription: "test")
        deps.statusPath = nil
        let engine = SyncEngine(deps)
        fleet.engines = [engine]
        try engine.attach()
        fleet.tick()
        let before = lines.value
        let channel = SyncChannel.name(userIDHash: a.identity.userIDHash, device: a.id)
        for i in 0..<300 {
            let fake = Identity(account: SigningKeyPair(), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: SecretBytes(randomCount: 32))
            var sealer = FrameSealer(identity: FrameIdentity(deviceID: fake.deviceID, userIDHash: a.identity.userIDHash, box: fake.deviceBox),
                                     session: [UInt8](repeating: UInt8(i % 256), count: 8), sessionStart: 1, maxFrameSize: 64 << 10)
            let message = IntroduceMessage(rows: [], enrolment: [UInt8](repeating: UInt8(i % 256), count: 40))
            try fleet.relay.publish(sealer.sealAnonymously(SyncMessage(subKind: .introduce, payload: message.encoded()),
                                                           to: a.id, boxKey: a.identity.deviceBox.publicKey), to: channel)
            if i % 50 == 0 { fleet.tick() }
        }
        for _ in 0..<20 { fleet.tick() }
        XCTAssertGreaterThanOrEqual(engine.status().dropped[FrameDrop.uncertifiedRoster.rawValue] ?? 0, 300)
        XCTAssertLessThanOrEqual(lines.value - before, 3, "300 made-up senders wrote \(lines.value - before) log lines")
        engine.stop()
    }
}

final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
