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
        for round in 0..<300 {
            let plan = Plan(title: "P", notes: text(80), due: Bool.random(using: &generator) ? nil : Timestamp(seconds: Int64.random(in: 0...2_000_000_000, using: &generator)),
                            isDone: Bool.random(using: &generator), createdAt: zero, updatedAt: zero)
            guard case .plan(let read) = try RowFormat.parse(.plans, title: "P", bytes: plan.bytes, previous: .plan(plan)) else { return XCTFail() }
            XCTAssertEqual(read, plan, "seed 42 round \(round)")
            XCTAssertEqual(read.notes, plan.notes.replacingOccurrences(of: "\r", with: ""))
            let name = text(30).replacingOccurrences(of: "\n", with: " ").trimmingSpaces
            let contact = Contact(name: name.isEmpty ? "C" : name, emails: (0..<Int.random(in: 0...3, using: &generator)).map { _ in text(20) },
                                  phones: (0..<Int.random(in: 0...2, using: &generator)).map { _ in text(12) },
                                  note: Bool.random(using: &generator) ? text(200) : nil, uid: "u\(round)", updatedAt: zero)
            var renamed = contact
            renamed.title = "file"
            XCTAssertEqual(try RowFormat.parse(.contacts, title: "file", bytes: RowFormat.render(.contact(contact))!, previous: .contact(contact)),
                           .contact(renamed), "seed 42 round \(round)")
            // A new file of the same bytes is the same card (new identities aside).
            guard case .contact(let fresh) = try RowFormat.parse(.contacts, title: "file", bytes: contact.bytes, previous: nil) else { return XCTFail() }
            XCTAssertEqual(fresh.bytes, contact.bytes)
            XCTAssertEqual(fresh.name, contact.name)
            let setting = Setting(name: "s", value: text(40), updatedAt: zero)
            XCTAssertEqual(try RowFormat.parse(.settings, title: "s", bytes: RowFormat.render(.setting(setting))!, previous: nil), .setting(setting))
        }
        let event = MemoryEvent(at: Timestamp(seconds: 1_700_000_000), kind: "visit", text: "went\n\nout", buries: [RowKey(bytes: Array(repeating: 3, count: 16))!])
        XCTAssertEqual(MemoryText.parse(MemoryText.render(event)), event)
    }

    func testVCardReadsWhatOtherProgramsWriteAndKeepsEveryByte() throws {
        let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Other//EN\r\nN:Lee;Ann;;;\r\nitem1.EMAIL;TYPE=work:ann@example.org\r\nitem1.X-ABLabel:_$!<Work>!$_\r\nTEL;VALUE=uri:tel:+1-555\r\nORG:Acme;Labs\r\nNOTE:long line fol\r\n ded here\\, ok\r\nUID:123\r\nEND:VCARD\r\n"
        let contact = try VCard.parse(Array(card.utf8), title: "x", key: nil, previous: nil)
        XCTAssertEqual(contact.bytes, Array(card.utf8), "kept byte for byte")
        XCTAssertEqual(contact.name, "Ann Lee")
        XCTAssertEqual(contact.emails, ["ann@example.org"])
        XCTAssertEqual(contact.phones, ["tel:+1-555"])
        XCTAssertEqual(contact.note, "long line folded here, ok")
        XCTAssertEqual(contact.uid, "123")
        // LF line ends, no trailing newline, blank lines: still every byte.
        let loose = "\nBEGIN:VCARD\nVERSION:4.0\nUID:9\n\nFN:Loose\nEND:VCARD"
        XCTAssertEqual(try VCard.parse(Array(loose.utf8), title: "x", key: nil, previous: nil).bytes, Array(loose.utf8))
    }

    func testACardWithoutAUIDGetsOneFromItsRowKeyAfterVersion() throws {
        let key = RowKey(hex: "00112233445566778899aabbccddeeff")!
        let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:No Uid\r\nEND:VCARD\r\n"
        let contact = try VCard.parse(Array(card.utf8), title: "x", key: key, previous: nil)
        XCTAssertEqual(String(decoding: contact.bytes, as: UTF8.self),
                       "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:00112233-4455-6677-8899-aabbccddeeff\r\nFN:No Uid\r\nEND:VCARD\r\n")
        // Saved again without it (an editor that drops it), it keeps the same one.
        let again = try VCard.parse(Array(card.utf8), title: "x", key: nil, previous: contact)
        XCTAssertEqual(again.uid, contact.uid)
        XCTAssertEqual(again.bytes, contact.bytes)
    }

    /// What Windows tools write: a byte-order mark, and CRLF files passed
    /// once more through a text-mode converter (CR CR LF). Read as the card
    /// it is, and kept byte for byte.
    func testACardWithAByteOrderMarkOrDoubledCRsIsReadAndKeptAsWritten() throws {
        for card in ["\u{FEFF}BEGIN:VCARD\r\nVERSION:4.0\r\nUID:b\r\nFN:Bom\r\nEND:VCARD\r\n",
                     "BEGIN:VCARD\r\r\nVERSION:4.0\r\r\nUID:b\r\r\nFN:Bom\r\r\nEND:VCARD\r\r\n"] {
            let contact = try VCard.parse(Array(card.utf8), title: "x", key: nil, previous: nil)
            XCTAssertEqual(contact.bytes, Array(card.utf8), card.debugDescription)
            XCTAssertEqual(contact.name, "Bom", card.debugDescription)
            XCTAssertEqual(contact.uid, "b", card.debugDescription)
        }
    }

    /// A line quire adds goes in with the file's own line ends.
    func testLinesAddedToAnLFCardEndInLF() throws {
        let key = RowKey(hex: "00112233445566778899aabbccddeeff")!
        let contact = try VCard.parse(Array("BEGIN:VCARD\nVERSION:4.0\nFN:Ann\nEND:VCARD\n".utf8), title: "x", key: key, previous: nil)
        XCTAssertEqual(String(decoding: contact.bytes, as: UTF8.self),
                       "BEGIN:VCARD\nVERSION:4.0\nUID:00112233-4455-6677-8899-aabbccddeeff\nFN:Ann\nEND:VCARD\n")
        var mailed = contact
        mailed.emails = ["ann@example.org"]
        XCTAssertFalse(mailed.bytes.contains(UInt8(ascii: "\r")), String(decoding: mailed.bytes, as: UTF8.self))
        XCTAssertEqual(mailed.emails, ["ann@example.org"])
    }

    /// A refusal quotes the line with what a terminal would not show escaped.
    func testARefusalShowsControlCharactersEscaped() {
        XCTAssertThrowsError(try VCard.parse(Array("BEGIN:VCARD\ngar\u{1}bage\nEND:VCARD\n".utf8), title: "x", key: nil, previous: nil)) { error in
            XCTAssertTrue((error as? FormatError)?.message.contains("'gar\\u{1}bage'") == true, "\(error)")
        }
        XCTAssertThrowsError(try VCard.parse(Array("\u{FEFF}\u{FEFF}BEGIN:VCARD\nEND:VCARD\n".utf8), title: "x", key: nil, previous: nil)) { error in
            XCTAssertTrue((error as? FormatError)?.message.contains("\\u{FEFF}") == true, "\(error)")
        }
    }

    func testUnparsableCardsAreRefusedWithAReason() {
        let cases: [(String, String)] = [
            ("FN:No begin\n", "does not start with BEGIN:VCARD"),
            ("BEGIN:VCARD\nFN:Cut\n", "does not end with END:VCARD"),
            ("BEGIN:VCARD\ngarbage\nEND:VCARD\n", "line 2 is not a property"),
            ("BEGIN:VCARD\nVERSION:2.1\nEND:VCARD\n", "version 2.1"),
            ("BEGIN:VCARD\nFN:NoVer\nEMAIL:n@x\nEND:VCARD\n", "has no VERSION line"),
            ("BEGIN:VCARD\nFN:Inner\nBEGIN:X-PART\nVERSION:4.0\nEND:X-PART\nEND:VCARD\n", "has no VERSION line"),
            ("BEGIN:VCARD\nFN:A\nEND:VCARD\nBEGIN:VCARD\nFN:B\nEND:VCARD\n", "one a vCard per file"),
            ("BEGIN:VCARD\nBEGIN:VCARD\nEND:VCARD\nEND:VCARD\n", "nested"),
            ("BEGIN:VCARD\nEND:VCALENDAR\n", "END:VCARD belongs"),
        ]
        for (card, reason) in cases {
            XCTAssertThrowsError(try VCard.parse(Array(card.utf8), title: "x", key: nil, previous: nil), card) { error in
                XCTAssertTrue((error as? FormatError)?.message.contains(reason) == true, "\(card): \(error)")
            }
        }
        XCTAssertThrowsError(try VCard.parse([0xFF, 0xFE], title: "x", key: nil, previous: nil)) { error in
            XCTAssertEqual((error as? FormatError)?.kind, .illegalByteSequence)
        }
        XCTAssertEqual(try VCard.parse([], title: "New", key: nil, previous: nil).name, "New", "an empty new file is a contact with just its name")
    }

    func testICalendarTodosAreKeptWholeAndReadForTheirFields() throws {
        let ics = """
            BEGIN:VCALENDAR\r
            VERSION:2.0\r
            PRODID:-//Other//EN\r
            BEGIN:VTODO\r
            UID:todo-1@example\r
            SUMMARY:Water the plants\r
            DESCRIPTION:Both\\, the fern and the palm\r
            DUE;VALUE=DATE:20261224\r
            PRIORITY:1\r
            CATEGORIES:home,garden\r
            RRULE:FREQ=WEEKLY;BYDAY=SA\r
            X-SOMETHING;X-PARAM=1:kept\r
            BEGIN:VALARM\r
            ACTION:DISPLAY\r
            TRIGGER:-PT1H\r
            END:VALARM\r
            END:VTODO\r
            END:VCALENDAR\r

            """
        let plan = try ICalendar.parse(Array(ics.utf8), title: "todo-1@example", key: nil, previous: nil)
        XCTAssertEqual(plan.bytes, Array(ics.utf8))
        XCTAssertEqual(plan.summary, "Water the plants")
        XCTAssertEqual(plan.notes, "Both, the fern and the palm")
        XCTAssertEqual(plan.due, Timestamp(seconds: CardDates.parse("20261224")!))
        XCTAssertEqual(plan.priority, 1)
        XCTAssertEqual(plan.categories, ["home", "garden"])
        XCTAssertEqual(plan.recurrence, "FREQ=WEEKLY;BYDAY=SA")
        XCTAssertFalse(plan.isDone)
        var done = plan
        done.isDone = true
        XCTAssertTrue(done.isDone)
        let text = String(decoding: done.bytes, as: UTF8.self)
        XCTAssertTrue(text.contains("STATUS:COMPLETED\r\nCOMPLETED:"), text)
        XCTAssertTrue(text.contains("X-SOMETHING;X-PARAM=1:kept\r\n") && text.contains("TRIGGER:-PT1H"), "the rest is kept")
    }

    func testUnparsableCalendarsAreRefusedWithAReason() {
        let cases: [(String, String)] = [
            ("just notes\n", "line 1 is not a property"),
            ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:x\nEND:VEVENT\nEND:VCALENDAR\n", "holds no VTODO"),
            ("BEGIN:VCALENDAR\nBEGIN:VTODO\nSUMMARY:x\nEND:VCALENDAR\n", "END:VTODO belongs"),
            ("BEGIN:VCALENDAR\nBEGIN:VTODO\nSUMMARY:x\nEND:VTODO\n", "does not end with END:VCALENDAR"),
        ]
        for (ics, reason) in cases {
            XCTAssertThrowsError(try RowFormat.parse(.plans, title: "T", bytes: Array(ics.utf8), previous: nil), ics) { error in
                XCTAssertTrue((error as? FormatError)?.message.contains(reason) == true, "\(ics): \(error)")
            }
        }
        XCTAssertThrowsError(try RowFormat.parse(.memory, title: "m", bytes: [], previous: nil))
        guard case .plan(let empty) = try? RowFormat.parse(.plans, title: "Empty", bytes: [], previous: nil) else { return XCTFail() }
        XCTAssertEqual(empty.summary, "Empty")
        XCTAssertNotNil(empty.uid)
    }

    func testGeneratedCardLinesAreFoldedAt75Octets() {
        let bytes = Contact(name: String(repeating: "é", count: 100), updatedAt: zero).bytes
        for line in String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n") {
            XCTAssertLessThanOrEqual(line.utf8.count, 75)
        }
    }
}
