import Foundation
import QuireCore
import XCTest
@testable import QuireStore

/// The store tells who waits for commits: its own, and (through the watch
/// on the WAL) those made through another connection to the same file, as
/// another process would.
final class CommitObserverTests: XCTestCase {
    final class Counter: @unchecked Sendable {
        private let condition = NSCondition()
        private var value = 0
        func bump() { condition.lock(); value += 1; condition.broadcast(); condition.unlock() }
        var count: Int { condition.lock(); defer { condition.unlock() }; return value }
        /// Waits until the count reaches `target`; false on timeout.
        func wait(for target: Int, seconds: Double) -> Bool {
            condition.lock(); defer { condition.unlock() }
            let deadline = Date(timeIntervalSinceNow: seconds)
            while value < target { if !condition.wait(until: deadline) { return value >= target } }
            return true
        }
    }

    func testOwnCommitsAreToldOnceEachAndACancelledObserverHearsNothing() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try makeStore(dir)
        let counter = Counter()
        let observation = try store.observeCommits { counter.bump() }
        try store.put(note("one", "body"))
        try store.put(note("two", "body"))
        XCTAssertEqual(counter.count, 2)
        // A refused write commits nothing and tells nobody.
        XCTAssertThrowsError(try store.delete(.notebook, RowKey(bytes: [UInt8](repeating: 7, count: 16))!))
        XCTAssertEqual(counter.count, 2)
        observation.cancel()
        try store.put(note("three", "body"))
        XCTAssertEqual(counter.count, 2)
    }

    func testAnotherConnectionsCommitWakesAWatchingObserverOnly() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try makeStore(dir)
        let other = try ReplicaStore(path: dir + "/replica.sqlite", deviceID: deviceA, clock: ManualClock(), random: SeededRandom(seed: 9))
        let watching = Counter(), local = Counter()
        let w = try store.observeCommits(otherProcesses: true) { watching.bump() }
        let l = try store.observeCommits { local.bump() }
        try other.put(note("from elsewhere", "body"))
        XCTAssertTrue(watching.wait(for: 1, seconds: 5), "the watch did not report the other connection's commit")
        XCTAssertEqual(local.count, 0, "an observer without the watch hears only this store's commits")
        w.cancel()
        l.cancel()
        let after = watching.count
        try other.put(note("after the cancel", "body"))
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(watching.count, after)
    }

    func testABurstOfWritesIsToldOnceItPauses() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wal = dir + "/replica.sqlite-wal"
        XCTAssertTrue(FileManager.default.createFile(atPath: wal, contents: Data()))
        let told = Counter()
        let watch = try DirectoryWatch(directory: dir, names: ["replica.sqlite-wal"]) { told.bump() }
        defer { watch.stop() }
        // As one commit writes its frames: many small writes, a little
        // apart (each one alone would wake the watching thread).
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: wal))
        for i in 0..<40 {
            handle.write(Data([UInt8(i)]))
            usleep(150)
        }
        XCTAssertTrue(told.wait(for: 1, seconds: 5), "the writes were not reported")
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertLessThanOrEqual(told.count, 10, "each write woke the observers (40 writes)")
        // A later write, after the pause, is told again: nothing is missed.
        let before = told.count
        handle.write(Data([1]))
        try handle.close()
        XCTAssertTrue(told.wait(for: before + 1, seconds: 5), "a write after the pause was not reported")
        // Another file in the directory is not watched.
        Thread.sleep(forTimeInterval: 0.05)
        let settled = told.count
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/other", contents: Data([1, 2, 3])))
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(told.count, settled)
    }

    func testInotifyRecordsAreSplitIntoNames() {
        // Two records as the kernel lays them out: wd, mask, cookie, len, name padded with NULs.
        func record(_ name: String, padTo: Int) -> [UInt8] {
            var bytes: [UInt8] = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, UInt8(padTo), 0, 0, 0]
            bytes += Array(name.utf8) + [UInt8](repeating: 0, count: padTo - name.utf8.count)
            return bytes
        }
        let batch = record("replica.sqlite-wal", padTo: 32) + record("x", padTo: 16)
        XCTAssertEqual(DirectoryWatch.names(in: batch[...]).map { String(decoding: $0, as: UTF8.self) }, ["replica.sqlite-wal", "x"])
        // A truncated record yields what is there and stops.
        XCTAssertEqual(DirectoryWatch.names(in: batch[..<40]).map { String(decoding: $0, as: UTF8.self) }, ["replica.sqlite-wal"])
        XCTAssertEqual(DirectoryWatch.names(in: batch[..<10]).count, 0)
    }
}

/// A running mount reads changes by number: a row a barrier collects (and
/// deletes outright) must still reach it, as a tombstone.
final class CollectedChangesTests: XCTestCase {
    func testACollectedRowReachesAChangeReaderThatMissedItsTombstone() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try makeStore(dir)
        let plan = try store.put(.plan(Plan(title: "Gone soon", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        let kept = try store.put(note("kept", "body"))
        let seen = try store.changeSequence()   // a mount's feed read up to here
        try store.delete(.plans, plan.key)
        XCTAssertEqual(try store.dropTombstonesForBarrier(), 1)
        XCTAssertNil(try store.row(.plans, plan.key), "collected: the row is gone")
        let changes = try store.changes(since: seen)
        XCTAssertEqual(changes.filter { $0.key == plan.key }.map(\.isTombstone).last, true, "\(changes)")
        XCTAssertFalse(changes.contains { $0.key == kept.key })
        XCTAssertEqual(changes.map(\.seq), changes.map(\.seq).sorted())
        // Written again after the collection: the newer live row comes last.
        try store.put(.plan(Plan(title: "Gone soon", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))), key: plan.key)
        XCTAssertEqual(try store.changes(since: seen).filter { $0.key == plan.key }.last?.isTombstone, false)
    }
}
