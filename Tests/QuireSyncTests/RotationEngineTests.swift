import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// Backup-key rotation through real engines on a memory relay, with a
/// shared cloud folder: the round that writes the anchor under the new key,
/// the revoked device that can neither read it nor have its forgery used,
/// keys asked of a sibling, a joiner admitted after a rotation.
final class RotationEngineTests: XCTestCase {
    typealias Generation = TestGeneration

    var base = ""
    var cloud = ""
    var devices: [TestDevice] = []
    var engines: [SyncEngine?] = []
    var generations: [Generation] = []
    /// What each engine stored as its rotation keys (keys/backup-keys).
    var kept: [Locked<BackupKeyRing>] = []
    let relay = MemoryRelay(maxFrameSize: 64 << 10)
    let clock = SimClock()
    var configuration: SyncConfiguration {
        var c = SyncConfiguration()
        c.barrierMinimumTombstones = 1
        c.quietWindowMilliseconds = 1_000
        return c
    }

    override func setUp() {
        base = makeShortTemporaryDirectory()
        cloud = base + "/cloud"
        try? FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
    }
    override func tearDown() {
        for e in engines { e?.stop() }
        try? FileManager.default.removeItem(atPath: base)
    }

    func makeFleet(_ names: [String]) throws {
        devices = try QuireSyncTests.makeFleet(names, in: base, clock: clock)
        for i in devices.indices {
            generations.append(Generation())
            kept.append(Locked(BackupKeyRing()))
            engines.append(try makeEngine(i))
        }
    }

    func makeEngine(_ i: Int, seed: UInt64 = 0) throws -> SyncEngine {
        let d = devices[i], generation = generations[i], store = kept[i]
        var deps = SyncEngine.Dependencies(store: d.store, identity: d.identity, relay: relay, clock: clock,
                                           random: SeededRandom(seed: UInt64(i + 1) * 977 + seed), generation: { generation.get() })
        deps.cloud = CloudFolder(path: cloud, accountID: d.identity.userIDHash)
        deps.setGeneration = { try generation.set($0) }
        deps.rotationKeys = store.value
        deps.keepRotationKeys = { store.value = $0 }
        return SyncEngine(deps, configuration: configuration)
    }

    func tick(_ n: Int) {
        for _ in 0..<n {
            relay.deliverAll(limit: 100_000)
            for e in engines { e?.step() }
            clock.advance(ms: 100)
        }
    }

    func anchorKeys(_ i: Int) -> AnchorKeys {
        let e = engines[i]!
        e.lock.lock(); defer { e.lock.unlock() }
        return e.anchorKeys
    }

    var folder: CloudFolder { CloudFolder(path: cloud, accountID: devices[0].identity.userIDHash) }

    /// After c is revoked, the remaining devices run a round for the new key
    /// alone; c can open nothing written since; the anchor c forges under
    /// its old key with a higher generation and a commit record to match is
    /// refused (and said) by an honest device starting up, which loses nothing.
    func testARevocationRotatesTheAnchorAndTheRevokedDeviceCanNeitherReadNorForgeIt() throws {
        try makeFleet(["a", "b", "c"])
        let (a, c) = (devices[0], devices[2])
        for i in 0..<5 { _ = try a.store.put(note("n\(i)", "words \(i)")) }
        let doomed = try a.store.put(note("doomed", "gone"))
        for e in engines { try e?.attach() }
        tick(30)
        try a.store.delete(.notebook, doomed.key)
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1], "a first barrier")
        XCTAssertEqual(try folder.candidates().first?.header.keySet, [], "written before any revocation: the original key")

        engines[2]?.stop()
        engines[2] = nil
        var rotation: DeviceID?
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: clock.now()) { id, _ in rotation = id }
        tick(420)
        let r = try XCTUnwrap(rotation)
        XCTAssertEqual(generations[0].get(), 2, "a round ran for the new key, with no tombstone to collect")
        XCTAssertEqual(generations[1].get(), 2)
        for i in [0, 1] { XCTAssertTrue(kept[i].value.holds(r), "device \(i) stored the rotation key before using it") }
        let newest = try XCTUnwrap(try folder.newest(keys: anchorKeys(1)))
        XCTAssertEqual(newest.0.generation, 2)
        XCTAssertEqual(newest.0.keySet, [r])
        XCTAssertEqual(newest.1.rows.filter { $0.namespace == .notebook }.count, 5)

        // c holds everything it ever held: the original key, no key of r.
        let thief = try AnchorKeys.of(identity: c.identity, store: c.store, ring: kept[2].value)
        let bytes = Array(FileManager.default.contents(atPath: folder.anchorPath)!)
        XCTAssertThrowsError(try AnchorFile.open(bytes, accountID: folder.accountID, key: c.identity.backupKey))
        XCTAssertNil(thief.ring.key(for: [r], original: c.identity.backupKey))
        XCTAssertThrowsError(try AnchorFile.open(bytes, accountID: folder.accountID, keys: thief))

        // c forges generation 9 (its own note only) and a commit record at 9.
        let forgedNote = try c.store.put(note("forged", "from the revoked device"))
        let forged = try AnchorFile.sealFormat1(AnchorSnapshot(generation: 9, rows: [forgedNote]), accountID: folder.accountID,
                                                backupKey: c.identity.backupKey, at: clock.now())
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (1).qanchor"),
                                                    contents: Data(forged)))
        let record = try AEAD.seal([0, 0, 0, 0, 0, 0, 0, 9], associatedData: Array("quire.commit-record".utf8) + folder.accountID,
                                   with: c.identity.backupKey)
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.commitRecordPath, contents: Data(record)))
        let before = try allRows(a.store)
        engines[0]?.stop()
        engines[0] = try makeEngine(0, seed: 5)
        try engines[0]?.attach()
        tick(50)
        XCTAssertEqual(generations[0].get(), 2, "not moved to the forged generation")
        XCTAssertEqual(try allRows(a.store), before, "nothing lost, nothing taken from the forgery")
        XCTAssertNil(try a.store.row(.notebook, forgedNote.key))
        let warnings = engines[0]!.status().cloudWarnings ?? []
        XCTAssertTrue(warnings.contains { $0.hasPrefix("REFUSED an anchor above this device's generation 2") && $0.contains("revocation of 'c'") },
                      "\(warnings)")
    }

    /// A revocation signed by a device that is then revoked by one that had
    /// not seen it counts nowhere (DeviceLog): the device it revoked is on
    /// the roster again, and the engines that see it say so once, with the
    /// command that revokes it again.
    func testARevocationVoidedByALaterOneIsSaid() throws {
        try makeFleet(["a", "b", "c", "d"])
        let (a, c, d) = (devices[0], devices[2], devices[3])
        for e in engines { try e?.attach() }
        tick(30)
        // d is lost and c offline; a revokes d.
        for i in [2, 3] { engines[i]?.stop(); engines[i] = nil }
        try Revoking.revoke(d.id, by: a.identity, store: a.store, at: clock.now())
        tick(60)
        XCTAssertTrue(engines[1]!.status().events.contains { $0.contains("device 'd' was revoked") }, "\(engines[1]!.status().events)")
        XCTAssertFalse(engines[1]!.status().events.contains { $0.contains("counts nowhere") })
        // a is lost as well; c, which never heard of d's revocation, revokes a and comes back.
        engines[0]?.stop()
        engines[0] = nil
        try Revoking.revoke(a.id, by: c.identity, store: c.store, at: clock.now())
        engines[2] = try makeEngine(2)
        try engines[2]?.attach()
        tick(120)
        for i in [1, 2] {
            let events = engines[i]!.status().events
            XCTAssertEqual(events.filter { $0.contains("a revocation of device 'd' counts nowhere") && $0.contains("'quire devices revoke d'") }.count, 1,
                           "said once, also by the device whose revocation voided it: \(events)")
        }
        let roster = DeviceLog(rows: try devices[1].store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey).roster()
        XCTAssertEqual(roster[d.id]?.isRevoked, false, "the rule the message speaks of")
        XCTAssertEqual(roster[a.id]?.isRevoked, true)
    }

    /// A revocation whose copy of the key for b is damaged: b says so, asks
    /// a sibling, gets the key (checked against the revocation), and then
    /// writes under the new key like everyone else.
    func testADeviceWhoseSealedKeyIsDamagedAsksASiblingForIt() throws {
        try makeFleet(["a", "b", "c"])
        let (a, b, c) = (devices[0], devices[1], devices[2])
        let log = DeviceLog(rows: try a.store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey)
        var s = DeviceStatement(kind: .revoke, accountKey: a.identity.account.publicKey.bytes,
                                signerKey: a.identity.deviceSigning.publicKey.bytes, subject: c.id, at: clock.now())
        s.kept = log.countingStatements(signedBy: c.id)
        let fresh = SecretBytes(randomCount: 32)
        s.sealedRotationKeys[a.id] = Box.sealAnonymously(fresh.withUnsafeBytes { Array($0) }, to: a.identity.deviceBox.publicKey)
        s.sealedRotationKeys[b.id] = [UInt8](repeating: 7, count: 80)
        s.rotationKeyCheck = BackupKeyRing.check(of: fresh)
        let (r, record) = DeviceStatement.row(s.signed(by: a.identity.deviceSigning), displayName: "revocation")
        try a.store.putRosterEntry(record, key: r)
        try b.store.apply(try a.store.rows(.devices, from: [], to: nil))
        engines[2] = nil
        // b alone first: it names what is wrong.
        try engines[1]?.attach()
        tick(2)
        let alone = engines[1]!.status().cloudWarnings ?? []
        XCTAssertTrue(alone.contains { $0.contains("does not open") }, "\(alone)")
        XCTAssertTrue(alone.contains { $0.contains("does not hold the backup key of the revocation of 'c'") }, "\(alone)")
        XCTAssertNil(anchorKeys(1).writing, "it writes nothing under an older key meanwhile")
        try engines[0]?.attach()
        tick(200)
        XCTAssertTrue(kept[1].value.keys[r].map { $0.isEqual(to: fresh) } ?? false, "a gave b the key, and b stored it")
        XCTAssertNotNil(anchorKeys(1).writing)
        XCTAssertTrue(anchorKeys(1).writing!.key.isEqual(to: anchorKeys(0).writing!.key))
        XCTAssertTrue(engines[0]!.status().events.contains { $0.contains("gave 'b' the key of the revocation of 'c'") }, "\(engines[0]!.status().events)")
        XCTAssertNil(engines[1]!.status().cloudWarnings?.first { $0.contains("does not hold") })
    }

    /// A device admitted after a rotation gets, in its admit, every key the
    /// admitting device held: it reads the anchor written under the current
    /// key and writes under it.
    func testADeviceAdmittedAfterARotationReadsTheCurrentAnchor() throws {
        let homeA = DeviceHome(path: base + "/a")
        let (ia, sa) = try homeA.create(name: "a", clock: clock)
        let passphrase = "correct horse battery"
        func invite() throws -> Invite {
            try Invite.open(try Invite.make(identity: ia, store: sa, prefs: try homeA.prefs.load(), passphrase: passphrase, strength: .testing,
                                            now: clock.now(), lifetime: 3600), passphrase: passphrase, now: clock.now())
        }
        var running: [SyncEngine] = []
        var rings: [Locked<BackupKeyRing>] = []
        func engine(_ identity: Identity, _ store: ReplicaStore, _ home: DeviceHome) throws -> SyncEngine {
            let ring = Locked(BackupKeyRing())
            var deps = SyncEngine.Dependencies(store: store, identity: identity, relay: relay, clock: clock,
                                               random: SeededRandom(seed: UInt64(running.count + 3)), relayDescription: "test")
            deps.enrolment = FileManager.default.contents(atPath: home.enrolmentPath).map { Array($0) }
            deps.admitted = { key in
                _ = try identity.withBackupKey(key, savingIn: home.keysPath)
                unlink(home.enrolmentPath)
            }
            deps.keepRotationKeys = { ring.value = $0 }
            let e = SyncEngine(deps)
            try e.attach()
            running.append(e)
            rings.append(ring)
            return e
        }
        defer { for e in running { e.stop() } }
        func tick(_ n: Int) { for _ in 0..<n { relay.deliverAll(limit: 100_000); for e in running { e.step() }; clock.advance(ms: 50) } }
        let engineA = try engine(ia, sa, homeA)
        let homeB = DeviceHome(path: base + "/b")
        let (ib, sb) = try invite().join(home: homeB, name: "b", role: .device, clock: clock)
        let engineB = try engine(ib, sb, homeB)
        tick(200)
        engineB.stop()
        try Revoking.revoke(ib.deviceID, by: ia, store: sa, at: clock.now())
        tick(20)
        let keysA = { () -> AnchorKeys in engineA.lock.lock(); defer { engineA.lock.unlock() }; return engineA.anchorKeys }
        let r = try XCTUnwrap(keysA().required.first)
        XCTAssertTrue(rings[0].value.holds(r))

        let homeC = DeviceHome(path: base + "/c")
        let (ic, sc) = try invite().join(home: homeC, name: "c", role: .device, clock: clock)
        let engineC = try engine(ic, sc, homeC)
        tick(300)
        let admit = try XCTUnwrap(Roster.load(from: sa, accountKey: ia.account.publicKey).roster[ic.deviceID])
        XCTAssertEqual(admit.trust, .trusted)
        XCTAssertNotNil(admit.sealedKeyRing, "the admit carries the rotation keys")
        XCTAssertTrue(rings[2].value.holds(r), "c opened them and stored them")
        let keysC = { () -> AnchorKeys in engineC.lock.lock(); defer { engineC.lock.unlock() }; return engineC.anchorKeys }
        let account = ia.userIDHash
        let anchor = try AnchorFile.seal(AnchorSnapshot(generation: 1, rows: []), accountID: account, keys: keysA(), at: clock.now())
        XCTAssertEqual(try AnchorFile.open(anchor, accountID: account, keys: keysC()).1.generation, 1)
        XCTAssertTrue(try XCTUnwrap(keysC().writing).key.isEqual(to: try XCTUnwrap(keysA().writing).key))
    }
}
