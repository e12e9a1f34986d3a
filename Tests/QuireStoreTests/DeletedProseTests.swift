import XCTest
import QuireCore
@testable import QuireStore

/// A note body or journal day written again after its delete: the old
/// text stays deleted, also on a sibling that never saw the delete and
/// still holds the old text as its shadow (`DeletedProse`).
final class DeletedProseTests: XCTestCase {
    let day = "2026-05-05"
    var dayKey: RowKey { SagaEntry.key(for: day) }
    lazy var dir = temporaryDirectory()

    func saga(_ text: String) -> RowContent {
        .saga(SagaEntry(date: day, text: Array(text.utf8), updatedAt: Timestamp(seconds: 0)))
    }

    func store(_ name: String, _ device: DeviceID, seed: UInt64) throws -> ReplicaStore {
        try ReplicaStore(path: dir + "/\(name).sqlite", deviceID: device, create: true, clock: ManualClock(), random: SeededRandom(seed: seed))
    }

    func text(_ s: ReplicaStore) throws -> String? {
        guard case .saga(let entry)? = try s.row(.saga, dayKey)?.content else { return nil }
        return String(decoding: entry.text, as: UTF8.self)
    }

    func tombstones(_ row: Row?) -> Set<ParagraphHash> {
        guard case .saga(let entry)? = row?.content else { return [] }
        return Set(entry.deletedParagraphs.compactMap { ParagraphHash(bytes: $0) })
    }

    func testADayWrittenAgainAfterItsDeleteStaysNewOnASiblingThatMissedTheDelete() throws {
        let a = try store("a", deviceA, seed: 1), b = try store("b", deviceB, seed: 2)
        try a.saveProse(saga("morning run\n"))
        try b.apply([try XCTUnwrap(try a.row(.saga, dayKey))], from: deviceA)
        try confirmHeld(a)
        try a.apply([try b.saveProse(saga("morning run\n\nevening rain\n"), key: dayKey)], from: deviceB)
        try confirmHeld(b)
        XCTAssertEqual(try b.shadow(.saga, dayKey), Array("morning run\n\nevening rain\n".utf8), "b holds the old text as its shadow")

        try a.delete(.saga, dayKey)
        let again = try a.saveProse(saga("a fresh start\n"), key: dayKey)
        XCTAssertEqual(tombstones(again), [Paragraphs.paragraphHash("morning run"), Paragraphs.paragraphHash("evening rain")],
                       "the new text deletes what the delete took, and nothing it holds itself")
        XCTAssertEqual(try text(a), "a fresh start\n", "the user's bytes, exactly")

        // b never hears of the delete, only of the day written again.
        try b.apply([again], from: deviceA)
        XCTAssertEqual(try text(b), "a fresh start\n", "the deleted paragraphs did not come back from b's shadow")
        XCTAssertEqual(try b.mergeHistory(.saga, dayKey).count, 0, "nothing restored")
        XCTAssertEqual(try b.row(.saga, dayKey)?.heads.map(\.dot.actor.device), [deviceA], "b made no edit of its own")

        // A second delete, which saw everything, leaves the day deleted everywhere.
        try b.apply([try a.delete(.saga, dayKey)], from: deviceA)
        XCTAssertEqual(try b.row(.saga, dayKey)?.isTombstone, true)
        XCTAssertEqual(try a.roots(), try b.roots())
    }

    /// A paragraph a sibling added to the old day, concurrently with the
    /// delete, is kept beside the new text: only what the delete took goes.
    func testAConcurrentAdditionToTheOldDayIsKeptAndTheDeletedTextIsNot() throws {
        let a = try store("a", deviceA, seed: 1), b = try store("b", deviceB, seed: 2)
        try a.saveProse(saga("morning run\n\nevening rain\n"))
        try b.apply([try XCTUnwrap(try a.row(.saga, dayKey))], from: deviceA)
        try confirmHeld(a)
        try b.saveProse(saga("morning run\n\nevening rain\n\nlunch with ana\n"), key: dayKey)
        try a.delete(.saga, dayKey)
        let again = try a.saveProse(saga("a fresh start\n"), key: dayKey)
        try confirmHeld(b)
        try b.apply([again], from: deviceA)
        try a.apply([try XCTUnwrap(try b.row(.saga, dayKey))], from: deviceB)
        for s in [a, b] {
            let shown = try XCTUnwrap(try text(s))
            XCTAssertTrue(shown.contains("a fresh start") && shown.contains("lunch with ana"), shown)
            XCTAssertFalse(shown.contains("morning run") || shown.contains("evening rain"), shown)
        }
        XCTAssertEqual(try a.roots(), try b.roots())
    }

    /// The device that writes the day again need not be the one that
    /// deleted it: a delete received from a sibling is remembered as well.
    func testADeleteReceivedFromASiblingIsRememberedByTheDeviceThatWritesTheDayAgain() throws {
        let deviceC = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let a = try store("a", deviceA, seed: 1), b = try store("b", deviceB, seed: 2), c = try store("c", deviceC, seed: 3)
        let first = try a.saveProse(saga("morning run\n\nevening rain\n"))
        try b.apply([first], from: deviceA)
        try c.apply([first], from: deviceA)
        try confirmHeld(a)
        try b.apply([try a.delete(.saga, dayKey)], from: deviceA)
        let again = try b.saveProse(saga("written on b\n"), key: dayKey)
        XCTAssertEqual(tombstones(again), [Paragraphs.paragraphHash("morning run"), Paragraphs.paragraphHash("evening rain")])
        try c.apply([again], from: deviceB)
        XCTAssertEqual(try text(c), "written on b\n")
    }

    /// Edit beats delete keeps the concurrent edit's text, not the deleted
    /// one's. A device that held both versions (its shadow holds the union)
    /// and then hears that a delete took one must not restore the deleted
    /// paragraph as an edit of its own: such an edit would outlive a later
    /// delete that saw every write, and the day would come back (simulator
    /// seed 30416 with --everything --revocations).
    func testAParagraphADeleteTookIsNotRestoredFromAShadowThatHeldIt() throws {
        let deviceC = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let dee = try store("dee", deviceA, seed: 1), ada = try store("ada", deviceB, seed: 2), fay = try store("fay", deviceC, seed: 3)
        let first = try dee.saveProse(saga("morning run\n"))
        try ada.apply([first], from: deviceA)
        try fay.apply([first], from: deviceA)
        try confirmHeld(dee)
        let adas = try ada.saveProse(saga("morning run\n\nada's line\n"), key: dayKey)
        let fays = try fay.saveProse(saga("morning run\n\nfay's line\n"), key: dayKey)
        try confirmHeld(ada)
        try confirmHeld(fay)
        try dee.apply([adas, fays], from: deviceB)
        let union = try XCTUnwrap(try text(dee))
        XCTAssertTrue(union.contains("ada's line") && union.contains("fay's line"), union)

        // Ada deletes the day she saw; Fay's concurrent edit beats the delete.
        try ada.delete(.saga, dayKey)
        try ada.apply([fays], from: deviceC)
        let survived = try XCTUnwrap(try ada.row(.saga, dayKey))
        XCTAssertEqual(try text(ada), "morning run\n\nfay's line\n")

        try dee.apply([survived], from: deviceB)
        XCTAssertEqual(try text(dee), "morning run\n\nfay's line\n", "the deleted paragraph stays deleted")
        XCTAssertEqual(try dee.row(.saga, dayKey)?.heads.map(\.dot.actor.device), [deviceC], "dee made no edit of its own")
        XCTAssertFalse(try dee.mergeHistory(.saga, dayKey).contains { $0.detail.contains("restored") })
        XCTAssertEqual(try dee.shadow(.saga, dayKey), Array("morning run\n\nfay's line\n".utf8), "the shadow accepts the text")

        // Fay, having seen every write, deletes the day: it stays deleted everywhere.
        try fay.apply([survived], from: deviceB)
        let last = try fay.delete(.saga, dayKey)
        for s in [dee, ada] {
            try s.apply([last], from: deviceC)
            XCTAssertEqual(try s.row(.saga, dayKey)?.isTombstone, true)
        }
        XCTAssertEqual(try dee.roots(), try fay.roots())
        XCTAssertEqual(try ada.roots(), try fay.roots())
    }

    /// A note a sibling deleted while a file was open on it here: the save
    /// writes it again and deletes what the delete took. A note deleted
    /// here is not recorded: nothing here writes it again (files open on
    /// it write nowhere; a new file of its name is a new row).
    func testANoteIsRecordedWhenASiblingDeletedItAndNotWhenDeletedHere() throws {
        let a = try store("a", deviceA, seed: 1), b = try store("b", deviceB, seed: 2)
        let plan = try a.saveProse(note("plan", "first idea\n\nsecond idea\n"))
        try b.apply([plan], from: deviceA)
        try confirmHeld(a)
        try b.apply([try a.delete(.notebook, plan.key)], from: deviceA)
        let saved = try b.saveProse(note("plan", "first idea\n\na third\n"), key: plan.key, shown: Array("first idea\n\nsecond idea\n".utf8))
        guard case .note(let n)? = saved.content else { return XCTFail() }
        XCTAssertEqual(Set(n.deletedParagraphs.compactMap { ParagraphHash(bytes: $0) }), [Paragraphs.paragraphHash("second idea")])
        let c = try Connection(path: dir + "/a.sqlite")
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM deleted_prose") { $0.int(0) }, 0, "a deleted it itself")
    }

    /// The record lives while the row is deleted: written again (here or
    /// by a sibling), or collected by a barrier, it is gone.
    func testTheRecordEndsWhenTheRowLivesAgainOrIsCollected() throws {
        let a = try store("a", deviceA, seed: 1), b = try store("b", deviceB, seed: 2)
        let c = try Connection(path: dir + "/a.sqlite")
        func records() throws -> Int64 { try c.queryOne("SELECT count(*) FROM deleted_prose") { $0.int(0) } ?? -1 }
        let other = SagaEntry.key(for: "2026-05-06")
        try a.saveProse(saga("morning run\n"))
        try a.saveProse(.saga(SagaEntry(date: "2026-05-06", text: Array("a quiet day\n".utf8), updatedAt: Timestamp(seconds: 0))))
        try a.delete(.saga, dayKey)
        try a.delete(.saga, other)
        XCTAssertEqual(try records(), 2)
        // A second tombstone over the first keeps the first delete's record.
        try b.apply([try XCTUnwrap(try a.tombstones(.saga).first { $0.key == dayKey })], from: deviceA)
        try b.saveProse(saga("b's day\n"), key: dayKey)
        let wider = try b.delete(.saga, dayKey)
        try confirmHeld(a)
        try a.apply([wider], from: deviceB)
        XCTAssertEqual(try records(), 2)
        // Written again by a sibling: this device's record is no longer its to tell.
        try a.apply([try b.saveProse(saga("b wrote it again\n"), key: dayKey)], from: deviceB)
        XCTAssertEqual(try records(), 1)
        XCTAssertEqual(try text(a), "b wrote it again\n")
        try a.dropTombstonesForBarrier(roster: [deviceA, deviceB])
        XCTAssertEqual(try records(), 0, "collected with its tombstone")
        let fresh = try a.saveProse(.saga(SagaEntry(date: "2026-05-06", text: Array("new\n".utf8), updatedAt: Timestamp(seconds: 0))))
        XCTAssertEqual(tombstones(fresh), [], "a collected day starts afresh")
    }

    /// A replica from before the table upgrades in place; a day deleted
    /// before the upgrade has no record (written again, it carries no
    /// tombstones, as before), and one deleted after it has.
    func testAReplicaFromBeforeTheRecordUpgradesInPlace() throws {
        do {
            let a = try store("a", deviceA, seed: 1)
            try a.saveProse(saga("morning run\n"))
            try a.delete(.saga, dayKey)
        }
        do {
            let c = try Connection(path: dir + "/a.sqlite")
            try c.execute("DROP TABLE barrier_lists; DROP TABLE deleted_prose; PRAGMA user_version=\(Schema.all.count - 2)")
        }
        let a = try store("a", deviceA, seed: 1)
        XCTAssertEqual(try Connection(path: dir + "/a.sqlite").queryOne("PRAGMA user_version") { $0.int(0) }, Int64(Schema.all.count))
        XCTAssertEqual(tombstones(try a.saveProse(saga("after the upgrade\n"), key: dayKey)), [])
        try a.delete(.saga, dayKey)
        XCTAssertEqual(tombstones(try a.saveProse(saga("once more\n"), key: dayKey)), [Paragraphs.paragraphHash("after the upgrade")])
    }
}
