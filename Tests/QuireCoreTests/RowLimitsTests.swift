import XCTest
import QuireCore
import QuireTestSupport

/// The one size limit: the wire estimate is an upper bound of the real
/// encoding (a sender that trusts it never makes a message a receiver
/// refuses), not a loose one, and `check` applies the documented rule.
final class RowLimitsTests: XCTestCase {
    let key = RowKey(bytes: [UInt8](repeating: 0x42, count: 16))!

    /// The encoding `RowWire` sends: [key, context, heads].
    func wire(_ row: Row) -> Int {
        CBORWriter.encode(.array([.bytes(row.key.bytes), row.context.cbor, row.headsCBOR])).count
    }

    func content(_ ns: Namespace, _ r: inout SplitMix64, size: Int) -> RowContent {
        func n(_ k: Int) -> Int { Int(r.next() % UInt64(k)) }
        func text(_ count: Int) -> String { String(repeating: "é", count: count / 2) }
        let t = Timestamp(seconds: Int64(bitPattern: r.next() >> 1))
        let editor = DeviceID(bytes: (0..<16).map { _ in UInt8(truncatingIfNeeded: r.next()) })!
        switch ns {
        case .notebook:
            return .note(Note(title: text(n(300)), tags: (0..<n(40)).map { "tag\($0)" }, body: [UInt8](repeating: 0x61, count: size),
                              createdAt: t, updatedAt: t, deletedParagraphs: (0..<n(200)).map { [UInt8](repeating: UInt8($0 % 256), count: 32) + [UInt8($0 / 256)] },
                              editedBy: editor))
        case .saga:
            return .saga(SagaEntry(date: "2026-02-03", text: [UInt8](repeating: 0x62, count: size), updatedAt: t,
                                   deletedParagraphs: (0..<n(50)).map { [UInt8](repeating: UInt8($0), count: 32) }, editedBy: editor))
        case .plans:
            return .plan(Plan(title: text(n(100)), notes: text(size), due: t, isDone: true, createdAt: t, updatedAt: t, editedBy: editor))
        case .contacts:
            return .contact(Contact(name: text(n(80)), emails: (0..<n(30)).map { "e\($0)@example.org" },
                                    phones: (0..<n(30)).map { "+33 \($0)" }, note: text(size), updatedAt: t, editedBy: editor))
        case .settings:
            return .setting(Setting(name: text(n(255)), value: text(size), updatedAt: t, editedBy: editor))
        case .memory:
            return .memory(MemoryEvent(at: t, kind: text(n(40)), text: text(size),
                                       buries: (0..<n(20)).map { _ in RowKey(bytes: (0..<16).map { _ in UInt8(truncatingIfNeeded: r.next()) })! }))
        case .devices:
            return .device(DeviceRecord(name: text(n(40)), certificate: [UInt8](repeating: 1, count: size), revocation: n(2) == 0 ? [2, 3] : nil))
        }
    }

    /// A row of `heads` concurrent versions under a context with a few
    /// more actors, counters and incarnations as large as they go.
    func row(_ ns: Namespace, heads: Int, _ r: inout SplitMix64, size: Int, random: Bool = false) -> Row {
        var context = VersionVector()
        var list: [RowHead] = []
        for i in 0..<heads + Int(r.next() % 4) {
            let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: UInt8(i + 1), count: 16))!, incarnation: r.next())
            let dot = Dot(actor: actor, counter: (r.next() >> 17) | 1)
            let bytes = random ? Int(r.next() % UInt64(size + 1)) : size
            let head = RowHead(dot: dot, content: content(ns, &r, size: bytes))
            context = context.adding(dot, tag: head.tag)
            if i < heads { list.append(head) }
        }
        return Row(namespace: ns, key: key, context: context, heads: list)
    }

    func testTheWireEstimateBoundsTheEncodingAndIsNotLoose() {
        var r = SplitMix64(seed: 0x5eed)
        for round in 0..<400 {
            let ns = Namespace.allCases[Int(r.next() % UInt64(Namespace.allCases.count))]
            let heads = Int(r.next() % 5)
            let row = self.row(ns, heads: heads, &r, size: 70_000, random: true)
            let actual = wire(row), estimate = RowLimits.wireBytes(of: row)
            XCTAssertGreaterThanOrEqual(estimate, actual, "round \(round): \(ns) with \(heads) heads")
            // Headers are generously counted, never bodies twice.
            XCTAssertLessThan(estimate, actual + 64 + 3_000 * heads, "round \(round): \(ns) with \(heads) heads")
        }
    }

    func testEachVersionIsLimitedAndSoIsTheWholeRow() {
        var r = SplitMix64(seed: 7)
        let limit = RowLimits.maxBodyBytes
        XCTAssertNil(RowLimits.check(row(.notebook, heads: 1, &r, size: limit)), "a version at the limit travels")
        XCTAssertNil(RowLimits.check(row(.notebook, heads: 3, &r, size: limit)), "three concurrent versions at the limit travel")
        XCTAssertEqual(RowLimits.check(row(.saga, heads: 1, &r, size: limit + 1)), .bodyTooLarge(bytes: limit + 1))
        // Only a text counts for the limit: a pointer (offloaded body) travels without it.
        var pointer = Note(title: "offloaded", body: [UInt8](repeating: 1, count: 10), createdAt: .init(seconds: 0), updatedAt: .init(seconds: 0))
        pointer.body = nil
        pointer.length = 100 << 20
        XCTAssertEqual(RowLimits.bodyBytes(of: .note(pointer)), 0)
        // Five versions near the limit are each allowed, but no message carries them together.
        let five = row(.notebook, heads: 5, &r, size: limit - 1000)
        guard case .rowTooLarge(let bytes, let heads)? = RowLimits.check(five) else { return XCTFail("five large versions travel?") }
        XCTAssertEqual(heads, 5)
        XCTAssertGreaterThan(bytes, RowLimits.maxRowWireBytes)
        XCTAssertTrue("\(RowLimits.Violation.bodyTooLarge(bytes: limit + 1))".contains("16.1 MiB, over the 16 MiB limit"))
        XCTAssertLessThanOrEqual(RowLimits.maxRowWireBytes + 1024, RowLimits.maxMessageBytes, "a row at the wire limit fits a message with its framing")
    }

    func testSizesReadAsSizes() {
        XCTAssertEqual(RowLimits.describe(16 << 20), "16 MiB")
        XCTAssertEqual(RowLimits.describe((16 << 20) + 1), "16.1 MiB")
        XCTAssertEqual(RowLimits.describe(3 << 19), "1.5 MiB")
        XCTAssertEqual(RowLimits.describe(2048), "2 KiB")
        XCTAssertEqual(RowLimits.describe(100), "100 bytes")
    }
}
