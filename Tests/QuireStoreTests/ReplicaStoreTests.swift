import XCTest
import QuireCore
@testable import QuireStore

final class ReplicaStoreTests: XCTestCase {
    func testSameContentOnTwoStoresGivesIdenticalLeavesAndRoots() throws {
        let a = try makeStore(temporaryDirectory(), device: deviceA)
        let b = try makeStore(temporaryDirectory(), device: deviceB, seed: 99)
        for i in 0..<50 { try a.put(note("note \(i)", "body \(i)\n\nsecond paragraph", tags: ["t\(i % 3)"])) }
        try a.put(.plan(Plan(title: "plan", due: Timestamp(seconds: 5), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        try a.put(.contact(Contact(name: "Ada", emails: ["ada@example.org"], note: "", updatedAt: Timestamp(seconds: 0))))
        try a.put(.saga(SagaEntry(date: "2026-03-01", text: Array("rain".utf8), updatedAt: Timestamp(seconds: 0))))
        try a.put(.setting(Setting(name: "theme", value: "dark", updatedAt: Timestamp(seconds: 0))))
        try a.put(.memory(MemoryEvent(at: Timestamp(seconds: 1), kind: "k", text: "t")))
        let deleted = try a.put(note("gone", "x"))
        try a.delete(.notebook, deleted.key)
        XCTAssertNotEqual(try a.roots(), try b.roots())
        for ns in Namespace.allCases where ns != .devices {
            try b.apply(try a.rows(ns, from: [], to: nil) + a.tombstones(ns))
        }
        for ns in Namespace.allCases where ns != .devices {
            XCTAssertEqual(try a.leaves(ns).map(\.leaf), try b.leaves(ns).map(\.leaf), "\(ns)")
        }
        XCTAssertEqual(try a.roots(), try b.roots())
        XCTAssertEqual(try b.counts(.notebook).tombstones, 1)
        XCTAssertEqual(try b.pendingOutbox().count, 0, "applying a sibling's rows is not a local edit")
        // Applying the same rows again changes nothing (idempotent).
        let before = try b.changeSequence()
        let again = try b.apply(try a.rows(.notebook, from: [], to: nil))
        XCTAssertEqual(again.applied, 0)
        XCTAssertEqual(try b.roots(), try a.roots())
        XCTAssertEqual(try b.changeSequence(), before + 1)
    }

    func testARowWithoutItsBodyKeepsEverythingElse() throws {
        let s = try makeStore(temporaryDirectory())
        let body = "first paragraph\n\nsecond paragraph"
        let written = try s.put(note("title", body, tags: ["b", "a"]))
        let (head, changeNumber) = try XCTUnwrap(try s.rowWithoutBody(.notebook, written.key))
        XCTAssertEqual(changeNumber, try s.changeNumber(.notebook, written.key), "the change number of the version read")
        guard case .note(let n)? = head.content, case .note(let whole)? = try s.row(.notebook, written.key)?.content else {
            return XCTFail("not a note")
        }
        XCTAssertNil(n.body, "the body is not read")
        XCTAssertEqual(n.length, body.utf8.count)
        XCTAssertEqual(n.title, whole.title)
        XCTAssertEqual(n.tags, whole.tags)
        XCTAssertEqual(n.createdAt, whole.createdAt)
        XCTAssertEqual(n.contentHash, whole.contentHash)
        XCTAssertEqual(head.context, written.context)
        XCTAssertNil(try s.rowWithoutBody(.notebook, RowKey(bytes: [UInt8](repeating: 3, count: 16))!))
        // Elsewhere the text is in the heads: the row comes back whole.
        let plan = try s.put(.plan(Plan(title: "plan", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        XCTAssertEqual(try s.rowWithoutBody(.plans, plan.key)?.row, try s.row(.plans, plan.key))
        XCTAssertEqual(try s.rowWithoutBody(.plans, plan.key)?.changeNumber, try s.changeNumber(.plans, plan.key))
    }

    func testLocalEditBumpsOnlyThisDeviceAndWritesTheOutboxInTheSameTransaction() throws {
        let clock = ManualClock()
        let s = try makeStore(temporaryDirectory(), clock: clock)
        let me = try s.actor()
        XCTAssertEqual(me.device, deviceA)
        let r1 = try s.put(note("t", "v1"))
        XCTAssertEqual(r1.context.counters, [me: 1])
        XCTAssertEqual(r1.heads.map(\.dot), [Dot(actor: me, counter: 1)])
        clock.advance(5)
        guard case .note(var n)? = r1.content else { return XCTFail() }
        n.body = Array("v2".utf8)
        let r2 = try s.put(.note(n), key: r1.key)
        XCTAssertEqual(r2.context.counters, [me: 2])
        XCTAssertEqual(r2.heads.map(\.dot), [Dot(actor: me, counter: 2)], "an edit replaces the head it saw")
        guard case .note(let stored)? = try s.row(.notebook, r1.key)?.content else { return XCTFail() }
        XCTAssertEqual(stored.updatedAt.seconds, clock.now().seconds)
        XCTAssertEqual(stored.createdAt, r1.content.flatMap { if case .note(let x) = $0 { return x.createdAt } else { return nil } })
        XCTAssertEqual(try s.pendingOutbox().count, 2)
        // Writing identical content is not an edit.
        let r3 = try s.put(.note(n), key: r1.key)
        XCTAssertEqual(r3.context.counters, [me: 2])
        XCTAssertEqual(try s.pendingOutbox().count, 2)
        // A delete is a tombstone whose context is what it removed, and it is kept.
        let t = try s.delete(.notebook, r1.key)
        XCTAssertTrue(t.isTombstone)
        XCTAssertEqual(t.context.counters, [me: 2])
        XCTAssertEqual(try s.counts(.notebook).tombstones, 1)
        XCTAssertEqual(try s.pendingOutbox().count, 3)
        let pending = try s.pendingOutbox()
        try s.clearOutbox(through: pending[1].id)
        XCTAssertEqual(try s.pendingOutbox().map(\.id), [pending[2].id])
    }

    func testAFailedTransactionLeavesNothingBehind() throws {
        let s = try makeStore(temporaryDirectory())
        try s.put(note("keep", "kept"))
        let roots = try s.roots(), outbox = try s.pendingOutbox().count
        // Memory is append-only: a second put with the same key must fail atomically.
        let e = try s.put(.memory(MemoryEvent(at: Timestamp(seconds: 1), kind: "k", text: "t")))
        XCTAssertThrowsError(try s.put(.memory(MemoryEvent(at: Timestamp(seconds: 2), kind: "k", text: "other")), key: e.key))
        XCTAssertEqual(try s.pendingOutbox().count, outbox + 1)
        XCTAssertNotEqual(try s.roots(), roots)
        XCTAssertEqual(try s.roots(), try s.recomputedRoots())
    }

    func testConcurrentRemoteEditsMergeWithoutBumpingAndAreAudited() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.put(.plan(Plan(title: "p", notes: "local", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        let b = Actor(device: deviceB, incarnation: 7)
        let remote = Row.single(.plans, r.key, dot: Dot(actor: b, counter: 1), context: VersionVector(),
                                content: .plan(Plan(title: "p", notes: "remote", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 4_000_000_000), editedBy: deviceB)))
        let result = try s.apply([remote])
        XCTAssertEqual(result.merged, 1)
        let merged = try XCTUnwrap(try s.row(.plans, r.key))
        XCTAssertEqual(merged.context.counters, [try s.actor(): 1, b: 1], "join, no bump")
        XCTAssertEqual(merged.heads.count, 2, "both concurrent versions are kept")
        guard case .plan(let p)? = merged.content else { return XCTFail() }
        XCTAssertEqual(p.notes, "remote", "the later whole-second updatedAt is shown")
        XCTAssertEqual(try s.mergeHistory(.plans, r.key).count, 1)
        XCTAssertEqual(try s.roots(), try s.recomputedRoots())
    }

    func testTombstoneFromSiblingBuriesRowAndConcurrentEditBeatsDelete() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.put(note("n", "text"))
        let b = Actor(device: deviceB, incarnation: 7)
        // A tombstone that saw the row buries it.
        try confirmHeld(s)
        try s.apply([r.deleted()])
        XCTAssertEqual(try s.row(.notebook, r.key)?.isTombstone, true)
        // A delete that did not see an edit loses to it.
        let r2 = try s.put(note("m", "kept words"))
        let seen = Row.single(.notebook, r2.key, dot: Dot(actor: b, counter: 1), context: VersionVector(), content: note("m", "older"))
        try s.apply([seen.deleted()])
        let survivor = try XCTUnwrap(try s.row(.notebook, r2.key))
        XCTAssertFalse(survivor.isTombstone)
        XCTAssertEqual(survivor.context.counters, [try s.actor(): 1, b: 1])
        XCTAssertEqual(survivor.heads.map(\.dot.actor), [try s.actor()])
    }

    func testForeignAndCorruptDatabasesAreRefusedWithoutWriting() throws {
        let dir = temporaryDirectory()
        let garbage = dir + "/garbage.sqlite"
        let junk = [UInt8](repeating: 0x42, count: 8192)
        XCTAssertTrue(FileManager.default.createFile(atPath: garbage, contents: Data(junk)))
        XCTAssertThrowsError(try ReplicaStore(path: garbage, deviceID: deviceA)) { e in
            XCTAssertEqual((e as? StoreError)?.kind, .corrupt)
        }
        XCTAssertEqual(Array(FileManager.default.contents(atPath: garbage)!), junk, "nothing written into a damaged file")
        let foreign = dir + "/foreign.sqlite"
        let c = try Connection(path: foreign)
        try c.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        XCTAssertThrowsError(try ReplicaStore(path: foreign, deviceID: deviceA, create: true)) { e in
            XCTAssertEqual((e as? StoreError)?.kind, .foreign)
            XCTAssertTrue("\(e)".contains("not a quire replica"))
        }
    }

    /// A replica from before the tombstone index (schema 2, made from the
    /// schema-3 fixture written by the previous quire) gains the index and
    /// heads on open; status counts and the offloaded list then read
    /// indexes, not every row; the upgraded roots equal a full recompute.
    func testOlderSchemaIsUpgradedAndStatusQueriesUseIndexes() throws {
        let path = temporaryDirectory() + "/replica.sqlite"
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../EndToEndTests/Fixtures/schema3/a/replica.sqlite").standardized.path
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        do {
            let c = try Connection(path: path)
            try c.execute("DROP INDEX rows_tombstones; PRAGMA user_version=2")
        }
        let s = try ReplicaStore(path: path, deviceID: deviceA)
        XCTAssertEqual(try s.counts(.notebook).live, 4)
        XCTAssertEqual(try s.counts(.notebook).tombstones, 1)
        XCTAssertEqual(try s.counts(.plans).live, 1)
        XCTAssertEqual(try s.roots(), try s.recomputedRoots())
        XCTAssertEqual(try s.actor().device, deviceA)
        XCTAssertNotEqual(try s.actor().incarnation, 0, "legacy versions are incarnation 0; new writes are not")
        let c = try Connection(path: path)
        XCTAssertEqual(try c.queryOne("PRAGMA user_version") { $0.int(0) }, Int64(Schema.all.count))
        func plan(_ sql: String) throws -> String {
            try c.query("EXPLAIN QUERY PLAN " + sql, [.int(1)]) { $0.text(3) ?? "" }.joined(separator: "; ")
        }
        XCTAssertTrue(try plan("SELECT count(*) FROM rows WHERE ns = ? AND tombstone = 1").contains("COVERING INDEX rows_tombstones"))
        XCTAssertTrue(try plan("SELECT count(*) FROM rows WHERE ns = ?").contains("COVERING INDEX rows_key"))
        XCTAssertTrue(try plan("SELECT key, vv FROM rows WHERE ns = ? AND tombstone = 1 AND key >= x'00' ORDER BY key")
            .contains("INDEX rows_tombstones (ns=? AND tombstone=? AND key>?)"))
        let offloaded = try plan("SELECT key FROM rows INDEXED BY rows_offloaded_hash WHERE ns = ? AND offloaded = 1 AND tombstone = 0 ORDER BY key")
        XCTAssertTrue(offloaded.contains("rows_offloaded_hash"))
    }

    func testPrefsGenerationNeverMovesBackward() throws {
        let dir = temporaryDirectory()
        let prefs = PrefsFile(path: dir + "/prefs.json")
        try prefs.save(Prefs(deviceName: "x"))
        try prefs.setGeneration(3)
        XCTAssertThrowsError(try prefs.setGeneration(2))
        XCTAssertEqual(try prefs.load().generation, 3)
        try prefs.setGeneration(4)
        XCTAssertEqual(try prefs.load().generation, 4)
    }
}

final class OutboxTests: XCTestCase {
    func testBulkImportWritesOneOutboxRecordPerNamespaceCoveringEveryEdit() throws {
        let s = try makeStore(temporaryDirectory())
        try s.putMany((0..<500).map { note("n\($0)", "b\($0)") })
        let pending = try s.pendingOutbox()
        XCTAssertEqual(pending.count, 1)
        XCTAssertEqual(pending.first?.namespace, .notebook)
        XCTAssertEqual(try s.pendingEdits(), 500)
        try s.clearOutbox(through: pending[0].id)
        XCTAssertEqual(try s.pendingEdits(), 0)
    }
}
