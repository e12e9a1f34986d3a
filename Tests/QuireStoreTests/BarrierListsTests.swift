import XCTest
import QuireCore
@testable import QuireStore

/// The barrier's lists kept across restarts (`BarrierLists`): the leader's
/// last lists, and the round a follower still asks for.
final class BarrierListsTests: XCTestCase {
    func nonce(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 16) }

    func testTheLeaderKeepsItsNewestListsAndTheyOutliveTheProcess() throws {
        let dir = temporaryDirectory()
        do {
            let s = try makeStore(dir)
            for n in UInt8(1)...6 { try s.keepSentList(nonce: nonce(n), list: [n, n, n], keep: 4) }
            XCTAssertNil(try s.sentList(nonce: nonce(2)), "the oldest go")
            try s.keepSentList(nonce: nonce(3), list: [3, 3, 3, 3], keep: 4)   // sent again: newest now
            try s.keepSentList(nonce: nonce(7), list: [7], keep: 4)
        }
        let s = try makeStore(dir)
        XCTAssertEqual(try s.sentList(nonce: nonce(3)), [3, 3, 3, 3])
        XCTAssertNil(try s.sentList(nonce: nonce(4)), "the oldest of those kept went when a seventh came")
        XCTAssertEqual(try (5...7).map { try s.sentList(nonce: nonce(UInt8($0))) }, [[5, 5, 5], [6, 6, 6], [7]])
        XCTAssertNil(try s.sentList(nonce: nonce(9)))
        XCTAssertEqual(try s.roots(), try s.recomputedRoots(), "never in a leaf")
    }

    func testTheRoundAskedForIsKeptUntilCleared() throws {
        let dir = temporaryDirectory()
        let awaited = AwaitedList(nonce: nonce(5), leader: deviceB, generation: 3, previousSince: 1)
        do {
            let s = try makeStore(dir)
            XCTAssertNil(try s.awaitedList())
            try s.setAwaitedList(awaited)
            try s.setAwaitedList(AwaitedList(nonce: nonce(6), leader: deviceB, generation: 4, previousSince: nil))
        }
        let s = try makeStore(dir)
        XCTAssertEqual(try s.awaitedList(), AwaitedList(nonce: nonce(6), leader: deviceB, generation: 4, previousSince: nil))
        try s.setAwaitedList(awaited)
        XCTAssertEqual(try s.awaitedList(), awaited)
        try s.setAwaitedList(nil)
        XCTAssertNil(try s.awaitedList())
    }

    /// A replica from before the table gets it at its first open, with its rows as they were.
    func testAReplicaFromBeforeTheTableUpgradesInPlace() throws {
        let dir = temporaryDirectory()
        let kept: Row
        do {
            let s = try makeStore(dir)
            kept = try s.put(.note(Note(title: "before", body: Array("words\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        }
        do {
            let c = try Connection(path: dir + "/replica.sqlite")
            try c.execute("DROP TABLE barrier_lists; PRAGMA user_version=\(Schema.all.count - 1)")
        }
        let s = try makeStore(dir)
        XCTAssertEqual(try Connection(path: dir + "/replica.sqlite").queryOne("PRAGMA user_version") { $0.int(0) }, Int64(Schema.all.count))
        XCTAssertEqual(try s.row(.notebook, kept.key), kept)
        XCTAssertNil(try s.sentList(nonce: nonce(1)), "no list of a round led before the upgrade")
        try s.keepSentList(nonce: nonce(1), list: [1], keep: 4)
        XCTAssertEqual(try s.sentList(nonce: nonce(1)), [1])
    }
}
