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

    // MARK: Components inside an item (alarms)

    let todo = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VTODO\r\nUID:t1\r\nSUMMARY:todo one\r\nDUE:20261201T100000Z\r\n%@END:VTODO\r\nEND:VCALENDAR\r\n"
    let alarmB = "BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:B\r\nTRIGGER:-PT15M\r\nEND:VALARM\r\n"
    let alarmA = "BEGIN:VALARM\r\nACTION:AUDIO\r\nTRIGGER:-PT5M\r\nEND:VALARM\r\n"

    func planRow(_ text: String, by actor: Actor, at seconds: Int64, after previous: Row? = nil) -> Row {
        let plan: (CardText) -> RowContent = { .plan(Plan(title: "t1", calendar: $0, createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: seconds))) }
        guard let previous else {
            return Row.single(.plans, key, dot: Dot(actor: actor, counter: 1), context: VersionVector(), content: plan(CardText(fresh: Array(text.utf8))))
        }
        guard case .plan(let shown)? = previous.content else { fatalError("not a plan") }
        return previous.edited(by: actor, to: plan(shown.calendar.edited(to: Array(text.utf8))))
    }

    func planText(_ row: Row) -> String {
        guard case .plan(let p)? = row.content else { return "" }
        return String(decoding: p.calendar.bytes, as: UTF8.self)
    }

    /// Every component opened is closed, in order, and nothing is left over.
    func assertBalanced(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        var stack: [String] = []
        for l in text.components(separatedBy: "\r\n") where !l.isEmpty {
            if l.hasPrefix("BEGIN:") { stack.append(String(l.dropFirst(6))) }
            if l.hasPrefix("END:") { XCTAssertEqual(stack.popLast(), String(l.dropFirst(4)), text, file: file, line: line) }
        }
        XCTAssertEqual(stack, [], text, file: file, line: line)
    }

    func testTwoAlarmsAddedAtOnceAreTwoWholeAlarms() {
        let start = planRow(String(format: todo, ""), by: a, at: 10)
        let onB = planRow(String(format: todo, alarmB), by: b, at: 20, after: start)
        let onA = planRow(String(format: todo, alarmA), by: a, at: 21, after: start)
        let ab = RowMerge.join(onA, onB), ba = RowMerge.join(onB, onA)
        XCTAssertTrue(RowMerge.sameState(ab, ba))
        XCTAssertEqual(planText(ab), planText(ba))
        let text = planText(ab)
        assertBalanced(text)
        XCTAssertTrue(text.contains(alarmA) && text.contains(alarmB), text)
        // And a card written by a program that saw one alarm, onto a text that has the other.
        let rebased = CardRebase.rebase(Array(String(format: todo, alarmA).utf8), shown: Array(String(format: todo, "").utf8),
                                        onto: Array(String(format: todo, alarmB).utf8), rules: Plan.rules)
        let rebasedText = String(decoding: rebased, as: UTF8.self)
        assertBalanced(rebasedText)
        XCTAssertTrue(rebasedText.contains(alarmA) && rebasedText.contains(alarmB), rebasedText)
    }

    func testAnAlarmChangedWhileAnotherDeviceDeletedItComesBackWhole() {
        let start = planRow(String(format: todo, alarmB), by: a, at: 10)
        let deleted = planRow(String(format: todo, ""), by: a, at: 20, after: start)
        let changed = planRow(String(format: todo, alarmB.replacingOccurrences(of: "-PT15M", with: "-PT45M")), by: b, at: 21, after: start)
        let text = planText(RowMerge.join(deleted, changed))
        assertBalanced(text)
        XCTAssertTrue(text.contains(alarmB.replacingOccurrences(of: "-PT15M", with: "-PT45M")), text)
        XCTAssertFalse(text.contains("-PT15M"), text)
        // Deleted where nobody changed it, it stays deleted.
        let other = planRow(String(format: todo, alarmB).replacingOccurrences(of: "todo one", with: "todo two"), by: b, at: 21, after: start)
        let gone = planText(RowMerge.join(deleted, other))
        XCTAssertFalse(gone.contains("VALARM"), gone)
        XCTAssertTrue(gone.contains("SUMMARY:todo two"), gone)
    }

    func testOneAlarmChangedOnTwoDevicesShowsTheLastWritersWhole() {
        let start = planRow(String(format: todo, alarmB + alarmA), by: a, at: 10)
        let early = planRow(String(format: todo, alarmB.replacingOccurrences(of: "DESCRIPTION:B", with: "DESCRIPTION:early") + alarmA),
                            by: a, at: 20, after: start)
        let late = planRow(String(format: todo, alarmB.replacingOccurrences(of: "-PT15M", with: "-PT1H") + alarmA), by: b, at: 30, after: start)
        let merged = RowMerge.join(early, late)
        let text = planText(merged)
        assertBalanced(text)
        XCTAssertEqual(text, String(format: todo, alarmB.replacingOccurrences(of: "-PT15M", with: "-PT1H") + alarmA))
        XCTAssertEqual(merged.heads.count, 2, "the other alarm stays in its head")
        // An edit that saw both versions settles it, one alarm changed, the other untouched.
        let settled = planRow(text, by: c, at: 40, after: merged)
        XCTAssertEqual(settled.heads.count, 1)
        XCTAssertEqual(planText(settled), text)
    }

    func testAnAlarmRefoldedOrWithOtherLineEndsIsNoEdit() {
        let crlf = CardText(fresh: Array(String(format: todo, alarmB).utf8))
        let lf = crlf.edited(to: Array(String(format: todo, alarmB).replacingOccurrences(of: "\r\n", with: "\n").utf8))
        XCTAssertEqual(crlf.units.map(\.id), lf.units.map(\.id))
        XCTAssertTrue(lf.removed.isEmpty)
        XCTAssertEqual(CardText.mergeUnits(of: Array(String(format: todo, alarmB + alarmA).utf8)).count, 11,
                       "seven lines of the calendar and to-do, two alarms, two ENDs")
    }

    func testAlarmMergesAreCommutativeAssociativeAndBalancedOverRandomEdits() {
        var generator = SplitMix64(seed: 61)
        let triggers = ["-PT5M", "-PT15M", "-PT1H", "-P1D"]
        for round in 0..<200 {
            let start = planRow(String(format: todo, alarmB), by: a, at: 10)
            var rows: [Row] = []
            for (i, actor) in [a, b, c].enumerated() {
                var row = start
                for step in 0..<Int.random(in: 1...3, using: &generator) {
                    let pick = Int.random(in: 0..<4, using: &generator)
                    let trigger = triggers.randomElement(using: &generator)!
                    var text = planText(row)
                    switch pick {
                    case 0: text = text.replacingOccurrences(of: "END:VTODO", with: "BEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:\(trigger)\r\nEND:VALARM\r\nEND:VTODO")
                    case 1: text = text.replacingOccurrences(of: #"TRIGGER:-P[^\r]*"#, with: "TRIGGER:" + trigger, options: .regularExpression)
                    case 2:
                        if let range = text.range(of: #"BEGIN:VALARM\r\n(?:(?!END:VALARM).*\r\n)*END:VALARM\r\n"#, options: .regularExpression) {
                            text.removeSubrange(range)
                        }
                    default: text = text.replacingOccurrences(of: "SUMMARY:", with: "SUMMARY:\(trigger) ")
                    }
                    row = planRow(text, by: actor, at: Int64(20 + i + step * 3), after: row)
                }
                rows.append(row)
            }
            let x = RowMerge.join(RowMerge.join(rows[0], rows[1]), rows[2])
            let y = RowMerge.join(rows[0], RowMerge.join(rows[2], rows[1]))
            let z = RowMerge.join(RowMerge.join(rows[2], rows[0]), RowMerge.join(rows[1], rows[1]))
            XCTAssertTrue(RowMerge.sameState(x, y) && RowMerge.sameState(y, z), "seed 61 round \(round)")
            XCTAssertEqual(planText(x), planText(y), "seed 61 round \(round)")
            XCTAssertEqual(planText(x), planText(z), "seed 61 round \(round)")
            assertBalanced(planText(x))
            // Every alarm shown is one some device wrote whole.
            for alarm in planText(x).components(separatedBy: "BEGIN:VALARM\r\n").dropFirst() {
                let body = alarm.components(separatedBy: "END:VALARM")[0]
                XCTAssertEqual(body.components(separatedBy: "TRIGGER:").count - 1, 1, "seed 61 round \(round): \(planText(x))")
                XCTAssertEqual(body.components(separatedBy: "ACTION:").count - 1, 1, "seed 61 round \(round): \(planText(x))")
            }
        }
    }

    /// A calendar stored before alarms merged whole holds one unit per line.
    /// Such a row reads as it did, an edit of it on this build writes the
    /// same text, and its versions merge with ones that hold the alarm whole.
    func testACalendarStoredLineByLineUpgradesOnItsNextEdit() {
        let text = String(format: todo, alarmB)
        let lines = ContentLines.units(of: Array(text.utf8))
        let stored = CardText(units: lines.enumerated().map { i, bytes in CardUnit(id: [UInt8](repeating: UInt8(i + 1), count: 16), slot: nil, bytes: bytes) },
                              removed: [])
        XCTAssertEqual(stored.bytes, Array(text.utf8))
        let plan: (CardText, Int64) -> RowContent = { .plan(Plan(title: "t1", calendar: $0, createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: $1))) }
        let start = Row.single(.plans, key, dot: Dot(actor: a, counter: 1), context: VersionVector(), content: plan(stored, 10))
        XCTAssertEqual(planText(start), text, "read as before")
        let same = stored.edited(to: Array(text.utf8))
        XCTAssertEqual(same.bytes, Array(text.utf8), "an edit of the same text writes the same text")
        // One device (this build) adds an alarm; another changes the summary.
        let added = start.edited(by: a, to: plan(stored.edited(to: Array(String(format: todo, alarmB + alarmA).utf8)), 20))
        let retitled = start.edited(by: b, to: plan(stored.edited(to: Array(text.replacingOccurrences(of: "todo one", with: "todo two").utf8)), 21))
        let merged = planText(RowMerge.join(added, retitled))
        assertBalanced(merged)
        XCTAssertEqual(merged, String(format: todo, alarmB + alarmA).replacingOccurrences(of: "todo one", with: "todo two"))
        XCTAssertEqual(planText(RowMerge.join(retitled, added)), merged)
    }
}
