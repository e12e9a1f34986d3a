import Foundation
import XCTest
import QuireCore
@testable import QuireStore

/// Rule 4 on a disk that loses power: whatever the store reported done (a
/// put, a delete, a held body about to be acked, a sync) survives the cut.
final class DurabilityTests: XCTestCase {
    func openStore(_ dir: String, _ disk: PowerLossDisk, create: Bool = false) throws -> ReplicaStore {
        try ReplicaStore(path: dir + "/replica.sqlite", deviceID: deviceA, create: create, clock: ManualClock(), random: SeededRandom(seed: 3), vfs: disk)
    }

    /// What a reopened store must still show: every row with its version and content, and the digest.
    func snapshot(_ s: ReplicaStore) throws -> ([Row?], [UInt8]) {
        let keys = try s.summaries(.notebook, includeTombstones: true).map(\.key)
        return (try keys.map { try s.row(.notebook, $0) }, try s.digest(generation: 0).encoded())
    }

    func integrity(_ s: ReplicaStore) throws -> String {
        try s.read { () throws(StoreError) -> String in try s.db.query("PRAGMA integrity_check") { $0.text(0) ?? "" }.joined(separator: "; ") }
    }

    func testEveryPutAndDeleteThatReturnedSurvivesAPowerCut() throws {
        let dir = temporaryDirectory(), disk = PowerLossDisk()
        var store: ReplicaStore? = try openStore(dir, disk, create: true)
        let random = SeededRandom(seed: 77)
        var keys: [RowKey] = []
        for i in 0..<60 {
            switch random.int(0..<6) {
            case 0 where !keys.isEmpty:
                try store!.delete(.notebook, keys.remove(at: random.int(0..<keys.count)))
            case 1 where !keys.isEmpty:
                try store!.put(note("edited \(i)", String(repeating: random.word() + " ", count: random.int(1..<3000))), key: keys[random.int(0..<keys.count)])
            case 2:
                keys += try store!.putMany((0..<random.int(2..<20)).map { note("bulk \(i).\($0)", random.word()) }).map(\.key)
            default:
                keys.append(try store!.put(note("note \(i)", String(repeating: random.word() + " ", count: random.int(1..<800)))).key)
            }
            XCTAssertEqual(disk.unsyncedBytes, 0, "operation \(i) returned with bytes not on disk: \(disk.unsyncedFiles)")
        }
        let before = try snapshot(store!)
        XCTAssertGreaterThan(before.0.count, 30)
        try disk.powerLoss()
        store = nil
        let again = try openStore(dir, disk)
        let after = try snapshot(again)
        XCTAssertEqual(after.0, before.0, "every row as it was when its write returned")
        XCTAssertEqual(after.1, before.1, "the same digest")
        XCTAssertEqual(try again.recomputedRoots(), try again.roots())
        XCTAssertEqual(try integrity(again), "ok")
    }

    /// The same store with today's old setting loses a put that returned:
    /// the shim bites, and it is FULL that saves the others.
    func testUnderSynchronousNormalAPutThatReturnedIsLost() throws {
        let dir = temporaryDirectory(), disk = PowerLossDisk()
        var store: ReplicaStore? = try openStore(dir, disk, create: true)
        let kept = try store!.put(note("kept", "written under FULL"))
        try store!.read { () throws(StoreError) in try store!.db.execute("PRAGMA synchronous=NORMAL") }
        let lost = try store!.put(note("lost", "written under NORMAL"))
        XCTAssertNotNil(try store!.row(.notebook, lost.key), "committed and visible")
        XCTAssertGreaterThan(disk.unsyncedBytes, 0)
        try disk.powerLoss()
        store = nil
        let again = try openStore(dir, disk)
        XCTAssertEqual(try again.row(.notebook, kept.key), kept)
        XCTAssertNil(try again.row(.notebook, lost.key), "NORMAL does not fsync at commit")
        XCTAssertEqual(try integrity(again), "ok")
    }

    /// `sync()` is what fsync(2) of a file and every ack rely on: it must
    /// make all that was committed durable whatever the synchronous mode,
    /// even while a reader pins an old snapshot (a passive checkpoint then
    /// has nothing it may copy, and syncs nothing).
    func testSyncMakesCommitsDurableEvenWhileAReaderPinsAnOldSnapshot() throws {
        let dir = temporaryDirectory(), disk = PowerLossDisk()
        var store: ReplicaStore? = try openStore(dir, disk, create: true)
        try store!.compact()
        var reader: Connection? = try Connection(path: dir + "/replica.sqlite", vfs: disk)
        try reader!.execute("BEGIN")
        XCTAssertEqual(try reader!.queryOne("SELECT count(*) FROM rows") { $0.int(0) }, 0)
        try store!.read { () throws(StoreError) in try store!.db.execute("PRAGMA synchronous=NORMAL") }
        let row = try store!.put(note("fsynced", "made durable by sync()"))
        XCTAssertGreaterThan(disk.unsyncedBytes, 0)
        let syncs = disk.syncCount
        try store!.sync()
        XCTAssertGreaterThan(disk.syncCount, syncs, "sync() asked for an fsync")
        XCTAssertEqual(disk.unsyncedBytes, 0, "\(disk.unsyncedFiles)")
        try disk.powerLoss()
        store = nil
        reader = nil
        let again = try openStore(dir, disk)
        XCTAssertEqual(try again.row(.notebook, row.key), row)
    }

    /// A homebase acks an offload_put once `holdBodies` returns
    /// (SyncEngine.commitHeldBodies): from then on the body survives a cut,
    /// with the store's settings and, because holdBodies ends in sync(),
    /// even if commits were not synced by themselves.
    func testHeldBodiesSurviveAPowerCutOnceHoldBodiesReturns() throws {
        for relaxed in [false, true] {
            let dir = temporaryDirectory("held\(relaxed)"), disk = PowerLossDisk()
            var store: ReplicaStore? = try openStore(dir, disk, create: true)
            try store!.compact()
            var reader: Connection? = try Connection(path: dir + "/replica.sqlite", vfs: disk)
            try reader!.execute("BEGIN")
            _ = try reader!.queryOne("SELECT count(*) FROM held_bodies") { $0.int(0) }
            if relaxed { try store!.read { () throws(StoreError) in try store!.db.execute("PRAGMA synchronous=NORMAL") } }
            let bodies = (0..<5).map { Array("body \($0) for the homebase, ".utf8) + SeededRandom(seed: UInt64($0)).bytes(3_000) }
            try store!.holdBodies(bodies.map { (body: $0, contentHash: Note.bodyDigest($0), owner: deviceB) })
            try store!.holdBody(Array("one more".utf8), contentHash: Note.bodyDigest(Array("one more".utf8)), for: deviceB)
            XCTAssertEqual(disk.unsyncedBytes, 0, "relaxed \(relaxed): \(disk.unsyncedFiles)")
            try disk.powerLoss()
            store = nil
            reader = nil
            let again = try openStore(dir, disk)
            for body in bodies + [Array("one more".utf8)] {
                XCTAssertTrue(try again.servableBody(contentHash: Note.bodyDigest(body)) == body, "relaxed \(relaxed): a held body is gone")
            }
            XCTAssertEqual(try again.heldBodies().map(\.count), [6])
        }
    }
}
