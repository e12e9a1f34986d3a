import Foundation
import XCTest
import QuireCore
@testable import QuireStore

/// A device that comes back from a copy of its directory mints a new
/// incarnation once it learns so, and what it wrote after the copy was put
/// back survives as a concurrent version, on every device, whatever the
/// siblings had seen (a write under a dot it had used before is told apart
/// by its tag).
final class IncarnationTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func notes(_ s: ReplicaStore, _ key: RowKey) throws -> [String] {
        try XCTUnwrap(try s.row(.plans, key)).heads.compactMap { if case .plan(let p) = $0.content { return p.notes } else { return nil } }.sorted()
    }

    func testAnOfflineEditAfterACopyBackSurvivesASiblingThatReplacedTheSameCounter() throws {
        let pathA = dir + "/a.sqlite", backup = dir + "/a-backup.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: pathA, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let b = try ReplicaStore(path: dir + "/b.sqlite", deviceID: deviceB, create: true, clock: ManualClock(), random: SeededRandom(seed: 2))
        let p = try a!.put(plan("trip", "v1"))
        let q = try a!.put(plan("shopping", "milk"))
        try exchange(a!, b)
        try a!.compact()
        try copyReplica(from: pathA, to: backup)           // the device directory is copied
        let oldActor = try a!.actor()
        try a!.put(plan("trip", "v2 before the restore"), key: p.key)
        try exchange(a!, b)
        try b.put(plan("trip", "v3 by the phone"), key: p.key)   // replaces A's counter 2
        a = nil
        try copyReplica(from: backup, to: pathA)           // ... and put back
        a = try ReplicaStore(path: pathA, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 3))
        XCTAssertEqual(try a!.actor(), oldActor, "a copy carries its incarnation")
        let offline = try a!.put(plan("trip", "written offline after the restore"), key: p.key)
        XCTAssertEqual(offline.heads[0].dot, Dot(actor: oldActor, counter: 2), "the counter the phone already saw, minted again")
        try a!.put(plan("shopping", "milk, eggs"), key: q.key)

        try exchange(a!, b)
        let rollbacks = try a!.rollbacks()
        XCTAssertEqual(rollbacks.count, 1, "the device learns it was rolled back")
        XCTAssertEqual(rollbacks.first?.reissued, 0, "nothing the phone could drop: it never saw the offline write's tag")
        XCTAssertNotEqual(try a!.actor(), oldActor)
        for s in [a!, b] {
            XCTAssertEqual(try notes(s, p.key), ["v3 by the phone", "written offline after the restore"],
                           "neither the phone's edit nor the offline one is dropped")
            XCTAssertEqual(try notes(s, q.key), ["milk, eggs"])
            XCTAssertEqual(try s.roots(), try s.recomputedRoots())
        }
        // The offline write travels under the dot minted twice, told apart by
        // its tag from the write the phone replaced.
        let onPhone = try XCTUnwrap(try b.row(.plans, p.key))
        XCTAssertEqual(onPhone.heads.filter { $0.dot == Dot(actor: oldActor, counter: 2) }.map(\.tag), [offline.heads[0].tag])
        XCTAssertTrue(onPhone.context.tags(oldActor).contains(offline.heads[0].tag))
        XCTAssertEqual(onPhone.context.tags(oldActor).count, 2, "the phone saw both writes under that dot")
        // The next edit joins both, under the new incarnation.
        let joined = try a!.put(plan("trip", "both read"), key: p.key)
        XCTAssertEqual(joined.heads.map(\.dot.actor), [try a!.actor()])
        try exchange(a!, b)
        XCTAssertEqual(try notes(b, p.key), ["both read"])
    }

    func testASiblingThatSawMoreOfThisDevicesWritesMintsANewIncarnation() throws {
        let pathA = dir + "/a.sqlite", backup = dir + "/a-backup.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: pathA, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let b = try ReplicaStore(path: dir + "/b.sqlite", deviceID: deviceB, create: true, clock: ManualClock(), random: SeededRandom(seed: 2))
        let p = try a!.put(plan("trip", "v1"))
        try exchange(a!, b)             // v1 is confirmed before the copy is taken
        try a!.compact()
        try copyReplica(from: pathA, to: backup)
        try a!.put(plan("trip", "v2"), key: p.key)
        try exchange(a!, b)
        let oldActor = try a!.actor()
        a = nil
        try copyReplica(from: backup, to: pathA)
        a = try ReplicaStore(path: pathA, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 3))
        try a!.apply([try XCTUnwrap(try b.row(.plans, p.key))])
        XCTAssertNotEqual(try a!.actor(), oldActor)
        XCTAssertTrue(try a!.rollbacks().first?.reason.contains("holds only up to 1") ?? false)
        XCTAssertEqual(try notes(a!, p.key), ["v2"], "the lost write comes back from the sibling")
        let next = try a!.put(plan("trip", "v3"), key: p.key)
        XCTAssertEqual(next.heads[0].dot.actor, try a!.actor())
    }

    func testTwoVersionsUnderOneDotAreBothKeptAndRecorded() throws {
        let a = try makeStore(dir)
        let b = Actor(device: deviceB, incarnation: 9)
        let base = Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: 4, count: 16))!, context: VersionVector())
        try a.apply([base.edited(by: b, to: plan("x", "one"))])
        try a.apply([base.edited(by: b, to: plan("x", "two"))])
        XCTAssertEqual(try notes(a, base.key), ["one", "two"])
        XCTAssertEqual(try a.collisions().map(\.dot), [Dot(actor: b, counter: 1).description])
    }

    func testASiblingThatSawThisWriteReplacesItEvenBeforeAnyConfirmation() throws {
        // The sibling's context names our dot with our write's tag: it saw
        // this very write, so its edit or delete is a real replacement.
        let a = try makeStore(dir)
        let p = try a.put(plan("trip", "mine"))
        try a.apply([p.edited(by: Actor(device: deviceB, incarnation: 5), to: plan("trip", "theirs"))])
        XCTAssertEqual(try notes(a, p.key), ["theirs"])
        let q = try a.put(plan("tea", "mine"))
        try a.apply([q.deleted()])
        XCTAssertEqual(try a.row(.plans, q.key)?.isTombstone, true, "a deliberate delete wins")
        XCTAssertEqual(try a.rollbacks().count, 0)
        // Another write under the same dot is not ours: a rollback.
        let r = try a.put(plan("cake", "mine"))
        let impostor = Row.single(.plans, r.key, dot: r.heads[0].dot, context: VersionVector(), content: plan("cake", "another write"))
        try a.apply([impostor.deleted()])
        XCTAssertEqual(try a.rollbacks().count, 1)
        XCTAssertEqual(try notes(a, r.key), ["mine"], "the write the delete never saw survives, re-issued")
    }
}
