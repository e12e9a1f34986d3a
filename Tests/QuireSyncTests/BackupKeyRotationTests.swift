import Foundation
import QuireCore
import QuireCrypto
import XCTest
@testable import QuireStore
@testable import QuireSync

/// The backup keys of rotations, without engines: which keys a log calls
/// for, what each device can open, which anchors it may trust.
final class BackupKeyRotationTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func id(_ byte: UInt8) -> DeviceID { DeviceID(bytes: [UInt8](repeating: byte, count: 16))! }

    func snapshot(_ generation: UInt64, _ title: String = "n") -> AnchorSnapshot {
        let actor = Actor(device: id(1), incarnation: 9)
        let row = Row.tombstone(.notebook, id(3), context: VersionVector())
            .edited(by: actor, to: .note(Note(title: title, body: Array("words\n".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        return AnchorSnapshot(generation: generation, rows: [row])
    }

    /// The keys a device holds once it opened what its log seals to it.
    func keys(of device: TestDevice, ring start: BackupKeyRing = BackupKeyRing()) throws -> AnchorKeys {
        let keys = try AnchorKeys.of(identity: device.identity, store: device.store, ring: start)
        let ring = keys.schedule.open(for: device.id, box: device.identity.deviceBox, sealedRing: nil, into: start).ring
        return try AnchorKeys(original: device.identity.backupKey, ring: ring, schedule: keys.schedule, accountKey: device.identity.account.publicKey)
    }

    func share(_ from: TestDevice, with others: [TestDevice]) throws {
        for other in others { try other.store.apply(try from.store.rows(.devices, from: [], to: nil)) }
    }

    // MARK: The key of a set

    func testTheKeyOfASetIsTheOriginalForNoneIgnoresOrderAndNeedsEveryPart() throws {
        let original = SecretBytes(randomCount: 32)
        let (k1, k2) = (SecretBytes(randomCount: 32), SecretBytes(randomCount: 32))
        var ring = BackupKeyRing()
        ring.add(id(7), k1)
        ring.add(id(2), k2)
        XCTAssertTrue(try XCTUnwrap(ring.key(for: [], original: original)).isEqual(to: original), "epoch 0: the original key")
        let both = try XCTUnwrap(ring.key(for: [id(7), id(2)], original: original))
        XCTAssertTrue(both.isEqual(to: try XCTUnwrap(ring.key(for: [id(2), id(7), id(2)], original: original))), "a set: order and repeats do not matter")
        XCTAssertFalse(both.isEqual(to: try XCTUnwrap(ring.key(for: [id(7)], original: original))))
        XCTAssertFalse(both.isEqual(to: original))
        XCTAssertFalse(both.isEqual(to: try XCTUnwrap(ring.key(for: [id(7), id(2)], original: SecretBytes(randomCount: 32)))))
        var partial = BackupKeyRing()
        partial.add(id(7), k1)
        XCTAssertNil(partial.key(for: [id(7), id(2)], original: original), "a device without one part makes no key of the set")
        // The check value names a key and nothing else.
        XCTAssertEqual(BackupKeyRing.check(of: k1), BackupKeyRing.check(of: SecretBytes(copying: k1.withUnsafeBytes { Array($0) })))
        XCTAssertNotEqual(BackupKeyRing.check(of: k1), BackupKeyRing.check(of: k2))
        // Sealed to a device, opened by it only.
        let box = BoxKeyPair()
        let opened = try BackupKeyRing.open(ring.sealed(to: box.publicKey), with: box)
        XCTAssertEqual(opened.ids, [id(2), id(7)])
        XCTAssertTrue(try XCTUnwrap(opened.key(for: [id(2), id(7)], original: original)).isEqual(to: both))
        XCTAssertThrowsError(try BackupKeyRing.open(ring.sealed(to: box.publicKey), with: BoxKeyPair()))
        XCTAssertEqual(try BackupKeyRing.open(ring.sealed(to: box.publicKey, only: [id(7)]), with: box).ids, [id(7)])
    }

    func testTheKeyFileIsOwnerOnlyDurableAndRefusedWhenDamaged() throws {
        let keysPath = base + "/keys"
        try FileManager.default.createDirectory(atPath: keysPath, withIntermediateDirectories: true)
        XCTAssertTrue(try BackupKeyRing.load(keysPath: keysPath).isEmpty, "a device from before rotation: epoch 0 only")
        var ring = BackupKeyRing()
        ring.add(id(4), SecretBytes(randomCount: 32))
        try ring.save(keysPath: keysPath)
        let path = keysPath + "/" + BackupKeyRing.fileName
        var st = stat()
        XCTAssertEqual(lstat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        let loaded = try BackupKeyRing.load(keysPath: keysPath)
        XCTAssertEqual(loaded.ids, [id(4)])
        XCTAssertTrue(loaded.keys[id(4)]!.isEqual(to: ring.keys[id(4)]!))
        try Data("not keys".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        XCTAssertThrowsError(try BackupKeyRing.load(keysPath: keysPath)) { e in
            XCTAssertTrue("\(e)".contains(path) && "\(e)".contains("damaged"), "\(e)")
        }
        try ring.save(keysPath: keysPath)
        chmod(path, 0o644)
        XCTAssertThrowsError(try BackupKeyRing.load(keysPath: keysPath)) { e in
            XCTAssertTrue("\(e)".contains("accessible by other users"), "\(e)")
        }
    }

    // MARK: Rotations

    /// A revocation seals its fresh key to every device it leaves, never to
    /// the device it revokes; each checks its copy against the check value.
    func testARevocationSealsItsKeyToTheDevicesItLeavesAndNeverToTheRevokedOne() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, b, c) = (devices[0], devices[1], devices[2])
        var kept: (DeviceID, SecretBytes)?
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000)) { kept = ($0, $1) }
        try share(a, with: [b, c])
        let (rotation, key) = try XCTUnwrap(kept)
        let statement = try XCTUnwrap(DeviceLog(rows: try a.store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey)
            .entries[rotation]?.statement)
        XCTAssertEqual(Set(statement.sealedRotationKeys.keys), [a.id, b.id])
        XCTAssertNil(statement.sealedRotationKeys[c.id])
        for device in [a, b] {
            let held = try keys(of: device)
            XCTAssertEqual(held.required, [rotation])
            XCTAssertTrue(try XCTUnwrap(held.ring.keys[rotation]).isEqual(to: key))
            XCTAssertNotNil(held.writing)
        }
        let thief = try keys(of: c)
        XCTAssertFalse(thief.ring.holds(rotation))
        XCTAssertNil(thief.writing)
        XCTAssertTrue(thief.missingWords.contains("the revocation of 'c'"), thief.missingWords)
    }

    /// Two devices revoke two others concurrently. Every device that knows
    /// both, in whatever order it learned them, writes with the same key;
    /// each revoked device holds the key of the other's revocation (its
    /// revoker did not know) but never of its own, so it can make no key
    /// of the set, and what it forges under the keys it has is refused.
    func testConcurrentRevocationsConvergeOnOneKeyNeitherRevokedDeviceCanMake() throws {
        let devices = try makeFleet(["a", "b", "c", "d"], in: base)
        let (a, b, c, d) = (devices[0], devices[1], devices[2], devices[3])
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        try Revoking.revoke(d.id, by: b.identity, store: b.store, at: Timestamp(seconds: 1_800_000_000))
        let fromA = try a.store.rows(.devices, from: [], to: nil), fromB = try b.store.rows(.devices, from: [], to: nil)
        try a.store.apply(fromB)
        try b.store.apply(fromA)
        try c.store.apply(fromB); try c.store.apply(fromA)
        try d.store.apply(fromA); try d.store.apply(fromB)
        let (ka, kb, kc, kd) = (try keys(of: a), try keys(of: b), try keys(of: c), try keys(of: d))
        XCTAssertEqual(ka.required.count, 2)
        XCTAssertEqual(ka.required, kb.required)
        XCTAssertEqual(kc.required, ka.required, "the set is a function of the log, whoever reads it")
        let writeA = try XCTUnwrap(ka.writing), writeB = try XCTUnwrap(kb.writing)
        XCTAssertEqual(writeA.set, writeB.set)
        XCTAssertTrue(writeA.key.isEqual(to: writeB.key), "one newest key, however the revocations were learned")
        let rc = ka.schedule.rotations.values.first { $0.revoked == c.id }!.id
        let rd = ka.schedule.rotations.values.first { $0.revoked == d.id }!.id
        XCTAssertTrue(kc.ring.holds(rd) && !kc.ring.holds(rc), "c was left on the roster by b's revocation, never by its own")
        XCTAssertTrue(kd.ring.holds(rc) && !kd.ring.holds(rd))
        XCTAssertNil(kc.writing)
        XCTAssertNil(kd.writing)

        let account = a.identity.userIDHash
        let anchor = try AnchorFile.seal(snapshot(3), accountID: account, keys: ka, at: Timestamp(seconds: 5))
        XCTAssertEqual(try AnchorFile.open(anchor, accountID: account, keys: kb).1.generation, 3)
        for thief in [kc, kd] {
            XCTAssertNil(thief.ring.key(for: writeA.set, original: thief.original))
            XCTAssertThrowsError(try AnchorFile.open(anchor, accountID: account, key: thief.original))
            // What it forges with every key it can make is refused, not opened.
            for set in [[], thief.ring.ids] {
                let key = try XCTUnwrap(thief.ring.key(for: set, original: thief.original))
                let header = AnchorHeader(generation: 9, accountID: account, writtenAt: Timestamp(seconds: 9), keySet: set).encoded()
                let forged = header + (try AEAD.seal(snapshot(9, "forged").encoded(), associatedData: header, with: key))
                XCTAssertThrowsError(try AnchorFile.open(forged, accountID: account, keys: ka)) { e in
                    guard case .staleKey(let why) = e as? AnchorError else { return XCTFail("\(e)") }
                    XCTAssertTrue(why.contains("from before the revocation of"), why)
                }
            }
        }
    }

    /// A revocation made after seeing another is one more key in the set:
    /// the set only grows, and each step is a new key.
    func testALaterRevocationAddsToTheSet() throws {
        let devices = try makeFleet(["a", "b", "c", "d"], in: base)
        let (a, b) = (devices[0], devices[1])
        try Revoking.revoke(devices[2].id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        try share(a, with: [b])
        let first = try keys(of: b)
        try Revoking.revoke(devices[3].id, by: b.identity, store: b.store, at: Timestamp(seconds: 1_800_000_100))
        try share(b, with: [a])
        let second = try keys(of: a)
        XCTAssertEqual(first.required.count, 1)
        XCTAssertEqual(second.required.count, 2)
        XCTAssertTrue(Set(second.required).isSuperset(of: first.required))
        XCTAssertFalse(try XCTUnwrap(first.writing).key.isEqual(to: try XCTUnwrap(second.writing).key))
        // An anchor written under the first set is now from before a revocation.
        let account = a.identity.userIDHash
        let older = try AnchorFile.seal(snapshot(1), accountID: account, keys: first, at: Timestamp(seconds: 1))
        XCTAssertThrowsError(try AnchorFile.open(older, accountID: account, keys: second))
        XCTAssertEqual(try AnchorFile.open(older, accountID: account, keys: first).1.generation, 1,
                       "b, before the second revocation, read it")
    }

    /// A revocation whose sealed copy for one device is damaged: that
    /// device says so and holds nothing wrong; the revocation still counts.
    func testADamagedSealedKeyIsNamedAndNothingWrongIsKept() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, b, c) = (devices[0], devices[1], devices[2])
        let log = DeviceLog(rows: try a.store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey)
        var s = DeviceStatement(kind: .revoke, accountKey: a.identity.account.publicKey.bytes,
                                signerKey: a.identity.deviceSigning.publicKey.bytes, subject: c.id, at: Timestamp(seconds: 1_800_000_000))
        s.kept = log.countingStatements(signedBy: c.id)
        let fresh = SecretBytes(randomCount: 32)
        s.sealedRotationKeys[a.id] = Box.sealAnonymously(fresh.withUnsafeBytes { Array($0) }, to: a.identity.deviceBox.publicKey)
        s.sealedRotationKeys[b.id] = [UInt8](repeating: 7, count: 80)
        s.rotationKeyCheck = BackupKeyRing.check(of: fresh)
        let (key, record) = DeviceStatement.row(s.signed(by: a.identity.deviceSigning), displayName: "revocation")
        try a.store.putRosterEntry(record, key: key)
        try share(a, with: [b])
        XCTAssertEqual(try Roster.load(from: b.store, accountKey: b.identity.account.publicKey).roster[c.id]?.trust, .revoked,
                       "a damaged key does not undo the revocation")
        let plain = try AnchorKeys.of(identity: b.identity, store: b.store, ring: BackupKeyRing())
        let opened = plain.schedule.open(for: b.id, box: b.identity.deviceBox, sealedRing: nil, into: BackupKeyRing())
        XCTAssertTrue(opened.ring.isEmpty)
        XCTAssertEqual(opened.problems.count, 1)
        XCTAssertTrue(opened.problems[0].contains("does not open"), opened.problems[0])
        // A key that opens but is not the rotation's is refused too.
        XCTAssertFalse(plain.schedule.accepts(SecretBytes(randomCount: 32), for: key))
        XCTAssertTrue(plain.schedule.accepts(fresh, for: key))
    }

    /// An account upgraded from before rotation: its revocations carry no
    /// key, so nothing is required and anchors under the original key still
    /// open; the device revoked then still holds that key, and revoking it
    /// again (once) rotates it.
    func testARevocationFromBeforeRotationCanBeMadeAgainToRotateTheKey() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, c) = (devices[0], devices[2])
        let log = DeviceLog(rows: try a.store.rows(.devices, from: [], to: nil), accountKey: a.identity.account.publicKey)
        var old = DeviceStatement(kind: .revoke, accountKey: a.identity.account.publicKey.bytes,
                                  signerKey: a.identity.deviceSigning.publicKey.bytes, subject: c.id, at: Timestamp(seconds: 1_700_000_000))
        old.kept = log.countingStatements(signedBy: c.id)
        let (key, record) = DeviceStatement.row(old.signed(by: a.identity.deviceSigning), displayName: "revocation")
        try a.store.putRosterEntry(record, key: key)
        XCTAssertEqual(try Roster.load(from: a.store, accountKey: a.identity.account.publicKey).roster[c.id]?.trust, .revoked)
        let upgraded = try keys(of: a)
        XCTAssertEqual(upgraded.required, [], "epoch 0: the original key")
        let anchor = try AnchorFile.sealFormat1(snapshot(1), accountID: a.identity.userIDHash, backupKey: a.identity.backupKey, at: Timestamp(seconds: 1))
        XCTAssertEqual(try AnchorFile.open(anchor, accountID: a.identity.userIDHash, keys: upgraded).1.generation, 1)
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        XCTAssertEqual(try keys(of: a).required.count, 1, "revoked again: the key rotates for it")
        XCTAssertThrowsError(try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_001))) { e in
            XCTAssertEqual(e as? Revoking.Refusal, .unknownDevice, "once rotated, revoked is revoked")
        }
    }

    // MARK: Anchors and records

    func testAnAnchorNamingAKeyThisDeviceDoesNotKnowSaysSoAndLosesNothing() throws {
        let devices = try makeFleet(["a", "b"], in: base)
        let a = devices[0]
        let account = a.identity.userIDHash
        let folder = CloudFolder(path: base, accountID: account)
        let keys = try self.keys(of: a)
        try folder.write(try AnchorFile.seal(snapshot(2), accountID: account, keys: keys, at: Timestamp(seconds: 1)))
        // A format-2 header naming a rotation nobody here has heard of.
        let unknown = id(0xEE)
        let header = AnchorHeader(generation: 5, accountID: account, writtenAt: Timestamp(seconds: 2), keySet: [unknown]).encoded()
        let odd = header + (try AEAD.seal(snapshot(5).encoded(), associatedData: header, with: SecretBytes(randomCount: 32)))
        let path = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (2).qanchor")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(odd)))
        XCTAssertThrowsError(try AnchorFile.open(odd, accountID: account, keys: keys)) { e in
            guard case .keyNotHeld(let why) = e as? AnchorError else { return XCTFail("\(e)") }
            XCTAssertTrue(why.contains("a revocation this device has not learned") && why.contains(unknown.hex.prefix(8)), why)
        }
        let survey = try folder.survey(keys: keys)
        XCTAssertEqual(survey.unknownRotations, [unknown], "a sign that this device's log is behind")
        XCTAssertEqual(survey.newest?.header.generation, 2, "the anchor it can read is still there")
        XCTAssertEqual(survey.refused.map(\.generation), [5])
        XCTAssertEqual(survey.highestClaimed, 5)
    }

    func testFormatTwoBindsItsKeySetAndFormatOneStillOpens() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, c) = (devices[0], devices[2])
        let account = a.identity.userIDHash
        let before = try keys(of: a)
        let old = try AnchorFile.sealFormat1(snapshot(1), accountID: account, backupKey: a.identity.backupKey, at: Timestamp(seconds: 1))
        XCTAssertEqual(try AnchorFile.header(of: old, accountID: account).format, 1)
        XCTAssertEqual(try AnchorFile.open(old, accountID: account, keys: before).1.generation, 1, "an anchor from before rotation opens")
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        let after = try keys(of: a)
        XCTAssertThrowsError(try AnchorFile.open(old, accountID: account, keys: after), "refused once a revocation is known") { e in
            guard case .staleKey = e as? AnchorError else { return XCTFail("\(e)") }
        }
        let new = try AnchorFile.seal(snapshot(2), accountID: account, keys: after, at: Timestamp(seconds: 2))
        let header = try AnchorFile.header(of: new, accountID: account)
        XCTAssertEqual(header.format, 2)
        XCTAssertEqual(header.keySet, after.required)
        XCTAssertEqual(try AnchorFile.open(new, accountID: account, keys: after).1.generation, 2)
        // The key set is associated data: dropping it from the header (to make it look older) breaks the body.
        let stripped = AnchorHeader(generation: 2, accountID: account, writtenAt: header.writtenAt, keySet: [],
                                    sealedForAccount: header.sealedForAccount).encoded()
        let body = Array(new[header.byteCount...])
        XCTAssertThrowsError(try AnchorFile.open(stripped + body, accountID: account, key: a.identity.backupKey))
        // The account key (recovery file) opens the keys sealed to it, and so the anchor.
        let account2 = try BoxKeyPair(convertingSigningKeyPair: a.identity.account.secret!)
        let carried = try BackupKeyRing.open(header.sealedForAccount, with: account2)
        let key = try XCTUnwrap(carried.key(for: header.keySet, original: a.identity.backupKey))
        XCTAssertEqual(try AnchorFile.open(new, accountID: account, key: key).1.generation, 2)
    }

    /// The commit record says which keys sealed it; one under older keys
    /// (a revoked device could have written it) counts for nothing.
    func testACommitRecordUnderOlderKeysCountsForNothing() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, c) = (devices[0], devices[2])
        let folder = CloudFolder(path: base, accountID: a.identity.userIDHash)
        let before = try keys(of: a)
        try folder.recordCommit(3, keys: before)
        XCTAssertEqual(folder.committedGeneration(keys: before), 3)
        try folder.recordCommit(2, keys: before)
        XCTAssertEqual(folder.committedGeneration(keys: before), 3, "never lowered")
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        let after = try keys(of: a)
        XCTAssertNil(folder.committedGeneration(keys: after), "sealed before the revocation: not trusted after it")
        // The revoking device, which trusted it a moment ago, seals it again.
        try folder.recordCommit(1, keys: after, trusting: before)
        XCTAssertEqual(folder.committedGeneration(keys: after), 3)
        // The revoked device overwrites it with a format-1 record at 99 under the original key.
        var plain = [UInt8](repeating: 0, count: 7) + [99]
        let forged = try AEAD.seal(plain, associatedData: Array("quire.commit-record".utf8) + folder.accountID, with: c.identity.backupKey)
        secureZero(&plain)
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.commitRecordPath, contents: Data(forged)))
        XCTAssertEqual(folder.committedGeneration(keys: before), 99, "before the revocation it would have counted")
        XCTAssertNil(folder.committedGeneration(keys: after))
        try folder.recordCommit(4, keys: after)
        XCTAssertEqual(folder.committedGeneration(keys: after), 4)
    }

    /// The commit record names the round that committed its generation; a
    /// record from before (8 bytes sealed) names none and reads as before;
    /// sealing it again after a revocation keeps the round, and a device
    /// committing the same generation adds one to a record without it.
    func testTheCommitRecordNamesTheRoundThatCommittedItsGeneration() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, c) = (devices[0], devices[2])
        let folder = CloudFolder(path: base, accountID: a.identity.userIDHash)
        let before = try keys(of: a)
        let round = [UInt8](repeating: 0x42, count: 16)
        try folder.recordCommit(3, keys: before)
        XCTAssertEqual(folder.committedRound(keys: before), CloudFolder.CommittedRound(generation: 3, round: nil), "a record without the round")
        try folder.recordCommit(3, round: round, keys: before)
        XCTAssertEqual(folder.committedRound(keys: before), CloudFolder.CommittedRound(generation: 3, round: round), "the round is added")
        try folder.recordCommit(2, round: [UInt8](repeating: 1, count: 16), keys: before)
        XCTAssertEqual(folder.committedRound(keys: before)?.round, round, "an older generation changes nothing")
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        let after = try keys(of: a)
        try folder.recordCommit(1, keys: after, trusting: before)
        XCTAssertEqual(folder.committedRound(keys: after), CloudFolder.CommittedRound(generation: 3, round: round), "sealed again with its round")
        try folder.recordCommit(4, round: nil, keys: after)
        XCTAssertEqual(folder.committedRound(keys: after), CloudFolder.CommittedRound(generation: 4, round: nil), "a higher generation's record drops the round")
    }

    /// `quire init --from-cloud` opens an anchor under rotated keys with the
    /// account key, and refuses one sealed from before a revocation that
    /// another anchor's log holds.
    func testARebuildOpensRotatedAnchorsAndRefusesOnesFromBeforeARevocation() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, c) = (devices[0], devices[2])
        let cloud = base + "/cloud"
        try FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
        let folder = CloudFolder(path: cloud, accountID: a.identity.userIDHash)
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        var rows = try a.store.rows(.devices, from: [], to: nil)
        rows += snapshot(4).rows
        try folder.write(try AnchorFile.seal(AnchorSnapshot(generation: 4, rows: rows), accountID: folder.accountID, keys: try keys(of: a),
                                             at: Timestamp(seconds: 4)))
        // c forges a higher one under the original key.
        let forged = try AnchorFile.sealFormat1(snapshot(8, "forged"), accountID: folder.accountID, backupKey: c.identity.backupKey, at: Timestamp(seconds: 8))
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (1).qanchor"),
                                                    contents: Data(forged)))
        let found = try XCTUnwrap(try CloudRebuild.newest(in: folder, account: a.identity.account.secret!, original: a.identity.backupKey))
        XCTAssertEqual(found.header.generation, 4)
        XCTAssertEqual(found.ring.ids, found.header.keySet, "the rebuilt device gets the keys to write under")
        XCTAssertTrue(found.refused.contains { $0.contains("generation 8") && $0.contains("from before the revocation of 'c'") }, "\(found.refused)")
    }

    /// `quire init --from-cloud` rebuilds from the anchor of the round the
    /// commit record names, even when a sync service left it as a conflict
    /// copy beside an abandoned round's at the same generation; without it,
    /// from the newest, and it says why.
    func testARebuildTakesTheAnchorOfTheRoundTheCommitRecordNames() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let a = devices[0]
        let cloud = base + "/cloud"
        try FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
        let folder = CloudFolder(path: cloud, accountID: a.identity.userIDHash)
        let keys = try keys(of: a)
        let (committed, abandoned) = ([UInt8](repeating: 0xC0, count: 16), [UInt8](repeating: 0xAB, count: 16))
        func anchor(_ title: String, round: [UInt8], at seconds: Int64) throws -> [UInt8] {
            try AnchorFile.seal(AnchorSnapshot(generation: 2, rows: try a.store.rows(.devices, from: [], to: nil) + snapshot(2, title).rows, round: round),
                                accountID: folder.accountID, keys: keys, at: Timestamp(seconds: seconds))
        }
        let copy = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (conflicted copy).qanchor")
        XCTAssertTrue(FileManager.default.createFile(atPath: copy, contents: Data(try anchor("committed", round: committed, at: 20))))
        try folder.write(try anchor("abandoned", round: abandoned, at: 10))
        func rebuild() throws -> CloudRebuild.Found {
            try XCTUnwrap(try CloudRebuild.newest(in: folder, account: a.identity.account.secret!, original: a.identity.backupKey))
        }
        func title(_ found: CloudRebuild.Found) -> String? { found.snapshot.rows.first { $0.namespace == .notebook }?.content?.displayName }
        XCTAssertEqual(title(try rebuild()), "abandoned", "no record: the canonical file")

        try folder.recordCommit(2, round: committed, keys: keys)
        let found = try rebuild()
        XCTAssertEqual(found.snapshot.round, committed)
        XCTAssertEqual(title(found), "committed", "the committed round's anchor, though only a conflict copy")
        XCTAssertEqual(found.refused + found.cautions, [])

        try FileManager.default.removeItem(atPath: copy)
        let without = try rebuild()
        XCTAssertEqual(title(without), "abandoned", "the newest, rather than nothing")
        XCTAssertTrue(without.cautions.contains { $0.contains("round that committed generation 2 is not in the folder") }, "\(without.cautions)")

        try folder.recordCommit(3, round: committed, keys: keys)
        XCTAssertTrue(try rebuild().cautions.contains { $0.contains("committed generation 3") && $0.contains("rebuilt from generation 2") })
    }

    /// The revocation is in no anchor (none was written under the new key,
    /// only an older honest one), but in the revoking device's copy of the
    /// device log: the rebuild refuses the forgery for it, and the older
    /// anchor too (sealed before the revocation, it could be the revoked
    /// device's as well), as a device would. Without the copy it would take
    /// the forgery.
    func testARebuildCountsARevocationOnlyTheFoldersCopyOfTheDeviceLogHolds() throws {
        let devices = try makeFleet(["a", "b", "c"], in: base)
        let (a, c) = (devices[0], devices[2])
        let cloud = base + "/cloud"
        try FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
        let folder = CloudFolder(path: cloud, accountID: a.identity.userIDHash)
        try folder.write(try AnchorFile.seal(AnchorSnapshot(generation: 2, rows: try a.store.rows(.devices, from: [], to: nil) + snapshot(2).rows),
                                             accountID: folder.accountID, keys: try keys(of: a), at: Timestamp(seconds: 2)))
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: Timestamp(seconds: 1_800_000_000))
        let forged = try AnchorFile.sealFormat1(snapshot(8, "forged"), accountID: folder.accountID, backupKey: c.identity.backupKey, at: Timestamp(seconds: 8))
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (1).qanchor"),
                                                    contents: Data(forged)))
        let blind = try XCTUnwrap(try CloudRebuild.newest(in: folder, account: a.identity.account.secret!, original: a.identity.backupKey))
        XCTAssertEqual(blind.header.generation, 8, "with no copy, nothing shows the revocation")
        try folder.writeDeviceLog(try a.store.rows(.devices, from: [], to: nil), device: a.id, key: a.identity.backupKey)
        XCTAssertThrowsError(try CloudRebuild.newest(in: folder, account: a.identity.account.secret!, original: a.identity.backupKey)) { error in
            let words = ((error as? CloudRebuild.EveryAnchorRefused)?.refused ?? []).joined(separator: "; ")
            XCTAssertTrue(words.contains("generation 8") && words.contains("generation 2") && words.contains("revocation of 'c'"), words)
        }
        // Once an anchor under the new key lands, the rebuild takes it.
        try folder.write(try AnchorFile.seal(AnchorSnapshot(generation: 3, rows: try a.store.rows(.devices, from: [], to: nil) + snapshot(3).rows),
                                             accountID: folder.accountID, keys: try keys(of: a), at: Timestamp(seconds: 3)))
        let found = try XCTUnwrap(try CloudRebuild.newest(in: folder, account: a.identity.account.secret!, original: a.identity.backupKey))
        XCTAssertEqual(found.header.generation, 3)
        XCTAssertTrue(found.refused.contains { $0.contains("generation 8") && $0.contains("from before the revocation of 'c'") }, "\(found.refused)")
    }
}
