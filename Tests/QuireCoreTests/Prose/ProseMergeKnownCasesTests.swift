import QuireCore
import XCTest

/// The cases the diary seed names, plus the edges of the paragraph model.
final class ProseMergeKnownCasesTests: XCTestCase {
    private let morning = "Woke early and watched the fog lift off the valley."
    private let lunch = "Lunch with Mara at the corner place; she starts the new job Monday."
    private let evening = "Read two chapters, then slept."
    private var base: String { Paragraphs.join([morning, lunch, evening]) }

    /// A device's edit of `shown` into `paragraphs`, as the store applies it.
    private func edit(_ shown: ProseVersion, into paragraphs: [String]) -> ProseVersion {
        ProseMerge.applyEdit(shown: shown.text, edited: Paragraphs.join(paragraphs), onto: shown)
    }

    private func assertCommutes(_ a: ProseVersion, _ b: ProseVersion, file: StaticString = #filePath, line: UInt = #line) -> ProseVersion {
        let ab = ProseMerge.merge(a, b)
        XCTAssertEqual(ab, ProseMerge.merge(b, a), "merge must not depend on argument order", file: file, line: line)
        XCTAssertEqual(ProseMerge.merge(ab, b), ab, "merging again changes nothing", file: file, line: line)
        XCTAssertEqual(ProseMerge.merge(ab, a), ab, "merging again changes nothing", file: file, line: line)
        return ab
    }

    func testTwoDevicesAppendDifferentParagraphsBothKeptOnce() {
        let start = ProseVersion(text: base)
        let phone = edit(start, into: [morning, lunch, evening, "Phone: the rain started at nine."])
        let laptop = edit(start, into: [morning, lunch, evening, "Laptop: finished the tax forms."])
        let merged = assertCommutes(phone, laptop)
        XCTAssertEqual(merged.paragraphs.sorted(), [morning, lunch, evening, "Phone: the rain started at nine.", "Laptop: finished the tax forms."].sorted())
        XCTAssertEqual(Array(merged.paragraphs.prefix(3)), [morning, lunch, evening])
    }

    func testRevisionWhileOtherAppendsKeepsRevisionAndAppendOnly() {
        let start = ProseVersion(text: base)
        let revisedLunch = "Lunch with Mara at the noodle place; she starts the new job on Tuesday."
        let phone = edit(start, into: [morning, revisedLunch, evening])
        let laptop = edit(start, into: [morning, lunch, evening, "Called Dad."])
        XCTAssertEqual(ProseMerge.deletions(shown: base, edited: phone.text), [Paragraphs.paragraphHash(lunch)])
        let (merged, report) = ProseMerge.mergeWithReport(phone, laptop)
        XCTAssertEqual(merged, ProseMerge.merge(laptop, phone))
        XCTAssertEqual(merged.paragraphs, [morning, revisedLunch, evening, "Called Dad."])
        XCTAssertEqual(report.droppedAsRevised, [Paragraphs.paragraphHash(lunch)])
        XCTAssertEqual(report.droppedAsDeleted, [])
        XCTAssertEqual(report.keptFromA, [Paragraphs.paragraphHash(revisedLunch)])
        XCTAssertEqual(report.keptFromB, [Paragraphs.paragraphHash("Called Dad.")])
    }

    /// One device rewrites the first paragraph beyond recognition while
    /// the other revises the second: the second's revision stays second,
    /// where the paragraph it replaced was, not before everything.
    func testARevisionGoesWhereItsOriginalWasBesideAConcurrentRewrite() {
        let start = ProseVersion(text: base)
        let newMorning = "Slept in; the radiator knocked all night."
        let revisedLunch = "Lunch with Mara at the noodle place; she starts the new job on Tuesday."
        let phone = edit(start, into: [newMorning, lunch, evening])
        let laptop = edit(start, into: [morning, revisedLunch, evening])
        XCTAssertEqual(assertCommutes(phone, laptop).paragraphs, [newMorning, revisedLunch, evening])
        // The same as a local save over a version that moved meanwhile.
        let saved = ProseMerge.applyEdit(shown: base, edited: Paragraphs.join([newMorning, lunch, evening]), onto: laptop)
        XCTAssertEqual(saved.paragraphs, [newMorning, revisedLunch, evening])
        // Short paragraphs: a revision that contains its original.
        let short = ProseMerge.applyEdit(shown: "alpha\n\nB\n\nC\n", edited: "omega\n\nB\n\nC\n",
                                         onto: edit(ProseVersion(text: "alpha\n\nB\n\nC\n"), into: ["alpha", "B x", "C"]))
        XCTAssertEqual(short.text, "omega\n\nB x\n\nC\n")
    }

    /// A log note: one program appends lines while an editor that read it
    /// rewrites its head line and saves. The appended lines follow the
    /// rewrite in one paragraph: every word once, not the note twice.
    func testLinesAppendedToAParagraphTheSaveRewroteFollowTheRewrite() {
        let shown = "REV s\nl1\nl2\n"
        let appended = edit(ProseVersion(text: shown), into: ["REV s\nl1\nl2\nappended"])
        let saved = ProseMerge.applyEdit(shown: shown, edited: "REV 1\nl1\nl2\n", onto: appended)
        XCTAssertEqual(saved.text, "REV 1\nl1\nl2\nappended\n")
        XCTAssertTrue(saved.deletedParagraphs.contains(Paragraphs.paragraphHash("REV s\nl1\nl2\nappended")), "the appended-to version is superseded")
        // Prose: a sentence line added under a paragraph the save revised.
        let note = "The river rose in the night and we moved the boats up the bank."
        let added = edit(ProseVersion(text: note + "\n"), into: [note + "\nBy morning it was falling again."])
        let revised = ProseMerge.applyEdit(shown: note + "\n", edited: "The river rose overnight and we moved the boats up the bank.\n", onto: added)
        XCTAssertEqual(revised.text, "The river rose overnight and we moved the boats up the bank.\nBy morning it was falling again.\n")
        // A paragraph the save did not rewrite keeps its appended lines where they are.
        let kept = ProseMerge.applyEdit(shown: "a\n\nb\n", edited: "a\n\nb\n\nc\n", onto: edit(ProseVersion(text: "a\n\nb\n"), into: ["a\nmore", "b"]))
        XCTAssertEqual(kept.text, "a\nmore\n\nb\n\nc\n")
    }

    /// A log appended to on two devices at once, round after round
    /// (`echo … >> log.md` on both): the merge keeps both versions of the
    /// paragraph whole, and the next local append joins them, so each round
    /// leaves at most one extra copy, never a copy of every earlier copy.
    func testALogAppendedToOnTwoDevicesAtOnceDoesNotGrowCopies() {
        func append(_ version: ProseVersion, _ line: String) -> ProseVersion {
            ProseMerge.applyEdit(shown: version.text, edited: String(version.text.dropLast()) + "\n" + line + "\n", onto: version)
        }
        var a = ProseVersion(text: "# log\n"), b = a
        for round in 1...6 {
            a = append(a, "a\(round)")
            b = append(b, "b\(round)")
            let merged = ProseMerge.merge(a, b)
            XCTAssertEqual(merged, ProseMerge.merge(b, a))
            a = merged
            b = merged
        }
        let lines = a.text.split(separator: "\n").filter { !$0.isEmpty }
        // One round's copy at most: the header and the first five rounds'
        // lines twice (the last merge's two versions), never more.
        XCTAssertLessThanOrEqual(lines.filter { $0 == "# log" }.count, 2, a.text)
        XCTAssertLessThanOrEqual(lines.count, 2 * 13, a.text)
        for round in 1...6 { XCTAssertTrue(lines.contains("a\(round)") && lines.contains("b\(round)"), a.text) }
        // The next append on either device leaves every line once, the new one last.
        let tidy = append(a, "a7")
        XCTAssertEqual(tidy.paragraphs.count, 1, tidy.text)
        let tidyLines = tidy.text.split(separator: "\n").map(String.init)
        XCTAssertEqual(tidyLines.count, 14, tidy.text)
        XCTAssertEqual(Set(tidyLines).count, 14, tidy.text)
        XCTAssertEqual(tidyLines.first, "# log")
        XCTAssertEqual(tidyLines.last, "a7")
        // Two paragraphs that only start alike, with no common original
        // rewritten, stay as they are.
        let alike = "TODO:\n- milk\n\nTODO:\n- bread\n"
        let kept = ProseMerge.applyEdit(shown: alike, edited: alike + "\nmore\n", onto: ProseVersion(text: alike))
        XCTAssertEqual(kept.text, alike + "\nmore\n")
    }

    /// The same log appended to on three devices at once: the merge keeps
    /// three versions of the paragraph, and the next local append must join
    /// all three, not the first two only (the third, left beside the join,
    /// was copied again every round: 113 lines for 25 after 8 rounds).
    func testALogAppendedToOnThreeDevicesAtOnceDoesNotGrowCopies() {
        func append(_ version: ProseVersion, _ line: String) -> ProseVersion {
            ProseMerge.applyEdit(shown: version.text, edited: String(version.text.dropLast()) + "\n" + line + "\n", onto: version)
        }
        var devices = Array(repeating: ProseVersion(text: "# log\n"), count: 3)
        for round in 1...6 {
            for d in devices.indices { devices[d] = append(devices[d], "\(d)-\(round)") }
            let merged = ProseMerge.merge(ProseMerge.merge(devices[0], devices[1]), devices[2])
            XCTAssertEqual(merged, ProseMerge.merge(devices[2], ProseMerge.merge(devices[1], devices[0])))
            devices = [merged, merged, merged]
        }
        let lines = devices[0].text.split(separator: "\n").filter { !$0.isEmpty }
        // One round's copies at most: the last merge's three versions.
        XCTAssertLessThanOrEqual(lines.filter { $0 == "# log" }.count, 3, devices[0].text)
        XCTAssertLessThanOrEqual(lines.count, 3 * 19, devices[0].text)
        for round in 1...6 { for d in 0..<3 { XCTAssertTrue(lines.contains("\(d)-\(round)"), devices[0].text) } }
        let tidy = append(devices[1], "1-7")
        XCTAssertEqual(tidy.paragraphs.count, 1, tidy.text)
        let tidyLines = tidy.text.split(separator: "\n").map(String.init)
        XCTAssertEqual(tidyLines.count, 20, tidy.text)
        XCTAssertEqual(Set(tidyLines).count, 20, tidy.text)
        XCTAssertEqual(tidyLines.first, "# log")
        XCTAssertEqual(tidyLines.last, "1-7")
    }

    func testAppendedSentenceRevisionDoesNotComeBackBesideItsOriginal() {
        let start = ProseVersion(text: base)
        let longer = evening + " Dreamt of the sea."
        let phone = edit(start, into: [morning, lunch, longer])
        let tablet = edit(start, into: [morning, lunch, evening])
        XCTAssertEqual(assertCommutes(phone, tablet).paragraphs, [morning, lunch, longer])
    }

    func testTwoDifferentRevisionsOfOneParagraphBothSurvive() {
        let start = ProseVersion(text: base)
        let phoneLunch = lunch + " We split the bill."
        let laptopLunch = "Lunch with Mara at the corner place; she starts the new job Monday, finally."
        let phone = edit(start, into: [morning, phoneLunch, evening])
        let laptop = edit(start, into: [morning, laptopLunch, evening])
        let merged = assertCommutes(phone, laptop)
        XCTAssertEqual(Set(merged.paragraphs), [morning, phoneLunch, laptopLunch, evening], "neither saw the other: an extra copy, no lost words")
        XCTAssertFalse(merged.paragraphs.contains(lunch))
    }

    func testDeleteWhileOtherEditsElsewhere() {
        let start = ProseVersion(text: base)
        let phone = edit(start, into: [morning, evening])
        let newMorning = "Woke early and watched the fog lift off the valley, coffee in hand."
        let laptop = edit(start, into: [newMorning, lunch, evening])
        let (merged, report) = ProseMerge.mergeWithReport(phone, laptop)
        XCTAssertEqual(merged, ProseMerge.merge(laptop, phone))
        XCTAssertEqual(merged.paragraphs, [newMorning, evening])
        XCTAssertEqual(report.droppedAsDeleted, [Paragraphs.paragraphHash(lunch)])
        XCTAssertEqual(report.droppedAsRevised, [Paragraphs.paragraphHash(morning)])
    }

    func testRecordWipedToEmptyIsRestoredByTheUnion() {
        let full = ProseVersion(text: base)
        let wiped = ProseVersion(text: "")
        XCTAssertEqual(assertCommutes(full, wiped), full)
        XCTAssertEqual(ProseMerge.merge(full, ProseVersion(text: "\n  \n")), full)

        let restored = ProseMerge.restoreWithReport(shadow: base, incoming: wiped)
        XCTAssertEqual(restored.version, full)
        XCTAssertEqual(restored.report.keptFromA.count, 3)
    }

    func testFalseDeletionTrap() {
        // The editor showed two paragraphs; while the user typed, a sync
        // import added a third paragraph to the record underneath.
        let shown = Paragraphs.join([morning, lunch])
        let record = ProseVersion(text: Paragraphs.join([morning, lunch, "Imported: Mara's address."]))
        let edited = Paragraphs.join([morning, lunch, "Typed: bought flowers."])

        // Diffing against the live record would tombstone the import, and
        // the tombstone would kill it on every device.
        XCTAssertEqual(ProseMerge.deletions(shown: record.text, edited: edited), [Paragraphs.paragraphHash("Imported: Mara's address.")])
        // Diffing against what was shown finds no deletion at all.
        XCTAssertEqual(ProseMerge.deletions(shown: shown, edited: edited), [])

        let saved = ProseMerge.applyEdit(shown: shown, edited: edited, onto: record)
        // The import goes right after its neighbour in the record.
        XCTAssertEqual(saved.paragraphs, [morning, lunch, "Imported: Mara's address.", "Typed: bought flowers."])
        XCTAssertEqual(saved.deletedParagraphs, [])
    }

    func testIncomingClobberIsRestoredFromTheShadowButTombstonesHold() {
        let shadow = Paragraphs.join([morning, lunch, evening, "Mine: wrote to Jo."])
        // Another device overwrote the record with its own text: it knew a
        // deliberate deletion of `evening`, never saw "Mine", and rewrote lunch.
        let revisedLunch = lunch + " She seemed happy."
        let incoming = ProseVersion(text: Paragraphs.join([morning, revisedLunch]),
                                    deletedParagraphs: [Paragraphs.paragraphHash(evening), Paragraphs.paragraphHash(lunch)])
        let (restored, report) = ProseMerge.restoreWithReport(shadow: shadow, incoming: incoming)
        XCTAssertEqual(restored.paragraphs, [morning, revisedLunch, "Mine: wrote to Jo."])
        XCTAssertEqual(restored.deletedParagraphs, incoming.deletedParagraphs)
        XCTAssertEqual(report.keptFromA, [Paragraphs.paragraphHash("Mine: wrote to Jo.")])
        XCTAssertEqual(report.droppedAsRevised, [Paragraphs.paragraphHash(lunch)])
        XCTAssertEqual(report.droppedAsDeleted, [Paragraphs.paragraphHash(evening)])
    }

    func testRestoredParagraphsGoAfterTheirShadowNeighbour() {
        let incoming = ProseVersion(text: Paragraphs.join(["one", "three"]))
        let restored = ProseMerge.restore(shadow: Paragraphs.join(["one", "two", "three", "four"]), incoming: incoming)
        XCTAssertEqual(restored.paragraphs, ["one", "two", "three", "four"])
        let leading = ProseMerge.restore(shadow: Paragraphs.join(["zero", "one"]), incoming: incoming)
        XCTAssertEqual(leading.paragraphs, ["zero", "one", "three"])
    }

    func testClassifyEditSeparatesDeletionsFromRewrites() {
        let edited = Paragraphs.join([morning + " Cold.", evening])
        let summary = ProseMerge.classifyEdit(shown: base, edited: edited)
        XCTAssertEqual(summary.revised, [Paragraphs.paragraphHash(morning)])
        XCTAssertEqual(summary.deleted, [Paragraphs.paragraphHash(lunch)])
        XCTAssertEqual(ProseMerge.deletions(shown: base, edited: edited), summary.tombstones)
        XCTAssertEqual(ProseMerge.deletions(shown: base, edited: base), [])
        XCTAssertEqual(ProseMerge.deletions(shown: "", edited: base), [])
    }

    func testDuplicatesKeepTheirMultiplicity() {
        let twice = ProseVersion(text: Paragraphs.join(["Amen.", morning, "Amen."]))
        let once = ProseVersion(text: Paragraphs.join(["Amen.", morning, evening]))
        let merged = assertCommutes(twice, once)
        XCTAssertEqual(merged.paragraphs.filter { $0 == "Amen." }.count, 2)
        XCTAssertEqual(merged.paragraphs.filter { $0 == evening }.count, 1)
        XCTAssertEqual(ProseMerge.merge(twice, twice).paragraphs.count, 3)
        // Removing one copy is no tombstone: the identity is still shown.
        XCTAssertEqual(ProseMerge.deletions(shown: twice.text, edited: Paragraphs.join(["Amen.", morning])), [])
    }

    func testTombstoneRemovesEveryCopyAndWinsOverEitherSide() {
        let holder = ProseVersion(text: Paragraphs.join([morning, lunch, lunch]))
        let deleter = ProseVersion(text: morning, deletedParagraphs: [Paragraphs.paragraphHash(lunch)])
        XCTAssertEqual(assertCommutes(holder, deleter).paragraphs, [morning])
        // A side's own text holding a paragraph it tombstoned (typed again)
        // is normalized away too: the tombstone is the fleet-wide decision.
        XCTAssertEqual(ProseVersion(text: lunch, deletedParagraphs: [Paragraphs.paragraphHash(lunch)]).normalized().text, "")
    }

    /// A to-do line ticked, then unticked (typed again, byte for byte) on
    /// the phone, while the laptop, which took in the tick, adds a line:
    /// the unticked line outlives the laptop's copy of the tick's tombstone.
    /// Unticked again later on the laptop after it heard of it, the line
    /// goes, whatever the phone does meanwhile.
    func testALineTypedAgainAfterItsDeletionOutlivesAConcurrentVersionCarryingTheDeletion() {
        let open = "- [ ] buy milk", done = "- [x] buy milk", note = "Called Dad."
        let start = ProseVersion(text: Paragraphs.join([morning, open]))
        let ticked = edit(start, into: [morning, done])
        let unticked = edit(ticked, into: [morning, open])
        let laptop = edit(ticked, into: [morning, done, note])
        let merged = assertCommutes(unticked, laptop)
        XCTAssertEqual(merged.paragraphs, [morning, open, note], "the phone's unticking stands, the laptop's line joins it")
        // The laptop, shown the merge, removes the line: a later deletion.
        let removed = edit(merged, into: [morning, note])
        let phoneAgain = edit(unticked, into: [morning, open, "Phone: more milk."])
        XCTAssertEqual(assertCommutes(removed, phoneAgain).paragraphs, [morning, note, "Phone: more milk."],
                       "a deletion after the typing outranks it")
        // And typed a third time, after that deletion: back for good.
        let third = edit(ProseMerge.merge(removed, phoneAgain), into: [morning, note, "Phone: more milk.", open])
        XCTAssertEqual(assertCommutes(third, removed).paragraphs, [morning, note, "Phone: more milk.", open])
    }

    /// A version holds the plain identity of a paragraph exactly while it
    /// deletes it (what quire versions that know nothing of ranks read):
    /// typed again, the identity goes and a revival marker takes its place.
    func testTheFirstDeletionsMarkerIsHeldOnlyWhileTheParagraphIsDeleted() {
        let start = ProseVersion(text: Paragraphs.join([morning, lunch]))
        let deleted = edit(start, into: [morning])
        XCTAssertEqual(deleted.deletedParagraphs, [Paragraphs.paragraphHash(lunch)])
        let typed = edit(deleted, into: [morning, lunch])
        XCTAssertFalse(typed.deletedParagraphs.contains(Paragraphs.paragraphHash(lunch)))
        XCTAssertEqual(typed.deletedParagraphs.count, 1, "one revival marker")
        XCTAssertEqual(ParagraphTombstones(typed.deletedParagraphs).rank(of: Paragraphs.paragraphHash(lunch)), 2)
        let again = edit(typed, into: [morning])
        XCTAssertTrue(again.deletedParagraphs.contains(Paragraphs.paragraphHash(lunch)))
        XCTAssertEqual(ParagraphTombstones(again.deletedParagraphs).rank(of: Paragraphs.paragraphHash(lunch)), 3)
        XCTAssertEqual(ParagraphTombstones(again.deletedParagraphs).rank(of: Paragraphs.paragraphHash(morning)), 0)
    }

    func testWhitespaceOnlyDifferencesAndLineEndingsConverge() {
        let unix = ProseVersion(text: "alpha\nbeta\n\ngamma\n")
        let windows = ProseVersion(text: "alpha\r\nbeta\r\n\r\n\r\ngamma")
        XCTAssertEqual(assertCommutes(unix, windows), unix)
        XCTAssertEqual(windows.normalized(), unix)

        // Trailing spaces: one identity, written with the byte-greatest copy.
        let spaced = ProseVersion(text: "alpha  \nbeta\n\ngamma\n")
        let merged = assertCommutes(unix, spaced)
        XCTAssertEqual(merged.paragraphs, ["alpha  \nbeta", "gamma"])
    }

    func testOrderPutsTheOtherSidesExtrasAfterTheirNeighbour() {
        let x = ProseVersion(text: Paragraphs.join(["a", "b", "c", "d"]))
        let y = ProseVersion(text: Paragraphs.join(["a", "new", "b", "c"]))
        XCTAssertEqual(assertCommutes(x, y).paragraphs, ["a", "new", "b", "c", "d"])
        let z = ProseVersion(text: Paragraphs.join(["first", "a", "b"]))
        XCTAssertEqual(assertCommutes(x, z).paragraphs, ["first", "a", "b", "c", "d"])
    }

    func testMergeIsByteIdenticalForUnicodeEquivalentButDifferentBytes() {
        let composed = ProseVersion(text: "caf\u{E9}\n")
        let decomposed = ProseVersion(text: "cafe\u{301}\n")
        let merged = assertCommutes(composed, decomposed)
        XCTAssertEqual(merged.paragraphs.count, 2, "different bytes are different paragraphs; neither is dropped")
        XCTAssertNotEqual(composed, decomposed, "versions compare by bytes")
    }
}
