import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import XCTest
@testable import QuireSync

/// Issue 10, case 6: one big row must not stall a namespace. Rows larger
/// than a response travel alone (chunked), rows that cannot travel at all
/// are named and skipped, and whatever the key order every other row syncs.
final class SizeLimitTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    /// The n-th key in key order (00…00, 00…01, …) and keys after every one of them.
    func key(_ n: Int) -> RowKey { RowKey(bytes: [UInt8](repeating: 0, count: 14) + [UInt8(n >> 8), UInt8(n & 0xFF)])! }
    func laterKey(_ random: SeededRandom) -> RowKey { RowKey(bytes: [0x10 + UInt8(random.int(0..<0xF0))] + random.bytes(15))! }

    /// Prose of about `size` bytes in paragraphs.
    func prose(_ size: Int, _ random: SeededRandom) -> String {
        var out = ""
        out.reserveCapacity(size + 100)
        while out.utf8.count < size { out += random.word() + (random.chance(0.1) ? "\n\n" : " ") }
        return out
    }

    /// A small frame and a small response budget make "big" cheap: 1.5 MiB
    /// and 600 KiB rows first in key order, and 300 small rows after them.
    func testBigRowsFirstInKeyOrderHoldBackNothing() throws {
        var config = SyncConfiguration()
        config.maxResponseRowBytes = 64 << 10
        let fleet = try SimFleet(["a", "b"], base: base, configuration: config, maxFrameSize: 16 << 10)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let random = SeededRandom(seed: 61)
        try a.store.put(note("big", prose(1_500_000, random)), key: key(0))
        try a.store.put(note("also big", prose(600_000, random)), key: key(1))
        // Fits the budget, but not beside the small rows: it waits a round.
        try a.store.put(note("middling", prose(50_000, random)), key: key(2))
        for i in 0..<300 { try a.store.put(note("small \(i)", prose(200, random)), key: laterKey(random)) }
        for i in 0..<20 { try b.store.put(note("from b \(i)", prose(200, random)), key: laterKey(random)) }
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(maxTicks: 3000), 0, "the fleet did not converge")
        XCTAssertEqual(try allRows(a.store), try allRows(b.store))
        XCTAssertEqual(try b.store.rows(.notebook, from: [], to: nil).count, 323)
        XCTAssertGreaterThanOrEqual(fleet.engines[0].metricsSnapshot().rowsSentAlone, 2, "the big rows went alone")
        XCTAssertNil(fleet.engines[0].status().unsyncableRows)
        XCTAssertEqual(fleet.engines[1].status().dropped, [:])
    }

    /// A row over the limit (written before the limit existed, say) first in
    /// key order: it is named, with the reason, in the status of the device
    /// that holds it, never sent, and every row after it still syncs. Once
    /// it is shortened, it syncs too and the name goes.
    func testARowOverTheLimitIsNamedAndTheRowsAfterItStillSync() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let random = SeededRandom(seed: 62)
        let huge = [UInt8](repeating: UInt8(ascii: "w"), count: RowLimits.maxBodyBytes + 1)
        try a.store.put(.note(Note(title: "huge", body: huge, createdAt: .init(seconds: 0), updatedAt: .init(seconds: 0))), key: key(0))
        var small: [RowKey] = []
        for i in 0..<100 {
            small.append(laterKey(random))
            try a.store.put(note("small \(i)", prose(300, random)), key: small.last!)
        }
        try fleet.attachAll()
        var synced = false
        for _ in 0..<1000 {
            fleet.tick()
            if try small.allSatisfy({ try b.store.row(.notebook, $0) != nil }) { synced = true; break }
        }
        XCTAssertTrue(synced, "the rows after the one over the limit did not sync")
        for _ in 0..<40 { fleet.tick() }
        XCTAssertNil(try b.store.row(.notebook, key(0)), "a row over the limit travelled")
        let status = fleet.engines[0].status()
        let named = try XCTUnwrap(status.unsyncableRows?.first, "the row is not named in the status")
        XCTAssertEqual(named.key, key(0).hex)
        XCTAssertEqual(named.name, "huge")
        XCTAssertEqual(named.namespace, "notebook")
        XCTAssertTrue(named.reason.contains("16.1 MiB, over the 16 MiB limit"), named.reason)
        XCTAssertEqual(status.events.filter { $0.contains("notebook/'huge'") && $0.contains("cannot sync") }.count, 1,
                       "said once, not every round: \(status.events)")
        // The snapshot other processes read says it too.
        let written = try XCTUnwrap(SyncStatus.load(from: DeviceHome(path: a.dir)))
        XCTAssertEqual(written.unsyncableRows?.map(\.key), [key(0).hex])
        XCTAssertNil(fleet.engines[1].status().dropped[FrameDrop.rowOverLimit.rawValue], "the sender sent it anyway")

        // Shortened on the device that holds it: it syncs, and is no longer named.
        try a.store.put(note("huge", "cut down to size"), key: key(0))
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        XCTAssertEqual(try allRows(a.store), try allRows(b.store))
        XCTAssertNil(fleet.engines[0].status().unsyncableRows)
    }

    /// A sibling that sends a row over the limit anyway (an older build, or
    /// a hostile one) has it refused, counted and said; the rest of its
    /// response is applied.
    func testARowOverTheLimitFromASiblingIsRefusedAndCounted() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let engine = fleet.engines[1]
        try engine.attach()
        let huge = try a.store.put(.note(Note(title: "huge", body: [UInt8](repeating: 0x61, count: RowLimits.maxBodyBytes + 1),
                                              createdAt: .init(seconds: 0), updatedAt: .init(seconds: 0))), key: key(0))
        let fine = try a.store.put(note("fine", "a few words"), key: key(1))
        let response = ReconcileResponse(namespace: .notebook, session: Array(repeating: 9, count: 8), step: 0,
                                         rows: [huge, fine], items: [], isTruncated: false)
        var sealer = FrameSealer(identity: FrameIdentity(deviceID: a.id, userIDHash: a.identity.userIDHash, box: a.identity.deviceBox),
                                 session: Array(repeating: 1, count: 8), sessionStart: 1, maxFrameSize: 64 << 10)
        for frame in sealer.seal(SyncMessage(subKind: .reconcileResponse, payload: response.encoded()), to: b.id,
                                 boxKey: b.identity.deviceBox.publicKey, messageID: fleet.random.bytes(8)) {
            try fleet.relay.publish(frame, to: engine.channel)
        }
        for _ in 0..<3 { fleet.tick() }
        XCTAssertNil(try b.store.row(.notebook, key(0)))
        XCTAssertNotNil(try b.store.row(.notebook, key(1)), "the rest of the response was lost")
        let status = engine.status()
        XCTAssertEqual(status.dropped[FrameDrop.rowOverLimit.rawValue], 1)
        XCTAssertTrue(status.events.contains { $0.contains("refused notebook/'huge'") && $0.contains("from 'a'") && $0.contains("over the 16 MiB limit") },
                      "\(status.events)")
    }

    /// The budget itself: a row that cannot travel is set aside, a row over
    /// the budget goes alone, a row that does not fit what is left waits,
    /// and none of them stops the rows after it.
    func testTheBudgetSkipsInsteadOfStopping() throws {
        let fleet = try SimFleet(["a"], base: base)
        let store = fleet.devices[0].store
        func row(_ i: Int, _ size: Int) throws -> Row {
            try store.put(.note(Note(title: "r\(i)", body: [UInt8](repeating: 0x61, count: size), createdAt: .init(seconds: 0),
                                     updatedAt: .init(seconds: 0))), key: key(i))
        }
        let rows = [try row(0, RowLimits.maxBodyBytes + 1), try row(1, 300_000), try row(2, 500), try row(3, 700_000),
                    try row(4, 65_000), try row(5, 500), try row(6, 400_000)]
        var budget = RowBudget(limit: 64 << 10, aloneLimit: 1 << 20)
        budget.add(rows)
        XCTAssertEqual(budget.unsendable.map(\.row.key), [key(0)])
        XCTAssertEqual(budget.alone.map(\.key), [key(1), key(3)], "alone rows up to their own limit")
        XCTAssertEqual(budget.rows.map(\.key), [key(2), key(5)], "the small rows after a row that waits still go")
        XCTAssertTrue(budget.isTruncated, "the rows that wait are pulled again")
    }

    /// A budget that may stream hands each full batch to its sender and
    /// starts again, until the stream limit leaves no room for a full
    /// batch; a sender that fails stops the stream and the rest waits.
    func testAStreamingBudgetSendsFullBatchesAhead() throws {
        let fleet = try SimFleet(["a"], base: base)
        let store = fleet.devices[0].store
        let rows = try (0..<40).map { i in
            try store.put(.note(Note(title: "r\(i)", body: [UInt8](repeating: 0x61, count: 1_000), createdAt: .init(seconds: 0),
                                     updatedAt: .init(seconds: 0))), key: key(i))
        }
        let size = rows.map(RowLimits.wireBytes(of:)).max()!
        var batches: [[Row]] = []
        var budget = RowBudget(limit: 4 * size, streamLimit: 20 * size) { batches.append($0); return true }
        budget.add(rows)
        XCTAssertEqual(batches.map(\.count), [4, 4, 4, 4], "full batches while a full batch more still fits the stream")
        XCTAssertEqual(budget.rows.count, 4, "the last batch is the response proper")
        XCTAssertTrue(budget.isTruncated)
        XCTAssertEqual((batches.flatMap { $0 } + budget.rows).map(\.key), (0..<20).map(key), "in order, none twice")

        var calls = 0
        var failing = RowBudget(limit: 4 * size, streamLimit: 20 * size) { _ in calls += 1; return false }
        failing.add(rows)
        XCTAssertEqual(calls, 1, "no second try once the link failed")
        XCTAssertEqual(failing.rows.map(\.key), (0..<4).map(key), "the batch that failed stays for the response proper")
        XCTAssertTrue(failing.isTruncated)
    }
}
