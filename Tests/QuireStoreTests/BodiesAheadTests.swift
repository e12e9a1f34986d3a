import Dispatch
import XCTest
import QuireCore
@testable import QuireStore

/// A batch write's bodies are deflated on other cores while it runs: what
/// the writer gets is exactly what it would have deflated itself, in any
/// order it asks, and it finishes even when no other thread helps.
final class BodiesAheadTests: XCTestCase {
    /// Prose that deflates, bytes that do not, bodies too short to try,
    /// and the same body under two titles.
    private func notes(_ count: Int) -> [Note] {
        let rng = SeededRandom(seed: 9)
        return (0..<count).map { i in
            let body: [UInt8]
            switch i % 4 {
            case 0: body = Array(String(repeating: "paragraph \(i) of prose that repeats itself\n\n", count: 1 + i % 9).utf8)
            case 1: body = rng.bytes(200 + i % 300)
            case 2: body = Array("short \(i)".utf8)
            default: body = Array(String(repeating: "the same body in two notes\n", count: 12).utf8)
            }
            return Note(title: "n\(i)", body: body, createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))
        }
    }

    func testEveryBodyComesOutAsTheWriterWouldHaveStoredItInAnyOrder() throws {
        let batch = notes(1_000)
        let orders = [Array(batch.indices), Array(batch.indices.reversed()), Array(batch.indices).shuffled(), Array(batch.indices)]
        for (round, order) in orders.enumerated() {
            let ahead = try XCTUnwrap(BodiesAhead.start(batch.map { .note($0) }))
            // Stopped (the batch ended early): what it is still asked, the writer deflates.
            if round == 3 { ahead.stop() }
            for i in order {
                let note = batch[i]
                let stored = ahead.stored(note.contentHash)
                if note.body!.count < 128 {
                    XCTAssertNil(stored, "a short body is stored as written, not looked up")
                    continue
                }
                let expected = StoredBody.encode(note.body!)
                XCTAssertEqual(stored?.format, expected.format, "note \(i)")
                XCTAssertEqual(stored?.bytes, expected.bytes, "note \(i)")
                XCTAssertEqual(StoredBody.decode(stored!.bytes, format: stored!.format), note.body)
            }
            XCTAssertNil(ahead.stored(Array(repeating: 7, count: 32)), "a body not in the batch")
        }
        XCTAssertNil(BodiesAhead.start(notes(40).map { .note($0) }), "a small batch deflates as it writes")
    }

    /// Every Dispatch thread blocked (say, on the store's lock): the writer
    /// deflates what nobody took, and the batch still finishes.
    func testTheWriterFinishesWhenNoOtherThreadHelps() throws {
        let release = DispatchSemaphore(value: 0)
        let blocked = DispatchGroup()
        for _ in 0..<(4 * ProcessInfo.processInfo.activeProcessorCount) {
            DispatchQueue.global(qos: .userInitiated).async(group: blocked) { release.wait() }
        }
        defer {
            for _ in 0..<(4 * ProcessInfo.processInfo.activeProcessorCount) { release.signal() }
            blocked.wait()
        }
        let batch = notes(600)
        let ahead = try XCTUnwrap(BodiesAhead.start(batch.map { .note($0) }))
        for note in batch where note.body!.count >= 128 {
            XCTAssertEqual(ahead.stored(note.contentHash)?.bytes, StoredBody.encode(note.body!).bytes)
        }
    }

    /// A bulk import and a sibling's batch store through it: every body
    /// reads back as written, and the prose ones are kept deflated.
    func testABulkImportAndABatchFromASiblingStoreEveryBodyIntact() throws {
        let batch = notes(500)
        let a = try makeStore(temporaryDirectory("bodies-ahead-a"))
        let rows = try a.putMany(batch.map { .note($0) })
        let b = try makeStore(temporaryDirectory("bodies-ahead-b"), device: deviceB)
        try b.apply(rows, from: deviceA)
        for store in [a, b] {
            for (row, note) in zip(rows, batch) {
                guard case .note(let stored)? = try store.row(.notebook, row.key)?.content else { return XCTFail("row \(note.title) missing") }
                XCTAssertEqual(stored.body, note.body, note.title)
            }
            let formats = try store.read { () throws(StoreError) -> [Int64] in
                try store.db.query("SELECT bodyFormat FROM rows WHERE ns = ? AND name LIKE 'n%'", [.int(Int64(Namespace.notebook.rawValue))]) { $0.int(0) }
            }
            let prose = batch.filter { StoredBody.encode($0.body!).format == StoredBody.deflated }.count
            XCTAssertGreaterThan(prose, 200)
            XCTAssertEqual(formats.filter { $0 == StoredBody.deflated }.count, prose, "the prose and the repeated bodies")
            XCTAssertEqual(try store.roots(), try store.recomputedRoots())
            XCTAssertEqual(try store.checkBodies(), 0)
        }
    }
}
