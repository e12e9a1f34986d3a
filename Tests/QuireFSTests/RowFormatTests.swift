import Foundation
import QuireCore
import QuireStore
@testable import QuireFS
import QuireTestSupport
import XCTest

final class RowFormatTests: XCTestCase {
    let zero = Timestamp(seconds: 0)

    func testEveryFormatRoundTrips() throws {
        var generator = SplitMix64(seed: 42)
        let alphabet = Array("ab ,;:\\\n\"é漢😀-=BEGIN")
        func text(_ maximum: Int) -> String {
            String((0..<Int.random(in: 0...maximum, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
        for round in 0..<500 {
            let plan = Plan(title: "P", notes: text(80), due: Bool.random(using: &generator) ? nil : Timestamp(seconds: Int64.random(in: 0...2_000_000_000, using: &generator)),
                            isDone: Bool.random(using: &generator), createdAt: zero, updatedAt: zero)
            XCTAssertEqual(try RowFormat.parse(.plans, title: "P", bytes: RowFormat.render(.plan(plan))!, previous: nil), .plan(plan), "seed 42 round \(round)")
            let name = text(30).replacingOccurrences(of: "\n", with: " ").trimmingSpaces
            let contact = Contact(name: name.isEmpty ? "C" : name, emails: (0..<Int.random(in: 0...3, using: &generator)).map { _ in text(20) },
                                  phones: (0..<Int.random(in: 0...2, using: &generator)).map { _ in text(12) },
                                  note: Bool.random(using: &generator) ? text(200) : nil, updatedAt: zero)
            XCTAssertEqual(try RowFormat.parse(.contacts, title: "file", bytes: RowFormat.render(.contact(contact))!, previous: nil),
                           .contact(contact), "seed 42 round \(round)")
            let setting = Setting(name: "s", value: text(40), updatedAt: zero)
            XCTAssertEqual(try RowFormat.parse(.settings, title: "s", bytes: RowFormat.render(.setting(setting))!, previous: nil), .setting(setting))
        }
        let event = MemoryEvent(at: Timestamp(seconds: 1_700_000_000), kind: "visit", text: "went\n\nout", buries: [RowKey(bytes: Array(repeating: 3, count: 16))!])
        XCTAssertEqual(MemoryText.parse(MemoryText.render(event)), event)
    }

    func testVCardReadsWhatOtherProgramsWrite() throws {
        let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Other//EN\r\nN:Lee;Ann;;;\r\nitem1.EMAIL;TYPE=work:ann@example.org\r\nTEL;VALUE=uri:tel:+1-555\r\nNOTE:long line fol\r\n ded here\\, ok\r\nUID:123\r\nEND:VCARD\r\n"
        let contact = try VCard.parse(Array(card.utf8), fileTitle: "x", previous: nil)
        XCTAssertEqual(contact.name, "Ann Lee")
        XCTAssertEqual(contact.emails, ["ann@example.org"])
        XCTAssertEqual(contact.phones, ["tel:+1-555"])
        XCTAssertEqual(contact.note, "long line folded here, ok")
    }

    func testUnparsableVCardsAreRefusedWithAReason() {
        let cases = ["FN:No begin\n", "BEGIN:VCARD\nFN:Cut\n", "BEGIN:VCARD\nFN:A\nORG:Acme\nEND:VCARD\n", "BEGIN:VCARD\ngarbage\nEND:VCARD\n"]
        for card in cases {
            XCTAssertThrowsError(try VCard.parse(Array(card.utf8), fileTitle: "x", previous: nil), card)
        }
        XCTAssertThrowsError(try VCard.parse([0xFF, 0xFE], fileTitle: "x", previous: nil)) { error in
            XCTAssertEqual((error as? FormatError)?.kind, .illegalByteSequence)
        }
        XCTAssertEqual(try VCard.parse([], fileTitle: "New", previous: nil).name, "New", "an empty new file is a contact with just its name")
    }

    func testVCardLinesAreFoldedAt75Octets() {
        let bytes = VCard.render(Contact(name: String(repeating: "é", count: 100), updatedAt: zero))
        for line in String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n") {
            XCTAssertLessThanOrEqual(line.utf8.count, 75)
        }
    }

    func testPlanTextWithoutHeaderIsAllNotes() throws {
        guard case .plan(let plan) = try RowFormat.parse(.plans, title: "T", bytes: Array("just notes: here\n".utf8), previous: nil) else { return XCTFail() }
        XCTAssertEqual(plan.notes, "just notes: here\n")
        XCTAssertThrowsError(try RowFormat.parse(.plans, title: "T", bytes: Array("done: maybe\n\n".utf8), previous: nil))
        XCTAssertThrowsError(try RowFormat.parse(.plans, title: "T", bytes: Array("due: 2024-02-30\n\n".utf8), previous: nil))
        XCTAssertThrowsError(try RowFormat.parse(.memory, title: "m", bytes: [], previous: nil))
    }
}
