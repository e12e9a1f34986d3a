import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// The device log's copies in the cloud folder (`CloudDeviceLog`): a
/// revocation outlives a restore of the only device that knew it.
extension RotationEngineTests {
    /// a revokes the lost c while b is off; a is then put back from a
    /// backup taken before (replica and rotation keys), so no device's log
    /// holds the revocation. The folder's copy of a's log does: a and b
    /// learn it there at start-up, a gets the rotation key again, c's
    /// frames are refused, and the anchor c forges under its old key is not
    /// used (the simulator's seed 6077 with --cloud-and-power-faults
    /// --revocations took c back and recovered from its forgery).
    func testARevocationOutlivesARestoreOfTheOnlyDeviceThatKnewIt() throws {
        try makeFleet(["a", "b", "c"])
        let (a, b, c) = (devices[0], devices[1], devices[2])
        for i in 0..<3 { _ = try a.store.put(note("n\(i)", "words \(i)")) }
        for e in engines { try e?.attach() }
        tick(30)
        XCTAssertEqual(try allRows(b.store), try allRows(a.store))
        let backup = base + "/a-backup.sqlite"
        try a.store.compact()
        try FileManager.default.copyItem(atPath: a.dir + "/replica.sqlite", toPath: backup)
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder.deviceLogPath(of: a.id)), "each device keeps a copy of its log")

        for i in [1, 2] { engines[i]?.stop(); engines[i] = nil }
        let before = anchorKeys(0)
        var ring = kept[0].value
        try Revoking.revoke(c.id, by: a.identity, store: a.store, at: clock.now()) { id, key in ring.add(id, key) }
        let after = try AnchorKeys.of(identity: a.identity, store: a.store, ring: ring)
        let words = try AnchorRekey.afterRevocation(cloud: folder, before: before, after: after, localGeneration: 0, device: a.id,
                                                    deviceLog: try a.store.rows(.devices, from: [], to: nil))
        XCTAssertTrue(words.contains("device log"), words)

        // a put back from its backup: replica and rotation keys from before.
        engines[0]?.stop()
        let restoredDir = base + "/a-restored"
        try FileManager.default.createDirectory(atPath: restoredDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: backup, toPath: restoredDir + "/replica.sqlite")
        let restored = try ReplicaStore(path: restoredDir + "/replica.sqlite", deviceID: a.id, clock: clock, random: SeededRandom(seed: 61))
        XCTAssertEqual(try Roster.load(from: restored, accountKey: a.identity.account.publicKey).roster[c.id]?.isRevoked, false,
                       "the backup predates the revocation")
        let keptAfterRestore = Locked(BackupKeyRing())
        let generations = self.generations
        var deps = SyncEngine.Dependencies(store: restored, identity: a.identity, relay: relay, clock: clock,
                                           random: SeededRandom(seed: 62), generation: { generations[0].get() })
        deps.cloud = folder
        deps.setGeneration = { try generations[0].set($0) }
        deps.rotationKeys = keptAfterRestore.value
        deps.keepRotationKeys = { keptAfterRestore.value = $0 }
        engines[0] = SyncEngine(deps, configuration: configuration)
        try engines[0]?.attach()
        XCTAssertEqual(try Roster.load(from: restored, accountKey: a.identity.account.publicKey).roster[c.id]?.isRevoked, true,
                       "learned again from the folder at start-up")
        engines[1] = try makeEngine(1, seed: 3)
        try engines[1]?.attach()
        XCTAssertEqual(try Roster.load(from: b.store, accountKey: b.identity.account.publicKey).roster[c.id]?.isRevoked, true,
                       "b, which never heard from a, learns it there too")
        tick(20)
        let rotation = try XCTUnwrap(after.required.first)
        XCTAssertTrue(keptAfterRestore.value.holds(rotation), "a holds the rotation key again: it was sealed to it in the statement")
        XCTAssertTrue(kept[1].value.holds(rotation))

        // The thief comes back: a note it writes reaches nobody, and its
        // forged anchor (old key, higher generation, a record to match) is not used.
        engines[2] = try makeEngine(2, seed: 4)
        try engines[2]?.attach()
        let stolen = try c.store.put(note("stolen", "written after the revocation"))
        let forged = try AnchorFile.sealFormat1(AnchorSnapshot(generation: 7, rows: [stolen]), accountID: folder.accountID,
                                                backupKey: c.identity.backupKey, at: clock.now())
        XCTAssertTrue(FileManager.default.createFile(atPath: folder.anchorPath, contents: Data(forged)))
        try folder.recordCommit(7, keys: try AnchorKeys.original(c.identity.backupKey, accountKey: c.identity.account.publicKey))
        engines[2]?.stop()
        engines[2] = nil
        tick(100)
        XCTAssertNil(try restored.row(.notebook, stolen.key), "a took nothing from c")
        XCTAssertNil(try b.store.row(.notebook, stolen.key), "b took nothing from c")
        // (They ran a round of their own for the new key: generation 1.)
        XCTAssertEqual(generations.prefix(2).map { $0.get() }, [1, 1], "neither moved to the forged generation")
        XCTAssertEqual(try allRows(restored), try allRows(b.store))
    }

    /// A copy altered in the folder, or moved to another device's name, does
    /// not open (the device id is in the associated data), and is named;
    /// the others still count. Writing the same log again changes nothing.
    func testACopyAlteredOrRenamedInTheFolderIsNamedAndNotUsed() throws {
        try makeFleet(["a", "b"])
        let (a, b) = (devices[0], devices[1])
        let rows = try a.store.rows(.devices, from: [], to: nil)
        XCTAssertFalse(rows.isEmpty)
        XCTAssertTrue(try folder.writeDeviceLog(rows, device: a.id, key: a.identity.backupKey))
        XCTAssertFalse(try folder.writeDeviceLog(rows, device: a.id, key: a.identity.backupKey), "the same rows are not written again")
        let read = try folder.deviceLogs(key: b.identity.backupKey)
        XCTAssertEqual(read.rows.map(\.key).sorted(), rows.map(\.key).sorted())
        XCTAssertEqual(read.unusable, [])

        var bytes = Array(FileManager.default.contents(atPath: folder.deviceLogPath(of: a.id))!)
        try Data(bytes).write(to: URL(fileURLWithPath: folder.deviceLogPath(of: b.id)))
        bytes[bytes.count - 3] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: folder.deviceLogPath(of: a.id)))
        try Data("not a log".utf8).write(to: URL(fileURLWithPath: cloud + "/quire-devices-" + Hex.encode(folder.accountID.prefix(6)) + "-zz.qlog"))
        let damaged = try folder.deviceLogs(key: b.identity.backupKey)
        XCTAssertEqual(damaged.rows, [])
        XCTAssertEqual(damaged.unusable.count, 3, "\(damaged.unusable)")
        XCTAssertTrue(damaged.unusable.allSatisfy { $0.contains("does not open") || $0.contains("no device id") }, "\(damaged.unusable)")
        XCTAssertTrue(try folder.writeDeviceLog(rows, device: a.id, key: a.identity.backupKey), "a damaged copy is written again")
        XCTAssertEqual(try folder.deviceLogs(key: b.identity.backupKey).rows.count, rows.count)
    }

    /// A running device says in its status that a sibling's copy was
    /// altered, within the half minute it reads the folder again; its own
    /// copy, damaged, it simply writes again.
    func testARunningDeviceSaysACopyWasAlteredAndRewritesItsOwn() throws {
        try makeFleet(["a", "b"])
        let (a, b) = (devices[0], devices[1])
        try engines[0]?.attach()
        let mine = folder.deviceLogPath(of: a.id)
        XCTAssertTrue(FileManager.default.fileExists(atPath: mine))
        XCTAssertNil(engines[0]!.status().cloudWarnings)
        try Data("QUIREDL1 not sealed by anyone".utf8).write(to: URL(fileURLWithPath: folder.deviceLogPath(of: b.id)))
        try Data("QUIREDL1 damaged".utf8).write(to: URL(fileURLWithPath: mine))
        tick(310)
        let warnings = engines[0]!.status().cloudWarnings ?? []
        XCTAssertEqual(warnings.filter { $0.contains("a copy of the device log was not used") }.count, 1, "\(warnings)")
        XCTAssertTrue(warnings.contains { $0.contains(folder.deviceLogPath(of: b.id)) && $0.contains("does not open") }, "\(warnings)")
        XCTAssertEqual(try folder.deviceLogs(key: a.identity.backupKey).rows.count, try a.store.rows(.devices, from: [], to: nil).count,
                       "its own copy is whole again")
    }
}
