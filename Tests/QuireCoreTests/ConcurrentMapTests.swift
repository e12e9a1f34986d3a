import XCTest
@testable import QuireCore

final class ConcurrentMapTests: XCTestCase {
    /// Whatever the chunking, the result is `map`'s: every element once, in order.
    func testResultsKeepTheElementsOrderForAnyCount() {
        for count in [0, 1, 7, 15, 16, 17, 31, 32, 33, 100, 257, 1000] {
            let items = (0..<count).map { UInt64($0) &* 0x9E37_79B9_7F4A_7C15 }
            let expected = items.map { $0.byteSwapped ^ 0x5555 }
            XCTAssertEqual(items.concurrentMap(minimumChunk: 8) { $0.byteSwapped ^ 0x5555 }, expected, "count \(count)")
            XCTAssertEqual(items.concurrentMap { $0.byteSwapped ^ 0x5555 }, expected, "count \(count), default chunks")
        }
    }

    /// Elements that take uneven time still land in their own places.
    func testUnevenWorkKeepsOrder() {
        let items = Array(0..<200)
        let out = items.concurrentMap(minimumChunk: 4) { n -> [Int] in
            // Early chunks work longer, so later chunks finish first.
            var acc = n
            for i in 0..<((200 - n) * 200) { acc = (acc &* 31 &+ i) & 0xFFFF }
            return [n, acc & 1]
        }
        XCTAssertEqual(out.map { $0[0] }, items)
    }
}
