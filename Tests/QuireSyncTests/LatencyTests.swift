import Foundation
import QuireCore
import QuireStore
import XCTest
@testable import QuireSync

/// How soon a save reaches a sibling, on simulated time: the engine is
/// woken by the commit, advertises the first change of a burst at once,
/// and a pair that keeps converging is never taken for a storm.
final class LatencyTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    /// Ticks of `ms` until `device` holds `key` titled `title`, or nil past `limit` ticks.
    func ticksUntilHeld(_ fleet: SimFleet, _ key: RowKey, on device: TestDevice, ms: UInt64, limit: Int, title: String) throws -> Int? {
        for i in 0..<limit {
            if case .note(let n)? = try device.store.row(.notebook, key)?.content, n.title == title { return i }
            fleet.tick(ms: ms)
        }
        return nil
    }

    /// A series of saves a few seconds apart: every one reaches the sibling
    /// promptly (the storm guard once held every 8th for 30 s: it counted
    /// rounds that converged as if they were a storm).
    func testSavesAFewSecondsApartAllArriveWithoutAStall() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        var arrivals: [Int] = []
        for i in 0..<40 {
            // A save through a mount is several commits (create, write, a
            // rename over the old name), each one advertised and pulled.
            let key = try a.store.put(note("save \(i)", "")).key
            for _ in 0..<3 { fleet.tick(ms: 10) }
            try a.store.put(note("save \(i)", "body \(i)"), key: key)
            for _ in 0..<3 { fleet.tick(ms: 10) }
            try a.store.put(note("saved \(i)", "body \(i)"), key: key)
            let ticks = try ticksUntilHeld(fleet, key, on: b, ms: 10, limit: 3000, title: "saved \(i)")
            arrivals.append(ticks ?? -1)
            // A second or so between saves, the fleet running meanwhile.
            for _ in 0..<10 { fleet.tick(ms: 100) }
        }
        XCTAssertFalse(arrivals.contains(-1), "a save never arrived: \(arrivals)")
        // Ten ms a tick: every save arrives within 100 ms of simulated time.
        XCTAssertLessThanOrEqual(arrivals.max() ?? .max, 10, "ticks of 10 ms per save: \(arrivals)")
        XCTAssertEqual(fleet.engines.map { $0.status().siblings.first?.storms ?? -1 }, [0, 0])
    }

    /// The first change after a quiet spell goes out at once; changes that
    /// follow it closely fold into one trailing advertisement.
    func testLeadingEdgeAdvertisesAtOnceAndABurstFoldsIntoOne() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let a = fleet.devices[0]
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        for _ in 0..<10 { fleet.tick(ms: 100) }
        let before = fleet.engines[0].metricsSnapshot().digestsSent
        try a.store.put(note("first", "at once"))
        fleet.engines[0].step()
        XCTAssertEqual(fleet.engines[0].metricsSnapshot().digestsSent, before + 1, "the leading edge goes in the same step")
        // A burst right behind it: no advertisement until it pauses.
        for i in 0..<20 {
            try a.store.put(note("burst \(i)", "b"))
            fleet.engines[0].step()
            fleet.clock.advance(ms: 10)
        }
        XCTAssertEqual(fleet.engines[0].metricsSnapshot().digestsSent, before + 1)
        fleet.clock.advance(ms: SyncConfiguration().debounceMilliseconds)
        fleet.engines[0].step()
        XCTAssertEqual(fleet.engines[0].metricsSnapshot().digestsSent, before + 2, "one trailing advertisement for the burst")
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
    }
}

/// A catch-up says how far along it is.
final class CatchUpProgressTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func testACatchUpCountsWhatCameInAndWhatRemains() throws {
        var config = SyncConfiguration()
        config.maxResponseRowBytes = 64 << 10   // small responses, none sent ahead: a catch-up of many rounds
        config.maxStreamedRowBytes = 0
        let fleet = try SimFleet(["a", "b"], base: base, configuration: config)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try a.store.putMany((0..<1500).map { note("n\($0)", String(repeating: "words ", count: 200)) })
        try fleet.attachAll()
        var seen: [SyncStatus.CatchUp] = []
        for _ in 0..<2000 {
            fleet.tick(ms: 50)
            if let c = fleet.engines[1].catchUp() { seen.append(c) }
            if try fleet.digestsEqual(), fleet.engines.allSatisfy({ $0.isConverged() }) { break }
        }
        XCTAssertTrue(try fleet.digestsEqual())
        XCTAssertGreaterThan(seen.count, 3, "the catch-up was seen in progress")
        let remaining = seen.compactMap(\.rowsRemaining)
        XCTAssertFalse(remaining.isEmpty, "the sibling's row count arrived with its digest")
        XCTAssertGreaterThan(remaining.first ?? 0, remaining.last ?? .max, "what remains goes down: \(remaining)")
        XCTAssertEqual(seen.map(\.rowsPulled), seen.map(\.rowsPulled).sorted(), "rows pulled only grow")
        XCTAssertGreaterThan(seen.last?.bytesPulled ?? 0, 1_500 * 1_000)
        XCTAssertTrue(seen.last?.words.contains("catching up: ") ?? false)
        // Converged: nothing to show, and the status says so too.
        fleet.tick(ms: 50)
        XCTAssertNil(fleet.engines[1].catchUp())
        XCTAssertNil(fleet.engines[1].status().catchUp)
        XCTAssertEqual(try b.store.counts(.notebook).live, 1500)
    }

    func testDigestMessagesCarryARowCountOlderOnesDoNot() throws {
        let withRows = DigestMessage(digest: [1, 2, 3], echo: [4], rows: 12_345)
        XCTAssertEqual(try DigestMessage.decode(withRows.encoded()), withRows)
        let older = DigestMessage(digest: [1, 2, 3], echo: [4])
        XCTAssertEqual(try DigestMessage.decode(older.encoded()).rows, nil)
    }

    /// An answer larger than one response streams its rows ahead in
    /// batches: the same catch-up takes a fraction of the rounds, every row
    /// arrives, and a batch never exceeds its budget.
    func testAnAnswerStreamsItsRowsAheadInBatches() throws {
        func catchUp(streaming: Bool) throws -> (rounds: Int, streamed: Int, responses: Int) {
            let dir = base + (streaming ? "/streamed" : "/plain")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var config = SyncConfiguration()
            config.maxResponseRowBytes = 64 << 10
            config.streamBatchRowBytes = 16 << 10
            config.maxStreamedRowBytes = streaming ? 1 << 20 : 0
            let fleet = try SimFleet(["a", "b"], base: dir, configuration: config)
            try fleet.devices[0].store.putMany((0..<600).map { note("n\($0)", String(repeating: "words ", count: 200)) })
            try fleet.attachAll()
            XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
            XCTAssertEqual(try fleet.devices[1].store.counts(.notebook).live, 600)
            let served = fleet.engines[0].metricsSnapshot()
            return (fleet.engines[1].metricsSnapshot().rounds, served.rowsStreamed, served.responsesSent)
        }
        let plain = try catchUp(streaming: false)
        let streamed = try catchUp(streaming: true)
        XCTAssertEqual(plain.streamed, 0)
        XCTAssertGreaterThan(streamed.streamed, 500, "most rows went ahead of their response")
        // 600 rows of ~1.2 KB: about 12 responses of 64 KiB, or 46 batches of 16 KiB.
        XCTAssertGreaterThan(streamed.responses, plain.responses, "batches are smaller than responses")
        XCTAssertLessThan(streamed.rounds * 4, plain.rounds, "rounds: \(streamed.rounds) streamed, \(plain.rounds) not")
    }
}
