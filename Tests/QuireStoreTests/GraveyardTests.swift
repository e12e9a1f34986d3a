import Foundation
import XCTest
import QuireCore
@testable import QuireStore

/// A version the backup thought no sibling had seen, which the fleet then
/// saw, deleted and collected: recovery drops it because the graveyard
/// names it, and keeps what the fleet truly never saw.
final class GraveyardTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = temporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func plan(_ title: String) -> RowContent {
        .plan(Plan(title: title, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
    }

    func testRecoveryDropsAVersionTheFleetSawDeletedAndCollectedAndKeepsALaterEdit() throws {
        let pathA = dir + "/a.sqlite", backup = dir + "/a-backup.sqlite", second = dir + "/a-second.sqlite", third = dir + "/a-third.sqlite"
        var a: ReplicaStore? = try ReplicaStore(path: pathA, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        let b = try ReplicaStore(path: dir + "/b.sqlite", deviceID: deviceB, create: true, clock: ManualClock(), random: SeededRandom(seed: 2))
        let p = try a!.put(plan("written just before the backup"))
        try a!.compact()
        try copyReplica(from: pathA, to: backup)       // p is unconfirmed in this copy
        try copyReplica(from: pathA, to: second)
        try copyReplica(from: pathA, to: third)
        // The fleet sees p, deletes it, and a barrier collects the tombstone everywhere.
        try b.apply([try XCTUnwrap(try a!.row(.plans, p.key))])
        let tombstone = try b.delete(.plans, p.key)
        try a!.apply([try XCTUnwrap(tombstone)])
        XCTAssertEqual(try a!.dropTombstonesForBarrier(), 1)
        XCTAssertEqual(try b.dropTombstonesForBarrier(), 1)
        let graveyard = try b.graveyard()
        XCTAssertEqual(graveyard.map(\.key), [p.key])
        XCTAssertEqual(try a!.graveyard(), graveyard, "every device that collected holds the same graveyard")
        XCTAssertTrue(try XCTUnwrap(graveyard.first).saw(p.heads[0]))
        a = nil

        // Put back without the graveyard, the copy keeps p as a write of its own: the resurrection.
        let blind = try ReplicaStore(path: second, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 4))
        XCTAssertEqual(try blind.recover(from: []).keptUnshared, 1)
        XCTAssertEqual(try blind.row(.plans, p.key)?.isTombstone, false)

        // With it, p goes; an edit made after the restore is new and stays (edit beats delete).
        let restored = try ReplicaStore(path: backup, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 3))
        try restored.mintIncarnation(reason: "restored (test)")
        let report = try restored.recover(from: [], graveyard: graveyard)
        XCTAssertEqual(report.removed, 1)
        XCTAssertEqual(report.keptUnshared, 0)
        XCTAssertNil(try restored.row(.plans, p.key), "collected, as the fleet collected it")
        XCTAssertEqual(try restored.graveyard(), graveyard, "adopted, so the anchors this device writes carry it on")


        // Edited again after the restore, before it recovers: that edit is
        // one the delete never saw, and it stays.
        let edited = try ReplicaStore(path: third, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 5))
        try edited.mintIncarnation(reason: "restored (test)")
        try edited.put(plan("edited after the restore"), key: p.key)
        let kept = try edited.recover(from: [], graveyard: graveyard)
        XCTAssertEqual(kept.keptUnshared, 1)
        let row = try XCTUnwrap(try edited.row(.plans, p.key))
        XCTAssertEqual(row.heads.count, 1)
        XCTAssertEqual(row.heads.first?.dot.actor, try edited.actor())
    }

    /// A device put back from a copy of itself, again and again with no new
    /// incarnation, writes a row under one dot three times. The fleet saw
    /// the first two (a collision), deleted the row and collected it: the
    /// graveyard names those two by their tags, so recovery drops a copy
    /// still holding one of them and keeps the third, which no delete saw
    /// (simulator seed 541 with --everything).
    func testRecoveryKeepsAThirdWriteUnderADotWhoseTwoEarlierWritesWereCollected() throws {
        let pathA = dir + "/a.sqlite", empty = dir + "/a-empty.sqlite", holdsFirst = dir + "/a-first.sqlite"
        let key = RowKey(bytes: [UInt8](repeating: 0x54, count: 16))!
        let b = try ReplicaStore(path: dir + "/b.sqlite", deviceID: deviceB, create: true, clock: ManualClock(), random: SeededRandom(seed: 2))
        var a: ReplicaStore? = try ReplicaStore(path: pathA, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 1))
        try a!.compact()
        try copyReplica(from: pathA, to: empty)
        let first = try a!.put(plan("first"), key: key)
        try a!.compact()
        try copyReplica(from: pathA, to: holdsFirst)
        try b.apply([first])
        a = nil
        // Put back by hand: the same incarnation mints the same dot again.
        try copyReplica(from: empty, to: pathA)
        a = try ReplicaStore(path: pathA, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 3))
        let second = try a!.put(plan("second"), key: key)
        XCTAssertEqual(second.heads[0].dot, first.heads[0].dot)
        try b.apply([second])
        a = nil
        let both = try XCTUnwrap(try b.row(.plans, key))
        XCTAssertEqual(RowMerge.collisions(both), [first.heads[0].dot])
        XCTAssertEqual(both.context.tags(first.heads[0].dot.actor), [first.heads[0].tag, second.heads[0].tag].sorted())
        _ = try b.delete(.plans, key)
        XCTAssertEqual(try b.dropTombstonesForBarrier(), 1)
        let graveyard = try b.graveyard()
        let entry = try XCTUnwrap(graveyard.first)
        XCTAssertTrue(entry.saw(first.heads[0]) && entry.saw(second.heads[0]))

        // A third time: a write no delete saw, under the very same dot.
        try copyReplica(from: empty, to: pathA)
        let third = try ReplicaStore(path: pathA, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 4))
        let written = try third.put(plan("third"), key: key)
        XCTAssertEqual(written.heads[0].dot, first.heads[0].dot)
        XCTAssertFalse(entry.saw(written.heads[0]))
        let kept = try third.recover(from: [], graveyard: graveyard)
        XCTAssertEqual(kept.keptUnshared, 1)
        XCTAssertEqual(kept.removed, 0)
        guard case .plan(let p)? = try third.row(.plans, key)?.content else { return XCTFail("the third write is gone") }
        XCTAssertEqual(p.title, "third")

        // A copy that holds the first write, which the fleet saw and collected, loses it.
        let old = try ReplicaStore(path: holdsFirst, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 5))
        let dropped = try old.recover(from: [], graveyard: graveyard)
        XCTAssertEqual(dropped.removed, 1)
        XCTAssertNil(try old.row(.plans, key))
    }

    /// A device the barrier's roster did not include (it joined while the
    /// leader had not heard of it) was never rolled back: what it holds
    /// that the fleet never saw stays, whoever wrote it; what the fleet
    /// deleted and collected goes.
    func testADeviceOutsideTheBarriersRosterKeepsWhatTheFleetNeverSaw() throws {
        let outsider = try makeStore(dir, device: deviceB, seed: 2)
        let newcomer = Actor(device: DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!, incarnation: 4)
        let base = Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: 8, count: 16))!, context: VersionVector())
        let theirs = base.edited(by: newcomer, to: plan("another newcomer's"))
        let plans = Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: 9, count: 16))!, context: VersionVector())
        let seen = plans.edited(by: Actor(device: deviceA, incarnation: 1), to: plan("deleted by the fleet"))
        let mine = try outsider.put(plan("written by the outsider"))
        try outsider.apply([theirs, seen])
        let graveyard = [CollectedTombstone(namespace: .plans, key: seen.key, context: seen.context)]
        let report = try outsider.recover(from: [], graveyard: graveyard, roster: [deviceA])
        XCTAssertEqual(report.removed, 1, "only the version the fleet deleted and collected")
        XCTAssertNil(try outsider.row(.plans, seen.key), "collected, as the fleet collected it")
        XCTAssertEqual(try outsider.row(.plans, theirs.key)?.isTombstone, false, "another newcomer's write the fleet never saw")
        XCTAssertEqual(try outsider.row(.plans, mine.key)?.isTombstone, false)
        XCTAssertEqual(try outsider.barrierRoster(), [deviceA])

        // One of the roster, rolled back: another device's version the snapshot lacks was the fleet's, and went.
        try FileManager.default.createDirectory(atPath: dir + "/i", withIntermediateDirectories: true)
        let insider = try makeStore(dir + "/i", device: deviceB, seed: 3)
        try insider.apply([theirs])
        XCTAssertEqual(try insider.recover(from: [], graveyard: [], roster: [deviceA, deviceB]).removed, 1)
        XCTAssertEqual(try insider.row(.plans, theirs.key)?.isTombstone, true)
    }

    /// One of the roster, put back from a copy, then handed versions by a
    /// device outside the roster (it joined after the barrier): the barrier
    /// cannot have collected what only such devices held, so recovery keeps
    /// it; what a roster device wrote, sent or confirmed goes as before
    /// (simulator seed 4819 with --everything, both ways round).
    func testARolledBackDeviceKeepsWhatOnlyDevicesOutsideTheRosterHeld() throws {
        let insider = try makeStore(dir, device: deviceB, seed: 3)
        let deviceC = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let newcomer = Actor(device: deviceC, incarnation: 4)
        func row(_ n: UInt8, by actor: Actor, _ title: String) -> Row {
            Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: n, count: 16))!, context: VersionVector()).edited(by: actor, to: plan(title))
        }
        let fromOutsider = row(1, by: newcomer, "the newcomer's, from the newcomer")
        let fleetsViaOutsider = row(2, by: Actor(device: deviceA, incarnation: 1), "a roster device's, from the newcomer")
        let outsidersViaFleet = row(3, by: newcomer, "the newcomer's, from a roster device")
        let unknownSender = row(4, by: newcomer, "the newcomer's, sender not known")
        try insider.dropTombstonesForBarrier(roster: [deviceA, deviceB])   // the barrier the newcomer missed
        try insider.apply([fromOutsider, fleetsViaOutsider], from: deviceC)
        try insider.apply([outsidersViaFleet], from: deviceA)
        try insider.apply([unknownSender])
        // Its own writes: one only the newcomer confirmed, one a roster device confirmed.
        let confirmedOutside = try insider.put(plan("mine, held by the newcomer"))
        try confirmHeld(insider, by: deviceC)
        let confirmedInside = try insider.put(plan("mine, held by a roster device"))
        try confirmHeld(insider, by: deviceA)

        let report = try insider.recover(from: [], graveyard: [], roster: [deviceA, deviceB])
        XCTAssertEqual(try insider.row(.plans, fromOutsider.key)?.isTombstone, false, "only the newcomer held it")
        XCTAssertEqual(try insider.row(.plans, confirmedOutside.key)?.isTombstone, false, "only the newcomer confirmed it")
        for gone in [fleetsViaOutsider.key, outsidersViaFleet.key, unknownSender.key, confirmedInside.key] {
            XCTAssertEqual(try insider.row(.plans, gone)?.isTombstone, true, "the fleet may have held \(gone)")
        }
        XCTAssertEqual(report.removed, 4)
        XCTAssertEqual(report.keptUnshared, 2)
    }

    /// A replica from before `holders` upgrades in place: what it received
    /// and confirmed then has no record and counts as the fleet's, as it
    /// did; what arrives after the upgrade is recorded.
    func testAReplicaFromBeforeHoldersUpgradesAndKeepsItsOldRule() throws {
        let deviceC = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let newcomer = Actor(device: deviceC, incarnation: 4)
        func row(_ n: UInt8, _ title: String) -> Row {
            Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: n, count: 16))!, context: VersionVector()).edited(by: newcomer, to: plan(title))
        }
        let before = row(1, "received before the upgrade"), after = row(2, "received after it")
        do {
            let s = try makeStore(dir, device: deviceB, seed: 3)
            try s.dropTombstonesForBarrier(roster: [deviceA, deviceB])
            try s.apply([before], from: deviceC)
        }
        do {
            let c = try Connection(path: dir + "/replica.sqlite")
            try c.execute("DROP TABLE holders; DROP TABLE deleted_prose; DROP TABLE barrier_lists; PRAGMA user_version=\(Schema.all.count - 3)")
        }
        let s = try makeStore(dir, device: deviceB, seed: 3)
        XCTAssertEqual(try Connection(path: dir + "/replica.sqlite").queryOne("PRAGMA user_version") { $0.int(0) }, Int64(Schema.all.count))
        XCTAssertEqual(try s.row(.plans, before.key)?.isTombstone, false)
        try s.apply([after], from: deviceC)
        let report = try s.recover(from: [], graveyard: [], roster: [deviceA, deviceB])
        XCTAssertEqual(try s.row(.plans, before.key)?.isTombstone, true, "no record: the fleet's, as before the upgrade")
        XCTAssertEqual(try s.row(.plans, after.key)?.isTombstone, false, "recorded as held by the newcomer only")
        XCTAssertEqual(report.removed, 1)
    }

    /// Holders are recorded only where they can matter, whichever order the
    /// versions arrive in: a roster device that held a version makes it
    /// the fleet's, before or after the newcomer sent it. Before any round
    /// every holder is recorded (a copy put back may have missed rounds);
    /// the first round this device takes part in stands for the roster
    /// until one commits here.
    func testHoldersAreRecordedOnlyWhereTheyMatterInAnyOrder() throws {
        let deviceC = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let newcomer = Actor(device: deviceC, incarnation: 4)
        func row(_ n: UInt8, _ title: String) -> Row {
            Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: n, count: 16))!, context: VersionVector()).edited(by: newcomer, to: plan(title))
        }
        func holderRecords(_ s: ReplicaStore) throws -> Int {
            Int(try Connection(path: s.path).queryOne("SELECT count(*) FROM holders") { $0.int(0) } ?? -1)
        }
        let s = try makeStore(dir, device: deviceB, seed: 3)
        let beforeAnyRound = row(9, "before any round")
        try s.apply([beforeAnyRound], from: deviceC)
        let mineBeforeAnyRound = try s.put(plan("mine, confirmed before any round"))
        try confirmHeld(s, by: deviceC)
        XCTAssertEqual(try holderRecords(s), 2, "before any round every holder is recorded")

        try s.noteBarrierRound(roster: [deviceA, deviceB])    // acked; the commit never came
        try s.noteBarrierRound(roster: [deviceA, deviceB, deviceC])    // a later round does not widen it
        let onlyOutside = row(1, "only the newcomer sent it")
        let fleetFirst = row(2, "a roster device, then the newcomer"), outsiderFirst = row(3, "the newcomer, then a roster device")
        try s.apply([fleetFirst], from: deviceA)
        XCTAssertEqual(try holderRecords(s), 2, "a roster device's holding needs no record")
        try s.apply([onlyOutside, fleetFirst, outsiderFirst], from: deviceC)
        try s.apply([outsiderFirst], from: deviceA)
        let confirmedOutside = try s.put(plan("mine, confirmed by the newcomer only"))
        try confirmHeld(s, by: deviceC)
        let confirmedBoth = try s.put(plan("mine, confirmed by the newcomer, then by a roster device"))
        try confirmHeld(s, by: deviceC)
        try s.apply([try XCTUnwrap(try s.row(.plans, confirmedBoth.key))], from: deviceA)
        // Edited twice: the newcomer held the first write, a roster device
        // the second, and only the newcomer holds the third.
        let editedAfter = try s.put(plan("mine, held by the newcomer"))
        try confirmHeld(s, by: deviceC)
        _ = try s.put(plan("mine, held by a roster device"), key: editedAfter.key)
        try confirmHeld(s, by: deviceA)
        _ = try s.put(plan("mine, the edit only the newcomer holds"), key: editedAfter.key)
        try confirmHeld(s, by: deviceC)

        let report = try s.recover(from: [], graveyard: [], roster: [deviceA, deviceB])
        XCTAssertEqual(try s.row(.plans, onlyOutside.key)?.isTombstone, false, "only the newcomer held it")
        XCTAssertEqual(try s.row(.plans, confirmedOutside.key)?.isTombstone, false, "only the newcomer confirmed it")
        XCTAssertEqual(try s.row(.plans, beforeAnyRound.key)?.isTombstone, false)
        XCTAssertEqual(try s.row(.plans, mineBeforeAnyRound.key)?.isTombstone, false)
        XCTAssertEqual(try s.row(.plans, editedAfter.key)?.isTombstone, false, "the roster device held only the earlier write")
        for gone in [fleetFirst.key, outsiderFirst.key, confirmedBoth.key] {
            XCTAssertEqual(try s.row(.plans, gone)?.isTombstone, true, "the fleet held \(gone) too")
        }
        XCTAssertEqual(report.keptUnshared, 5)
    }

    /// Behind only because the commit is still on its way: the tombstone
    /// the fleet collected is collected here too, not kept for a later round.
    func testATombstoneTheGraveyardCoversIsCollectedByRecovery() throws {
        let a = try makeStore(dir)
        let p = try a.put(plan("soon gone"))
        let tombstone = try a.delete(.plans, p.key)
        XCTAssertEqual(try a.tombstoneBacklog().count, 1)
        let seqBefore = try a.changeSequence()
        let report = try a.recover(from: [], graveyard: [CollectedTombstone(namespace: .plans, key: p.key, context: tombstone.context)])
        XCTAssertEqual(report.removed, 0)
        XCTAssertEqual(try a.tombstoneBacklog().count, 0)
        XCTAssertNil(try a.row(.plans, p.key))
        XCTAssertTrue(try a.changes(since: seqBefore).contains { $0.key == p.key }, "a running mount hears the row go")
        // A tombstone that saw more than the graveyard's entry waits for a barrier.
        let q = try a.put(plan("edited after"))
        let older = q.context
        try a.put(plan("edited again"), key: q.key)
        let newer = try a.delete(.plans, q.key)
        XCTAssertNotEqual(newer.context, older)
        _ = try a.recover(from: [], graveyard: [CollectedTombstone(namespace: .plans, key: q.key, context: older)])
        XCTAssertEqual(try a.row(.plans, q.key)?.isTombstone, true)
    }

    /// A sibling's write made after the barrier agreed, passed on before
    /// this device heard of the commit: with a complete graveyard it is
    /// not taken for a version the fleet deleted (simulator seed 22 with
    /// --everything); without one, the old rule drops it.
    func testWithACompleteGraveyardASiblingsLaterWriteStays() throws {
        let base = Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: 6, count: 16))!, context: VersionVector())
        let agreed = base.edited(by: Actor(device: deviceA, incarnation: 1), to: plan("as the barrier agreed"))
        let later = agreed.edited(by: Actor(device: deviceB, incarnation: 2), to: plan("written after it by a sibling"))
        for (complete, survives) in [(true, true), (false, false)] {
            let sub = dir + "/\(complete)"
            try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
            let c = try makeStore(sub, device: DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!, seed: 9)
            try c.apply([later])
            _ = try c.recover(from: [agreed], graveyard: [], roster: nil, graveyardIsComplete: complete)
            let heads = try XCTUnwrap(try c.row(.plans, agreed.key)).heads.map(\.dot.actor.device)
            XCTAssertEqual(heads.contains(deviceB), survives, "graveyard complete: \(complete)")
        }
    }

    func testAKeyCollectedTwiceJoinsItsContexts() throws {
        let a = try makeStore(dir)
        let key = RowKey(bytes: [UInt8](repeating: 7, count: 16))!
        let one = Actor(device: deviceB, incarnation: 1), two = Actor(device: deviceB, incarnation: 2)
        try a.adoptGraveyard([CollectedTombstone(namespace: .plans, key: key, context: VersionVector([one: 3]))])
        try a.adoptGraveyard([CollectedTombstone(namespace: .plans, key: key, context: VersionVector([two: 1]))])
        XCTAssertEqual(try a.graveyard(), [CollectedTombstone(namespace: .plans, key: key, context: VersionVector([one: 3, two: 1]))])
    }

    /// A replica from before the coverage record (rows, a collected
    /// tombstone in its graveyard, no `graveyard_covers`) opens in place and
    /// claims nothing; its next round committed with the whole list starts
    /// a claim at that round, rows and graveyard untouched; recovery from a
    /// snapshot that claims from the round after extends it back.
    func testAReplicaFromBeforeTheCoverageRecordClaimsNothingUntilItsNextRound() throws {
        let path = dir + "/old.sqlite"
        var old: ReplicaStore? = try ReplicaStore(path: path, deviceID: deviceA, create: true, clock: ManualClock(), random: SeededRandom(seed: 7))
        let kept = try old!.put(plan("kept"))
        let gone = try old!.put(plan("gone"))
        try old!.delete(.plans, gone.key)
        XCTAssertEqual(try old!.dropTombstonesForBarrier(), 1, "collected the way an older version did: no generation, no list")
        XCTAssertNil(try old!.graveyardCoverage())
        old = nil

        let upgraded = try ReplicaStore(path: path, deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 8))
        XCTAssertNil(try upgraded.graveyardCoverage(), "nothing claimed for rounds it did not record")
        XCTAssertEqual(try upgraded.graveyard().map(\.key), [gone.key])
        let other = CollectedTombstone(namespace: .plans, key: RowKey(bytes: Array(repeating: 9, count: 16))!, context: VersionVector())
        try upgraded.dropTombstonesForBarrier(generation: 4, round: [other])
        XCTAssertEqual(try upgraded.graveyardCoverage(), GraveyardCoverage(since: 4, through: 4))
        XCTAssertEqual(Set(try upgraded.graveyard().map(\.key)), [gone.key, other.key], "the round's list is buried beside the old entry")
        XCTAssertEqual(try upgraded.row(.plans, kept.key)?.isTombstone, false)
        try upgraded.dropTombstonesForBarrier(generation: 5, round: [])
        XCTAssertEqual(try upgraded.graveyardCoverage(), GraveyardCoverage(since: 4, through: 5))
        _ = try upgraded.recover(from: [try XCTUnwrap(try upgraded.row(.plans, kept.key))], coverage: GraveyardCoverage(since: 6, through: 7))
        XCTAssertEqual(try upgraded.graveyardCoverage(), GraveyardCoverage(since: 4, through: 7), "joined where the two meet")
        XCTAssertEqual(try upgraded.row(.plans, kept.key)?.isTombstone, false)
    }
}
