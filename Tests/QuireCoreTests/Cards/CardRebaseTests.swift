import QuireCore
import XCTest

/// A card written back whole by a program that read an older version
/// (khard, todoman) keeps the changes that synced in meanwhile.
final class CardRebaseTests: XCTestCase {
    private func card(_ lines: [String], end: String = "\r\n") -> [UInt8] { Array(lines.map { $0 + end }.joined().utf8) }

    func testAChangeThatLandedMeanwhileIsNotUndone() {
        let shown = card(["BEGIN:VCARD", "VERSION:4.0", "FN:Pat", "TEL:+44 9999", "NOTE:old", "END:VCARD"])
        let stored = card(["BEGIN:VCARD", "VERSION:4.0", "FN:Pat", "TEL:+44 2222", "NOTE:old", "END:VCARD"])
        let written = card(["BEGIN:VCARD", "VERSION:4.0", "FN:Pat", "TEL:+44 9999", "NOTE:new", "END:VCARD"])
        XCTAssertEqual(String(decoding: CardRebase.rebase(written, shown: shown, onto: stored, rules: Contact.rules), as: UTF8.self),
                       String(decoding: card(["BEGIN:VCARD", "VERSION:4.0", "FN:Pat", "TEL:+44 2222", "NOTE:new", "END:VCARD"]), as: UTF8.self))
        // Nothing landed, or the writer saw it all: its text as written.
        XCTAssertEqual(CardRebase.rebase(written, shown: stored, onto: stored, rules: Contact.rules), written)
        XCTAssertEqual(CardRebase.rebase(stored, shown: shown, onto: stored, rules: Contact.rules), stored)
    }

    func testAddedAndRemovedLinesStayInTheirComponent() {
        let shown = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:Ship", "LOCATION:Dock", "BEGIN:VALARM", "TRIGGER:-PT15M", "END:VALARM",
                          "END:VTODO", "END:VCALENDAR"], end: "\n")
        // Meanwhile: another device moved the location and added a category.
        let stored = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:Ship", "LOCATION:Pier 4", "CATEGORIES:work", "BEGIN:VALARM",
                           "TRIGGER:-PT15M", "END:VALARM", "END:VTODO", "END:VCALENDAR"], end: "\n")
        // The program renamed the todo, added a due date and dropped the alarm.
        let written = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:Ship v1", "DUE:20261224", "LOCATION:Dock", "END:VTODO", "END:VCALENDAR"],
                           end: "\n")
        let result = String(decoding: CardRebase.rebase(written, shown: shown, onto: stored, rules: Plan.rules), as: UTF8.self)
        XCTAssertEqual(result, String(decoding: card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:Ship v1", "DUE:20261224", "LOCATION:Pier 4",
                                                      "CATEGORIES:work", "END:VTODO", "END:VCALENDAR"], end: "\n"), as: UTF8.self))
    }

    /// Both changed a property a todo holds once: the program writes last
    /// and its line replaces the stored one; a list property keeps both.
    func testASinglePropertyBothChangedTakesTheWritersLine() {
        let shown = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:a", "CATEGORIES:x", "END:VTODO", "END:VCALENDAR"])
        let stored = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:b", "CATEGORIES:y", "END:VTODO", "END:VCALENDAR"])
        let written = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "SUMMARY:c", "CATEGORIES:z", "END:VTODO", "END:VCALENDAR"])
        let result = String(decoding: CardRebase.rebase(written, shown: shown, onto: stored, rules: Plan.rules), as: UTF8.self)
        XCTAssertEqual(result.components(separatedBy: "SUMMARY").count - 1, 1, result)
        XCTAssertTrue(result.contains("SUMMARY:c"), result)
        XCTAssertTrue(result.contains("CATEGORIES:y") && result.contains("CATEGORIES:z"), result)
    }

    /// A text without a final line end, with a line added after its last
    /// kept line: lines stay lines.
    func testLinesStaySeparate() {
        let shown = Array("BEGIN:VCARD\nFN:Pat\nEND:VCARD".utf8)
        let stored = Array("BEGIN:VCARD\nFN:Pat\nEMAIL:p@x\nEND:VCARD".utf8)
        let written = Array("BEGIN:VCARD\nFN:Pat\nEND:VCARD\nX-LAST:1".utf8)
        let result = String(decoding: CardRebase.rebase(written, shown: shown, onto: stored, rules: Contact.rules), as: UTF8.self)
        XCTAssertEqual(result, "BEGIN:VCARD\nFN:Pat\nEMAIL:p@x\nEND:VCARD\nX-LAST:1")
    }
}
