import QuireCore
import QuireTestSupport
import XCTest

/// Contacts and plans merge per property: two devices editing different
/// properties of one card both keep their edit; one property edited on
/// both shows the last writer's line and keeps the other in its head.
final class CardMergeTests: XCTestCase {
    let key = RowKey(bytes: [UInt8](repeating: 7, count: 16))!
    let a = Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 1)
    let b = Actor(device: DeviceID(bytes: [UInt8](repeating: 2, count: 16))!, incarnation: 1)
    let c = Actor(device: DeviceID(bytes: [UInt8](repeating: 3, count: 16))!, incarnation: 1)

    let base = """
        BEGIN:VCARD\r
        VERSION:3.0\r
        UID:grace\r
        FN:Grace Hopper\r
        N:Hopper;Grace;;;\r
        TEL;TYPE=cell:+1 555 0100\r
        EMAIL:grace@navy.example\r
        X-CUSTOM;X-P="a:b":kept as is\r
        END:VCARD\r

        """

    func contact(_ text: String, at seconds: Int64, previous: Contact? = nil) -> Contact {
        let card = previous.map { $0.card.edited(to: Array(text.utf8)) } ?? CardText(fresh: Array(text.utf8))
        return Contact(title: "grace", card: card, updatedAt: Timestamp(seconds: seconds))
    }

    /// The row a device writes after seeing `row`.
    func edit(_ row: Row, by actor: Actor, _ transform: (String) -> String, at seconds: Int64) -> Row {
        guard case .contact(let shown)? = row.content else { fatalError("not a contact") }
        let text = transform(String(decoding: shown.bytes, as: UTF8.self))
        return row.edited(by: actor, to: .contact(contact(text, at: seconds, previous: shown)))
    }

    func shown(_ row: Row) -> String {
        guard case .contact(let c)? = row.content else { return "" }
        return String(decoding: c.bytes, as: UTF8.self)
    }

    func testTwoPropertiesEditedOnTwoDevicesBothSurvive() {
        let start = Row.single(.contacts, key, dot: Dot(actor: a, counter: 1), context: VersionVector(),
                               content: .contact(contact(base, at: 10)))
        let onA = edit(start, by: a, { $0.replacingOccurrences(of: "+1 555 0100", with: "+1 555 0199") }, at: 20)
        let onB = edit(start, by: b, { $0.replacingOccurrences(of: "EMAIL:grace@navy.example\r\n", with: "EMAIL:grace@navy.example\r\nADR;TYPE=home:;;1 Main St;Arlington;VA;22201;USA\r\n") }, at: 21)
        let ab = RowMerge.join(onA, onB), ba = RowMerge.join(onB, onA)
        XCTAssertTrue(RowMerge.sameState(ab, ba))
        XCTAssertEqual(ab.heads.count, 2)
        let text = shown(ab)
        XCTAssertTrue(text.contains("TEL;TYPE=cell:+1 555 0199\r\n"), text)
        XCTAssertFalse(text.contains("0100"), text)
        XCTAssertTrue(text.contains("EMAIL:grace@navy.example\r\nADR;TYPE=home:;;1 Main St;Arlington;VA;22201;USA\r\n"), text)
        XCTAssertTrue(text.contains("X-CUSTOM;X-P=\"a:b\":kept as is\r\n"), text)
        XCTAssertTrue(text.hasPrefix("BEGIN:VCARD\r\n") && text.hasSuffix("END:VCARD\r\n"), text)
        // An edit that saw both keeps both, in one head.
        let after = edit(ab, by: a, { $0.replacingOccurrences(of: "FN:Grace Hopper", with: "FN:Grace B. Hopper") }, at: 30)
        XCTAssertEqual(after.heads.count, 1)
        XCTAssertTrue(shown(after).contains("0199") && shown(after).contains("1 Main St") && shown(after).contains("Grace B. Hopper"))
    }

    func testOnePropertyEditedOnTwoDevicesShowsTheLastWriterAndKeepsTheOther() {
        let start = Row.single(.contacts, key, dot: Dot(actor: a, counter: 1), context: VersionVector(),
                               content: .contact(contact(base, at: 10)))
        let onA = edit(start, by: a, { $0.replacingOccurrences(of: "+1 555 0100", with: "+1 555 0111") }, at: 20)
        let onB = edit(start, by: b, { $0.replacingOccurrences(of: "+1 555 0100", with: "+1 555 0122") }, at: 25)
        let merged = RowMerge.join(onA, onB)
        XCTAssertTrue(shown(merged).contains("0122") && !shown(merged).contains("0111"), shown(merged))
        XCTAssertEqual(merged.heads.count, 2, "the other value stays in its head")
        XCTAssertTrue(merged.heads.contains { if case .contact(let c) = $0.content { return c.phones == ["+1 555 0111"] }; return false })
        // A birthday set on both (added, not changed): one BDAY shows.
        let bdayA = edit(start, by: a, { $0.replacingOccurrences(of: "END:VCARD", with: "BDAY:1906-12-09\r\nEND:VCARD") }, at: 30)
        let bdayB = edit(start, by: b, { $0.replacingOccurrences(of: "END:VCARD", with: "BDAY:1906-12-10\r\nEND:VCARD") }, at: 31)
        let both = shown(RowMerge.join(bdayA, bdayB))
        XCTAssertEqual(both.components(separatedBy: "BDAY").count - 1, 1, both)
        XCTAssertTrue(both.contains("1906-12-10"), both)
    }

    func testARemovalWinsOverACopyOfTheOldLineFromADeviceThatDidNotSeeIt() {
        let start = Row.single(.contacts, key, dot: Dot(actor: a, counter: 1), context: VersionVector(),
                               content: .contact(contact(base, at: 10)))
        let removed = edit(start, by: a, { $0.replacingOccurrences(of: "EMAIL:grace@navy.example\r\n", with: "") }, at: 20)
        let other = edit(start, by: b, { $0.replacingOccurrences(of: "FN:Grace Hopper", with: "FN:Amazing Grace") }, at: 21)
        let text = shown(RowMerge.join(removed, other))
        XCTAssertFalse(text.contains("EMAIL"), text)
        XCTAssertTrue(text.contains("Amazing Grace"), text)
        // Written again later, it comes back (a new identity, not the removed one).
        let again = edit(RowMerge.join(removed, other), by: c, { $0.replacingOccurrences(of: "END:VCARD", with: "EMAIL:grace@navy.example\r\nEND:VCARD") }, at: 40)
        XCTAssertTrue(shown(again).contains("EMAIL:grace@navy.example"))
        XCTAssertTrue(shown(RowMerge.join(again, other)).contains("EMAIL:grace@navy.example"))
    }

    func testMergesAreCommutativeAssociativeAndIdempotentOverRandomEdits() {
        var generator = SplitMix64(seed: 16)
        let values = ["0100", "0111", "0122", "0133"]
        for round in 0..<200 {
            let start = Row.single(.contacts, key, dot: Dot(actor: a, counter: 1), context: VersionVector(),
                                   content: .contact(contact(base, at: 10)))
            var rows: [Row] = []
            for (i, actor) in [a, b, c].enumerated() {
                var row = start
                for step in 0..<Int.random(in: 1...3, using: &generator) {
                    let pick = Int.random(in: 0..<4, using: &generator)
                    let value = values.randomElement(using: &generator)!
                    row = edit(row, by: actor, { text in
                        switch pick {
                        case 0: return text.replacingOccurrences(of: #"555 0\d\d\d"#, with: "555 " + value, options: .regularExpression)
                        case 1: return text.replacingOccurrences(of: "END:VCARD", with: "NOTE:\(value)\r\nEND:VCARD")
                        case 2: return text.replacingOccurrences(of: "EMAIL:grace@navy.example\r\n", with: "")
                        default: return text.replacingOccurrences(of: "FN:", with: "FN:\(value) ")
                        }
                    }, at: Int64(20 + i + step * 3))
                }
                rows.append(row)
            }
            let x = RowMerge.join(RowMerge.join(rows[0], rows[1]), rows[2])
            let y = RowMerge.join(rows[0], RowMerge.join(rows[2], rows[1]))
            let z = RowMerge.join(RowMerge.join(rows[2], rows[0]), RowMerge.join(rows[1], rows[1]))
            XCTAssertTrue(RowMerge.sameState(x, y) && RowMerge.sameState(y, z), "seed 16 round \(round)")
            XCTAssertEqual(x.content, y.content, "seed 16 round \(round)")
            XCTAssertEqual(shown(x), shown(z), "seed 16 round \(round)")
            XCTAssertTrue(shown(x).hasPrefix("BEGIN:VCARD\r\n") && shown(x).hasSuffix("END:VCARD\r\n"), "seed 16 round \(round): \(shown(x))")
            XCTAssertLessThanOrEqual(shown(x).components(separatedBy: "\nFN:").count - 1, 1, "seed 16 round \(round)")
        }
    }

    func testUnitsRoundTripEveryByteAndRefoldingIsNoEdit() {
        for text in ["", "A:b", "A:b\n", "\r\n\r\nA:b\r\n \r\n\r\nB:c", "A:b\n c\n\td\nE:f\n\n"] {
            XCTAssertEqual(ContentLines.units(of: Array(text.utf8)).flatMap { $0 }, Array(text.utf8), text.debugDescription)
        }
        let folded = CardText(fresh: Array("BEGIN:VCARD\r\nNOTE:a long\r\n  line\r\nEND:VCARD\r\n".utf8))
        let refolded = folded.edited(to: Array("BEGIN:VCARD\nNOTE:a long line\nEND:VCARD\n".utf8))
        XCTAssertEqual(folded.units.map(\.id), refolded.units.map(\.id), "same unfolded lines: same identities")
        XCTAssertTrue(refolded.removed.isEmpty)
    }

    func testPlansMergePerPropertyToo() {
        let plan = Plan(title: "t", notes: "n", due: nil, createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1), uid: "u")
        let start = Row.single(.plans, key, dot: Dot(actor: a, counter: 1), context: VersionVector(), content: .plan(plan))
        var done = plan; done.updatedAt = Timestamp(seconds: 5); done.isDone = true
        var due = plan; due.updatedAt = Timestamp(seconds: 6); due.due = Timestamp(seconds: 86_400 * 400); due.categories = ["home"]
        let merged = RowMerge.join(start.edited(by: a, to: .plan(done)), start.edited(by: b, to: .plan(due)))
        guard case .plan(let shown)? = merged.content else { return XCTFail() }
        XCTAssertTrue(shown.isDone)
        XCTAssertEqual(shown.due, Timestamp(seconds: 86_400 * 400))
        XCTAssertEqual(shown.categories, ["home"])
        XCTAssertEqual(shown.uid, "u")
    }
}

import Foundation
