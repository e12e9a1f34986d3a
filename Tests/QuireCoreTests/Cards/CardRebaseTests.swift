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

    /// Both sides bumped SEQUENCE to the same value and stamped their own
    /// LAST-MODIFIED (todoman's edits on two devices): one of each, never
    /// two (RFC 5545: they occur once), and each side's own change kept.
    func testTheSameChangeOnBothSidesIsOneLine() {
        let shown = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "UID:t", "DUE:20261210", "LAST-MODIFIED:20261206T100000Z", "PRIORITY:5",
                          "SEQUENCE:1", "END:VTODO", "END:VCALENDAR"])
        let stored = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "UID:t", "DUE:20261224", "LAST-MODIFIED:20261206T100500Z", "PRIORITY:5",
                           "SEQUENCE:2", "END:VTODO", "END:VCALENDAR"])
        let written = card(["BEGIN:VCALENDAR", "BEGIN:VTODO", "UID:t", "DUE:20261210", "LAST-MODIFIED:20261206T100600Z", "PRIORITY:1",
                            "SEQUENCE:2", "END:VTODO", "END:VCALENDAR"])
        let result = String(decoding: CardRebase.rebase(written, shown: shown, onto: stored, rules: Plan.rules), as: UTF8.self)
        for name in ["SEQUENCE", "LAST-MODIFIED", "DUE", "PRIORITY"] {
            XCTAssertEqual(result.components(separatedBy: "\r\n" + name).count - 1, 1, "\(name) once: \(result)")
        }
        XCTAssertTrue(result.contains("SEQUENCE:2") && result.contains("DUE:20261224") && result.contains("PRIORITY:1")
                      && result.contains("LAST-MODIFIED:20261206T100600Z"), result)
        // A line the program added twice where the current text holds it once: one more.
        let twice = card(["BEGIN:VCARD", "FN:Pat", "EMAIL:a@x", "EMAIL:a@x", "END:VCARD"])
        let once = card(["BEGIN:VCARD", "FN:Pat", "EMAIL:a@x", "END:VCARD"])
        let base = card(["BEGIN:VCARD", "FN:Pat", "END:VCARD"])
        XCTAssertEqual(String(decoding: CardRebase.rebase(twice, shown: base, onto: once, rules: Contact.rules), as: UTF8.self)
                        .components(separatedBy: "EMAIL:a@x").count - 1, 2)
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
