import Foundation
import XCTest
import QuireCore
@testable import QuireStore

/// A replica put back as new files (a copy of the device directory put back
/// by hand) mints a new incarnation when it is opened, before any write; the
/// same file opened again, or moved within its disk, does not.
final class FileIdentityTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func open(_ path: String, seed: UInt64, restoring: Bool = false) throws -> ReplicaStore {
        try ReplicaStore(path: path, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: seed), restoring: restoring)
    }

    /// Put back as new files, then edited and deleted before it hears from
    /// anyone: both are made under a new incarnation, so no counter the
    /// fleet already holds is minted again, and the fleet's write, which
    /// the delete never saw, survives it everywhere.
    func testACopyPutBackAsNewFilesWritesAsANewIncarnationBeforeItsFirstWrite() throws {
        let pathA = dir + "/a.sqlite", backup = dir + "/a-backup.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: pathA, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let b = try ReplicaStore(path: dir + "/b.sqlite", deviceID: deviceB, create: true, clock: ManualClock(), random: SeededRandom(seed: 2))
        let p = try a!.put(plan("trip", "v1"))
        try exchange(a!, b)
        try a!.compact()
        try copyReplica(from: pathA, to: backup)
        let oldActor = try a!.actor()
        let v2 = try a!.put(plan("trip", "v2, seen by the phone"), key: p.key)
        try exchange(a!, b)
        a = nil

        try copyReplicaAsNewFiles(from: backup, to: pathA)
        a = try open(pathA, seed: 3)
        let actor = try a!.actor()
        XCTAssertNotEqual(actor, oldActor, "a new incarnation at open")
        let rollback = try XCTUnwrap(try a!.rollbacks().first)
        XCTAssertEqual(try a!.rollbacks().count, 1)
        XCTAssertTrue(rollback.reason.contains("replica file is not the one it last wrote to"), rollback.reason)
        XCTAssertEqual(rollback.oldIncarnation, oldActor.incarnation)
        XCTAssertEqual(rollback.newIncarnation, actor.incarnation)

        let edit = try a!.put(plan("trip", "edited on the copy"), key: p.key)
        XCTAssertEqual(edit.heads[0].dot, Dot(actor: actor, counter: 1))
        XCTAssertNotEqual(edit.heads[0].dot, v2.heads[0].dot, "no counter the phone already saw is minted again")
        _ = try a!.delete(.plans, p.key)
        try exchange(a!, b)
        for s in [a!, b] {
            let row = try XCTUnwrap(try s.row(.plans, p.key))
            XCTAssertEqual(row.heads.count, 1)
            guard case .plan(let kept)? = row.heads.first?.content else { return XCTFail("the phone's write went with a delete that never saw it") }
            XCTAssertEqual(kept.notes, "v2, seen by the phone")
        }
    }

    func testReopeningOrMovingTheSameFileKeepsTheIncarnation() throws {
        let path = dir + "/a.sqlite", moved = dir + "/moved/a.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: path, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let actor = try a!.actor()
        try a!.put(plan("trip", "v1"))
        a = nil
        a = try open(path, seed: 2)
        XCTAssertEqual(try a!.actor(), actor)
        a = nil
        // A rename within one disk keeps the inode and birth time.
        try FileManager.default.createDirectory(atPath: dir + "/moved", withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.moveItem(atPath: path + suffix, toPath: moved + suffix)
        }
        a = try open(moved, seed: 3)
        XCTAssertEqual(try a!.actor(), actor)
        XCTAssertEqual(try a!.rollbacks(), [])
    }

    /// Two processes opening the copy at once mint one incarnation between them.
    func testTwoOpensOfOneCopyMintOneIncarnation() throws {
        let path = dir + "/a.sqlite", copy = dir + "/copy.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: path, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let actor = try a!.actor()
        try a!.compact()
        a = nil
        try copyReplicaAsNewFiles(from: path, to: copy)
        let first = try open(copy, seed: 2)
        let second = try open(copy, seed: 3)
        XCTAssertNotEqual(try first.actor(), actor)
        XCTAssertEqual(try second.actor(), try first.actor())
        XCTAssertEqual(try second.rollbacks().count, 1)
    }

    /// A replica from before the file was recorded may be such a copy: it
    /// writes as a new incarnation from its first open, without calling
    /// that a rollback, and keeps it from then on.
    func testAReplicaThatNeverRecordedItsFileMintsOnceWithoutARollback() throws {
        let path = dir + "/a.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: path, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let actor = try a!.actor()
        let written = try a!.put(plan("trip", "v1"))
        try a!.put(note("n", "words written before the upgrade\n"))
        let roots = try a!.roots()
        a = nil
        let raw = try Connection(path: path)
        try raw.execute("DELETE FROM meta WHERE name = 'file_identity'")
        a = try open(path, seed: 2)
        let minted = try a!.actor()
        XCTAssertNotEqual(minted, actor)
        XCTAssertEqual(try a!.rollbacks(), [])
        XCTAssertEqual(try a!.roots(), roots, "the upgrade changes no row")
        XCTAssertEqual(try a!.counts(.notebook).live, 1)
        let edit = try a!.put(plan("trip", "v2"), key: written.key)
        XCTAssertEqual(edit.heads.map(\.dot), [Dot(actor: minted, counter: 1)], "the first write after the upgrade is the new actor's")
        a = nil
        a = try open(path, seed: 3)
        XCTAssertEqual(try a!.actor(), minted)
        XCTAssertEqual(try a!.row(.plans, written.key)?.heads.map(\.dot), [Dot(actor: minted, counter: 1)])
    }

    /// A restore opens the file it put in place without minting, and
    /// `finishRestore` mints once and records the file.
    func testARestoreMintsOnceAndRecordsTheRestoredFile() throws {
        let path = dir + "/a.sqlite", backup = dir + "/backup.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: path, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let actor = try a!.actor()
        try a!.compact()
        try copyReplica(from: path, to: backup)
        a = nil
        try copyReplicaAsNewFiles(from: backup, to: path)
        a = try open(path, seed: 2, restoring: true)
        XCTAssertEqual(try a!.actor(), actor, "nothing minted before the restore finishes")
        let done = try a!.finishRestore(replaced: nil, reason: "restored from a backup (test)")
        XCTAssertNotEqual(done.actor, actor)
        XCTAssertEqual(try a!.rollbacks().map(\.reason), ["restored from a backup (test)"])
        a = nil
        a = try open(path, seed: 3)
        XCTAssertEqual(try a!.actor(), done.actor)
        XCTAssertEqual(try a!.rollbacks().count, 1)
    }
}
