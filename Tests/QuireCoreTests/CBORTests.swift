import XCTest
import QuireCore

/// Known-answer vectors from RFC 8949 Appendix A (the subset we support),
/// and refusals of everything the deterministic encoding never produces.
final class CBORTests: XCTestCase {
    let vectors: [(CBOR, String)] = [
        (.unsigned(0), "00"), (.unsigned(1), "01"), (.unsigned(10), "0a"), (.unsigned(23), "17"),
        (.unsigned(24), "1818"), (.unsigned(25), "1819"), (.unsigned(100), "1864"), (.unsigned(1000), "1903e8"),
        (.unsigned(1_000_000), "1a000f4240"), (.unsigned(1_000_000_000_000), "1b000000e8d4a51000"),
        (.unsigned(UInt64.max), "1bffffffffffffffff"), (.negative(0), "20"), (.negative(9), "29"), (.negative(99), "3863"),
        (.negative(999), "3903e7"), (.bool(false), "f4"), (.bool(true), "f5"), (.null, "f6"),
        (.bytes([]), "40"), (.bytes([1, 2, 3, 4]), "4401020304"), (.text(""), "60"), (.text("a"), "6161"),
        (.text("IETF"), "6449455446"), (.text("\u{00fc}"), "62c3bc"), (.text("\u{6c34}"), "63e6b0b4"),
        (.array([]), "80"), (.array([.unsigned(1), .unsigned(2), .unsigned(3)]), "83010203"),
        (.array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]), "8301820203820405"),
        (.map([]), "a0"), (.map([(.unsigned(1), .unsigned(2)), (.unsigned(3), .unsigned(4))]), "a201020304"),
        (.map([(.text("a"), .unsigned(1)), (.text("b"), .array([.unsigned(2), .unsigned(3)]))]), "a26161016162820203"),
    ]

    func testRFC8949Vectors() throws {
        for (value, hex) in vectors {
            XCTAssertEqual(Hex.encode(CBORWriter.encode(value)), hex, "encode \(value)")
            XCTAssertEqual(try CBORReader.decode(Hex.decode(hex)!), value, "decode \(hex)")
        }
        var long = [CBOR]()
        for i in 1...25 { long.append(.unsigned(UInt64(i))) }
        XCTAssertEqual(Hex.encode(CBORWriter.encode(.array(long))), "98190102030405060708090a0b0c0d0e0f101112131415161718181819")
    }

    func testMapKeysAreSortedByEncodedBytes() {
        let m = CBOR.map([(.text("b"), .unsigned(1)), (.unsigned(10), .unsigned(2)), (.text("a"), .unsigned(3)), (.unsigned(100), .unsigned(4))])
        XCTAssertEqual(Hex.encode(CBORWriter.encode(m)), "a40a021864046161036162" + "01")
    }

    func testRefusesWhatDeterministicEncodingNeverProduces() {
        let bad: [(String, String)] = [
            ("1817", "non-shortest one-byte argument"), ("190017", "non-shortest two-byte argument"),
            ("5f4101ff", "indefinite-length bytes"), ("f93c00", "half float"), ("c11a514b67b0", "tag"),
            ("a2616201616102", "unsorted map keys"), ("a2616101616102", "duplicate map keys"),
            ("62c3", "truncated text"), ("62fffe", "invalid UTF-8"), ("0001", "trailing bytes"),
            ("9bffffffffffffffff", "absurd array length"), ("", "empty input"),
        ]
        for (hex, why) in bad {
            XCTAssertThrowsError(try CBORReader.decode(Hex.decode(hex)!), why)
        }
    }

    /// Paragraph tombstones have one form (each hash once, in byte order),
    /// however they were given, and the form survives a round trip.
    func testParagraphTombstonesHaveOneForm() throws {
        let given: [[UInt8]] = [[3], [1, 2], [1], [3], [1, 2, 0]]
        let canonical: [[UInt8]] = [[1], [1, 2], [1, 2, 0], [3]]
        let note = Note(title: "n", body: Array("x".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1),
                        deletedParagraphs: given)
        XCTAssertEqual(note.deletedParagraphs, canonical)
        XCTAssertEqual(SagaEntry(date: "2026-01-01", text: [], updatedAt: Timestamp(seconds: 1), deletedParagraphs: given).deletedParagraphs, canonical)
        XCTAssertEqual(Note(title: "n", body: [], createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1),
                            deletedParagraphs: canonical).deletedParagraphs, canonical)
        guard case .note(let decoded) = try RowContent.decode(.notebook, fields: CBORReader.decode(CBORWriter.encode(RowContent.note(note).fields()))) else {
            return XCTFail("not a note")
        }
        XCTAssertEqual(decoded.deletedParagraphs, canonical)
    }

    func testDepthLimit() {
        let deep = [UInt8](repeating: 0x81, count: 100) + [0x00]
        XCTAssertThrowsError(try CBORReader.decode(deep)) { XCTAssertEqual($0 as? CBORError, .tooDeep) }
    }

    func testRowContentRoundTripsAndSkipsUnknownFields() throws {
        let dev = DeviceID(bytes: [UInt8](repeating: 9, count: 16))!
        let contents: [RowContent] = [
            .note(Note(title: "t", tags: ["x"], body: [0, 1, 255], createdAt: Timestamp(seconds: -5), updatedAt: Timestamp(seconds: 7), editedBy: dev)),
            .plan(Plan(title: "p", notes: "n", due: Timestamp(seconds: 9), isDone: true, createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 2))),
            .contact(Contact(name: "c", emails: ["e"], phones: ["p"], note: nil, updatedAt: Timestamp(seconds: 3))),
            .saga(SagaEntry(date: "2026-02-28", text: Array("x".utf8), updatedAt: Timestamp(seconds: 3), deletedParagraphs: [[1]])),
            .setting(Setting(name: "k", value: "v", updatedAt: Timestamp(seconds: 4))),
            .memory(MemoryEvent(at: Timestamp(seconds: 4), kind: "k", text: "t", buries: [dev])),
        ]
        for c in contents {
            let encoded = CBORWriter.encode(c.fields())
            XCTAssertEqual(try RowContent.decode(c.namespace, fields: CBORReader.decode(encoded)), c)
            // A newer sibling's extra field (key 99) is skipped, not an error.
            guard case .map(var pairs) = c.fields() else { return XCTFail() }
            pairs.append((.unsigned(99), .text("from the future")))
            XCTAssertEqual(try RowContent.decode(c.namespace, fields: CBORReader.decode(CBORWriter.encode(.map(pairs)))), c)
        }
    }

    func testNoteWhoseBodyDoesNotMatchItsHashIsRefused() throws {
        let n = Note(title: "t", body: Array("real".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))
        guard case .map(var pairs) = RowContent.note(n).fields() else { return XCTFail() }
        pairs = pairs.map { $0.0 == .unsigned(3) ? ($0.0, .bytes(Array("forged".utf8))) : $0 }
        XCTAssertThrowsError(try RowContent.decode(.notebook, fields: .map(pairs)))
    }

    /// `encodedSize` is the length of the encoding, at every head width
    /// (1, 2, 3, 5 and 9 bytes), for nested values and unsorted maps.
    func testEncodedSizeIsTheEncodingsLength() {
        let widths: [UInt64] = [0, 23, 24, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, .max]
        var values: [CBOR] = widths.flatMap { [CBOR.unsigned($0), .negative($0)] }
        values += [.bytes([]), .bytes([UInt8](repeating: 7, count: 24)), .bytes([UInt8](repeating: 1, count: 300)),
                   .bytes([UInt8](repeating: 2, count: 70_000)), .text(""), .text("é, 日本"), .text(String(repeating: "x", count: 256)),
                   .bool(true), .bool(false), .null]
        values.append(.array(values))
        values.append(.map([(.text("b"), .unsigned(1)), (.unsigned(300), .array([.null, .bytes([1])])), (.text("a"), .map([]))]))
        values.append(.array([CBOR](repeating: .unsigned(1), count: 30)))
        for value in values {
            XCTAssertEqual(CBORWriter.encodedSize(of: value), CBORWriter.encode(value).count, "\(value)")
        }
    }
}

final class StoredFieldsTests: XCTestCase {
    func testStreamedNoteFieldsEqualTheTreeEncoding() {
        let dev = DeviceID(bytes: [UInt8](repeating: 4, count: 16))!
        var notes = [
            Note(title: "t", tags: ["b", "a"], body: Array("body".utf8), createdAt: Timestamp(seconds: -3), updatedAt: Timestamp(seconds: 70_000),
                 deletedParagraphs: [[1, 2], [3]], editedBy: dev),
            Note(title: "", body: [], createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)),
        ]
        var offloaded = notes[0]
        offloaded.body = nil
        offloaded.length = 123_456
        notes.append(offloaded)
        for n in notes {
            XCTAssertEqual(n.storedFields(), CBORWriter.encode(RowContent.note(n).fields(includeBody: false)))
            XCTAssertEqual(VersionVector([Actor(device: dev, incarnation: 2): 3, Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 0): 9]).encoded(),
                           CBORWriter.encode(VersionVector([Actor(device: dev, incarnation: 2): 3, Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 0): 9]).cbor))
        }
    }
}
