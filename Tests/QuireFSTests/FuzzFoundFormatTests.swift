import Foundation
import QuireCore
@testable import QuireFS
import XCTest

/// Inputs the fuzz targets (tools/fuzz: vcard, mount-text) broke, kept as
/// tests: what the mount renders must read back as the same row.
final class FuzzFoundFormatTests: XCTestCase {
    let zero = Timestamp(seconds: 0)

    /// The property the vcard target checks: an accepted card is kept
    /// byte for byte (a UID added), and reads back as itself.
    private func assertCardSettles(title: String, card: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        let contact = try VCard.parse(card, title: title, key: nil, previous: nil)
        let again = try VCard.parse(contact.bytes, title: title, key: nil, previous: contact)
        XCTAssertEqual(again, contact, file: file, line: line)
    }

    func testACardWhoseValueStartsWithACombiningMarkReadsBack() throws {
        // fuzz vcard: ":" + U+0EB8 is one Character, so the colon was not
        // found and the rendered card was refused ("has a M0\NFN property").
        let contact = Contact(name: "\u{EB8}INRD", emails: ["\u{301}a@b.c"], note: "\u{301}", uid: "1", updatedAt: zero)
        let read = try VCard.parse(contact.bytes, title: "x", key: nil, previous: nil)
        XCTAssertEqual(read.bytes, contact.bytes)
        XCTAssertEqual(read.name, contact.name)
        XCTAssertEqual(read.emails, contact.emails)
        try assertCardSettles(title: "\u{EB8}INRD\r\nVESequenc.m0\r\nFN:\0:", card: [])
    }

    func testEscapesAreScalarsNotCharacters() throws {
        // fuzz vcard: a comma or backslash with a combining mark was one
        // Character and went unescaped; U+037E (Greek question mark) is
        // canonically equal to ";" as a Character and came back as ";".
        let contact = Contact(name: "a,\u{301}b;\u{301}c\\\u{301}d \u{37E} e", phones: ["1\\;\u{37E}"], uid: "1", updatedAt: zero)
        let read = try VCard.parse(contact.bytes, title: "x", key: nil, previous: nil)
        XCTAssertTrue(read.name.unicodeScalars.elementsEqual(contact.name.unicodeScalars))
        XCTAssertTrue(read.phones[0].unicodeScalars.elementsEqual(contact.phones[0].unicodeScalars))
        let n = try VCard.parse(Array("BEGIN:VCARD\r\nVERSION:4.0\r\nN:Love\\;\u{301}lace;Ada\r\nEND:VCARD\r\n".utf8), title: "x", key: nil, previous: nil)
        XCTAssertEqual(n.name, "Ada Love;\u{301}lace")
    }

    func testLoneCarriageReturnsDoNotShiftAtEveryRender() throws {
        // fuzz vcard: a run of CRs across a fold lost one CR per round, so
        // the file never settled. vCard cannot carry a CR: it is dropped.
        let name = "zUUUUUUbVCARD\r\nVERSIONE" + String(repeating: "\r", count: 70) + "\nEL"
        let rendered = Contact(name: name, uid: "1", updatedAt: zero).bytes
        let lineEnds = zip(rendered, rendered.dropFirst()).filter { $0 == (13, 10) }.count
        XCTAssertEqual(rendered.filter { $0 == 13 }.count, lineEnds, "every CR left is a line end's")
        XCTAssertEqual(try VCard.parse(rendered, title: "x", key: nil, previous: nil).name, "zUUUUUUbVCARD\nVERSIONE\nEL")
        try assertCardSettles(title: name, card: [])
    }

    func testATitleEndingInAPrependMarkKeepsItInTheFileName() {
        // fuzz mount-text: U+06DD joins the extension's dot into one
        // Character, and dropLast(3) cut it off the title.
        for title in ["\u{19}%\u{6DD}", "Note \u{6DD}", "\u{600}"] {
            let name = FileNames.escape(title) + ".md"
            XCTAssertEqual(FileNames.meaning(of: name, in: .notebook), .row(title: title), "\(Array(title.unicodeScalars))")
        }
        XCTAssertEqual(FileNames.meaning(of: "x.md", in: .contacts), .localOnly)
        XCTAssertEqual(FileNames.meaning(of: ".md", in: .saga), .junk)
    }

    func testAMemoryEventReadsCRLFAndNeverParsesToAnotherEvent() throws {
        // fuzz mount-text: lines were split on the Character "\n", which a
        // CRLF is not, so a CRLF stayed inside the kind and the rendered
        // event parsed back as a different one.
        let crash = Array("at: 2023-11-14T22:13:20Z\nkind: imSe\u{01}\u{04}Crlfdone: yes\r\ndue:\r\ndue: none\r\n\r\n\nababab\n\nImported 1 notes.\n".utf8)
        if let event = MemoryText.parse(crash) { XCTAssertEqual(MemoryText.parse(MemoryText.render(event)), event) }
        let crlf = MemoryText.parse(Array("at: 2023-11-14T22:13:20Z\r\nkind: import\r\n\r\nImported.\r\n".utf8))
        XCTAssertEqual(crlf, MemoryEvent(at: Timestamp(seconds: 1_700_000_000), kind: "import", text: "Imported.\r\n"))
        XCTAssertNil(MemoryText.parse(Array("at: 2023-11-14T22:13:20Z\nkind: x\n".utf8)), "no blank line before the text")
    }

    func testACardNameOfOnlyCarriageReturnsIsNoName() throws {
        // fuzz vcard: "N:\r" gave the name "\r", which rendered as an empty
        // FN and read back as the file's title. A CR is dropped on reading too.
        let card = Array("BEGIN:VCARD\r\nVERSION:4.0\r\nN:\r\r\nNOTE:a\rb\r\nEND:VCARD\r\n".utf8)
        let contact = try VCard.parse(card, title: "Lady", key: nil, previous: nil)
        XCTAssertEqual(contact.name, "Lady")
        XCTAssertEqual(contact.note, "ab")
        try assertCardSettles(title: "Lady", card: card)
    }

    func testTrimmingASpaceBeforeACombiningMarkKeepsTheMark() {
        // fuzz mount-text: "kind:\u{301}a" parsed to "\u{301}a", rendered as
        // "kind: \u{301}a", where " \u{301}" is one Character that the
        // Character-wise trim kept, so it read back with a space more.
        XCTAssertEqual(" \u{301}a\t".trimmingSpaces, "\u{301}a")
        let event = MemoryEvent(at: Timestamp(seconds: 1_700_000_000), kind: "\u{301}a\u{FFFD}t", text: "Impo",
                                buries: [RowKey(bytes: [UInt8](repeating: 0xAB, count: 16))!])
        XCTAssertEqual(MemoryText.parse(MemoryText.render(event)), event)
        var plan = Plan(title: "p", createdAt: zero, updatedAt: zero)
        plan.notes = "\u{301}notes"
        XCTAssertEqual(try ICalendar.parse(plan.bytes, title: "p", key: nil, previous: plan), plan)
    }
}
