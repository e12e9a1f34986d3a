import XCTest
import QuireCore
@testable import QuireStore

final class ProseStoreTests: XCTestCase {
    func body(_ row: Row?) -> String {
        guard case .note(let n)? = row?.content else { return "<none>" }
        return String(decoding: n.body ?? [], as: UTF8.self)
    }

    func noteContent(_ text: String, title: String = "n") -> RowContent {
        .note(Note(title: title, body: Array(text.utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
    }

    /// A sibling's version of the note `key`, with `paragraph` after the stored text, lands.
    func siblingAdds(_ paragraph: String, to key: RowKey, in s: ReplicaStore) throws {
        var remote = try XCTUnwrap(try s.row(.notebook, key))
        if case .note(var n)? = remote.content {
            n.body = (n.body ?? []) + Array("\n\(paragraph)\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            remote = remote.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(n))
        }
        try confirmHeld(s)
        try s.apply([remote])
    }

    func testDeletionIsComputedAgainstWhatWasShownNotTheLiveRecord() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("alpha one\n\nbeta two\n"))
        let shown = Array("alpha one\n\nbeta two\n".utf8)
        // A sibling's version lands while the file is open: it adds a paragraph.
        try siblingAdds("gamma from the sibling", to: r.key, in: s)
        // The editor saves what it showed, minus "beta two" (a deliberate deletion).
        let saved = try s.saveProse(noteContent("alpha one\n"), key: r.key, shown: shown)
        let text = body(saved)
        XCTAssertTrue(text.contains("gamma from the sibling"), "a paragraph the editor never showed is not a deletion: \(text)")
        XCTAssertFalse(text.contains("beta two"), text)
        guard case .note(let n)? = saved.content else { return XCTFail() }
        XCTAssertEqual(n.deletedParagraphs.count, 1, "exactly one paragraph tombstone")
        XCTAssertEqual(n.deletedParagraphs.first, ParagraphHash(paragraph: "beta two").bytes)
    }

    /// A save with no shown text kept stands on the stored text only while
    /// that is the version it was shown: a sibling's version stored in
    /// between (the sync engine commits between the mount's read of the
    /// version and its save) is no deletion; at that version the save's
    /// deletions count as before.
    func testASaveShownAnEarlierStoredVersionDeletesNothingOfALaterOne() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("alpha one\n\nbeta two\n"))
        let shownVersion = try XCTUnwrap(try s.changeNumber(.notebook, r.key))
        try siblingAdds("gamma from the sibling", to: r.key, in: s)
        let saved = try s.putFromMount(noteContent("alpha one\n\nbeta two\n\ndelta typed here\n"), key: r.key,
                                       shownVersion: shownVersion).row
        XCTAssertEqual(body(saved), "alpha one\n\nbeta two\n\ngamma from the sibling\n\ndelta typed here\n",
                       "the sibling's paragraph stays beside the new one")
        // Shown the version stored now, the same save deletes what it left out.
        let current = try XCTUnwrap(try s.changeNumber(.notebook, r.key))
        let again = try s.putFromMount(noteContent("alpha one\n\ndelta typed here\n"), key: r.key, shownVersion: current).row
        XCTAssertEqual(body(again), "alpha one\n\ndelta typed here\n")
    }

    /// A paragraph rewritten, then typed again as it was (a to-do line
    /// ticked and unticked), while a sibling that took in the rewrite adds
    /// a paragraph: the typing came after the deletion the sibling carries,
    /// and the paragraph stays at their merge.
    func testAParagraphTypedAgainOutlivesASiblingCarryingItsDeletion() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("x\n\n- [ ] milk\n"))
        _ = try s.saveProse(noteContent("x\n\n- [x] milk\n"), key: r.key, shown: Array("x\n\n- [ ] milk\n".utf8))
        var remote = try XCTUnwrap(try s.row(.notebook, r.key))
        if case .note(var n)? = remote.content {
            n.body = Array("x\n\n- [x] milk\n\ny from the sibling\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            remote = remote.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(n))
        }
        _ = try s.saveProse(noteContent("x\n\n- [ ] milk\n"), key: r.key, shown: Array("x\n\n- [x] milk\n".utf8))
        try confirmHeld(s)
        try s.apply([remote])
        XCTAssertEqual(body(try s.row(.notebook, r.key)), "x\n\n- [ ] milk\n\ny from the sibling\n")
    }

    /// A paragraph deleted and typed again (an undo, a file emptied and
    /// written anew) keeps no tombstone of its own in the new version, so a
    /// sibling's concurrent edit, which still holds the paragraph, does not
    /// take it down at the merge; a paragraph the writer was shown and left
    /// in after a sibling deleted it stays deleted.
    func testAParagraphTypedAgainOutlivesAConcurrentEdit() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("keep one\n\nkeep two\n\nkeep three\n"))
        let base = try XCTUnwrap(try s.row(.notebook, r.key))
        _ = try s.saveProse(noteContent("keep one\n\nkeep three\n"), key: r.key)
        let again = try s.saveProse(noteContent("keep one A\n\nkeep two\n\nkeep three\n"), key: r.key)
        guard case .note(let n)? = again.content else { return XCTFail() }
        XCTAssertFalse(n.deletedParagraphs.contains(ParagraphHash(paragraph: "keep two").bytes), "typed again: no tombstone of its own")
        XCTAssertTrue(n.deletedParagraphs.contains(ParagraphHash(paragraph: "keep one").bytes), "the rewritten one stays tombstoned")
        // The sibling rewrote the third paragraph of the first version, concurrently.
        var remote = base
        if case .note(var sibling)? = remote.content {
            sibling.body = Array("keep one\n\nkeep two\n\nkeep three B\n".utf8)
            sibling.contentHash = Note.bodyDigest(sibling.body!)
            sibling.deletedParagraphs = [ParagraphHash(paragraph: "keep three").bytes]
            remote = remote.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(sibling))
        }
        try confirmHeld(s)
        try s.apply([remote])
        let merged = body(try s.row(.notebook, r.key))
        XCTAssertEqual(merged.components(separatedBy: "\n\n").map { $0.trimmingCharacters(in: .newlines) }.sorted(),
                       ["keep one A", "keep three B", "keep two"], merged)

        // A sibling deletes a paragraph; an editor shown the text before
        // saves it whole with that paragraph still in: it stays deleted.
        let q = try s.saveProse(noteContent("one\n\ngone\n", title: "q"))
        let shown = Array("one\n\ngone\n".utf8)
        var deletion = try XCTUnwrap(try s.row(.notebook, q.key))
        if case .note(var sibling)? = deletion.content {
            sibling.body = Array("one\n".utf8)
            sibling.contentHash = Note.bodyDigest(sibling.body!)
            sibling.deletedParagraphs = [ParagraphHash(paragraph: "gone").bytes]
            deletion = deletion.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(sibling))
        }
        try s.apply([deletion])
        let saved = body(try s.saveProse(noteContent("one\n\ngone\n\nmine\n", title: "q"), key: q.key, shown: shown))
        XCTAssertFalse(saved.contains("gone"), saved)
        XCTAssertTrue(saved.contains("mine"), saved)
    }

    /// RENAME_EXCHANGE of two notes is a prose save of each: the text each
    /// name had is deleted with paragraph tombstones, so a sibling's
    /// concurrent edit of the old text does not bring it back beside the
    /// swapped-in text (a plain put wrote no tombstones).
    func testAnExchangeTombstonesTheTextEachNoteHad() throws {
        let s = try makeStore(temporaryDirectory())
        let a = try s.saveProse(noteContent("alpha para\n", title: "a"))
        let b = try s.saveProse(noteContent("beta para\n", title: "b"))
        var remote = try XCTUnwrap(try s.row(.notebook, a.key))   // the sibling edits a's old text
        if case .note(var n)? = remote.content {
            n.body = Array("alpha para\n\nsibling para\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            remote = remote.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(n))
        }
        _ = try s.putAllFromMount([(noteContent("beta para\n", title: "a"), a.key), (noteContent("alpha para\n", title: "b"), b.key)])
        try confirmHeld(s)
        try s.apply([remote])
        let merged = body(try s.row(.notebook, a.key))
        XCTAssertTrue(merged.contains("beta para") && merged.contains("sibling para"), merged)
        XCTAssertFalse(merged.contains("alpha para"), "the exchanged-away text stays away: \(merged)")
        XCTAssertEqual(body(try s.row(.notebook, b.key)), "alpha para\n")
    }

    func testUnchangedBaselineKeepsTheUsersBytes() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("one\n\n\n\ntwo   \n"))
        XCTAssertEqual(body(try s.row(.notebook, r.key)), "one\n\n\n\ntwo   \n")
        let again = try s.saveProse(noteContent("one\n\n\n\ntwo   \nmore\n"), key: r.key, shown: Array("one\n\n\n\ntwo   \n".utf8))
        XCTAssertEqual(body(again), "one\n\n\n\ntwo   \nmore\n")
    }

    func testAClobberWithoutDeletionsIsRestoredFromTheShadow() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("kept words\n\nmine alone\n"))
        // A sibling that never computed deletions writes over the body.
        var clobber = try XCTUnwrap(try s.row(.notebook, r.key))
        if case .note(var n)? = clobber.content {
            n.body = Array("kept words\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            clobber = clobber.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(n))
        }
        try confirmHeld(s)
        try s.apply([clobber])
        let now = try XCTUnwrap(try s.row(.notebook, r.key))
        XCTAssertTrue(body(now).contains("mine alone"), "restored from the shadow: \(body(now))")
        XCTAssertEqual(now.heads.map(\.dot.actor.device), [deviceA], "the restoration is a local edit that syncs")
        XCTAssertEqual(try s.mergeHistory(.notebook, r.key).count, 1)
        // A deliberate deletion (with its tombstone) is not restored.
        var delete = now
        if case .note(var n)? = delete.content {
            n.body = Array("kept words\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            n.deletedParagraphs = [ParagraphHash(paragraph: "mine alone").bytes]
            delete = delete.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(n))
        }
        try confirmHeld(s)
        try s.apply([delete])
        XCTAssertEqual(body(try s.row(.notebook, r.key)), "kept words\n")
        XCTAssertEqual(try s.roots(), try s.recomputedRoots())
    }

    /// A shadow equal to the stored text is a mark, not a second copy; it
    /// still restores a clobber, and a write that is not a prose save (or a
    /// sibling's text) first gives it the old text as its own copy.
    func testShadowsEqualToTheTextAreMarksAndKeepTheirMeaning() throws {
        let dir = temporaryDirectory()
        let s = try makeStore(dir)
        var keys: [RowKey] = []
        for i in 0..<50 { keys.append(try s.saveProse(noteContent("paragraph \(i)\n\nand another\n")).key) }
        let c = try Connection(path: dir + "/replica.sqlite")
        XCTAssertEqual(try c.queryOne("SELECT count(*), coalesce(sum(length(text)), 0), sum(same) FROM shadows") { [$0.int(0), $0.int(1), $0.int(2)] },
                       [50, 0, 50], "no note body kept twice")
        XCTAssertEqual(try s.shadow(.notebook, keys[0]), Array("paragraph 0\n\nand another\n".utf8))
        // A plain put keeps the shadow at the saved text, now as a copy.
        try s.put(noteContent("replaced\n"), key: keys[1])
        XCTAssertEqual(try s.shadow(.notebook, keys[1]), Array("paragraph 1\n\nand another\n".utf8))
        XCTAssertEqual(try c.queryOne("SELECT same FROM shadows WHERE key = ?", [.blob(keys[1].bytes)]) { $0.int(0) }, 0)
        // A sibling's clobber of a marked row is restored from the mark's text.
        var clobber = try XCTUnwrap(try s.row(.notebook, keys[2]))
        if case .note(var n)? = clobber.content {
            n.body = Array("paragraph 2\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            clobber = clobber.edited(by: Actor(device: deviceB, incarnation: 1), to: .note(n))
        }
        try confirmHeld(s)
        try s.apply([clobber])
        let restored = body(try s.row(.notebook, keys[2]))
        XCTAssertTrue(restored.contains("and another"), restored)
        XCTAssertEqual(try s.shadow(.notebook, keys[2]).map { String(decoding: $0, as: UTF8.self) }, restored)
    }

    /// `echo … >> log.md` on this device after it and a sibling appended
    /// to the log at once: the save saw nothing land underneath, and had
    /// kept its bytes exactly, so the two versions of the paragraph were
    /// never joined and every round copied them again (mount/README.md
    /// promises the next save joins them).
    func testAnAppendAfterTwoDevicesAppendedAtOnceJoinsTheVersions() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("# log\n"))
        let original = try XCTUnwrap(try s.row(.notebook, r.key))
        _ = try s.saveProse(noteContent("# log\nline 1 A\n"), key: r.key, shown: Array("# log\n".utf8))
        var siblings: [Row] = []
        for (device, line) in [(deviceB, "line 1 B")] {
            guard case .note(var n)? = original.content else { return XCTFail() }
            n.body = Array("# log\n\(line)\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            n.deletedParagraphs = [ParagraphHash(paragraph: "# log").bytes]
            siblings.append(original.edited(by: Actor(device: device, incarnation: 1), to: .note(n)))
        }
        try confirmHeld(s)
        try s.apply(siblings)
        let stored = body(try s.row(.notebook, r.key))
        XCTAssertEqual(stored.components(separatedBy: "# log").count - 1, 2, stored)
        let version = try XCTUnwrap(try s.changeNumber(.notebook, r.key))
        let saved = try s.putFromMount(noteContent(stored + "line 2 A\n"), key: r.key, shownVersion: version).row
        let lines = body(saved).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 4, body(saved))
        XCTAssertEqual(Set(lines), ["# log", "line 1 A", "line 1 B", "line 2 A"], body(saved))
        XCTAssertEqual(lines.first, "# log")
        XCTAssertEqual(lines.last, "line 2 A")
    }

    /// The same after three devices appended at once: all three versions
    /// join, not the first two only.
    func testAnAppendAfterThreeDevicesAppendedAtOnceJoinsTheVersions() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(noteContent("# log\n"))
        let original = try XCTUnwrap(try s.row(.notebook, r.key))
        _ = try s.saveProse(noteContent("# log\nline 1 A\n"), key: r.key, shown: Array("# log\n".utf8))
        var siblings: [Row] = []
        for (device, line) in [(deviceB, "line 1 B"), (DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!, "line 1 C")] {
            guard case .note(var n)? = original.content else { return XCTFail() }
            n.body = Array("# log\n\(line)\n".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            n.deletedParagraphs = [ParagraphHash(paragraph: "# log").bytes]
            siblings.append(original.edited(by: Actor(device: device, incarnation: 1), to: .note(n)))
        }
        try confirmHeld(s)
        try s.apply(siblings)
        let stored = body(try s.row(.notebook, r.key))
        let version = try XCTUnwrap(try s.changeNumber(.notebook, r.key))
        let saved = try s.putFromMount(noteContent(stored + "line 2 A\n"), key: r.key, shownVersion: version).row
        let lines = body(saved).split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(lines), ["# log", "line 1 A", "line 1 B", "line 1 C", "line 2 A"], body(saved))
        XCTAssertEqual(lines.count, 5, body(saved))
    }

    func testAWipedRecordRestoresItself() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.saveProse(.saga(SagaEntry(date: "2026-05-05", text: Array("morning run\n\nevening rain\n".utf8), updatedAt: Timestamp(seconds: 0))))
        var wiped = try XCTUnwrap(try s.row(.saga, r.key))
        wiped = wiped.edited(by: Actor(device: deviceB, incarnation: 1), to: .saga(SagaEntry(date: "2026-05-05", text: [], updatedAt: Timestamp(seconds: 9))))
        try confirmHeld(s)
        try s.apply([wiped])
        guard case .saga(let day)? = try s.row(.saga, r.key)?.content else { return XCTFail() }
        XCTAssertTrue(String(decoding: day.text, as: UTF8.self).contains("evening rain"))
        XCTAssertTrue(String(decoding: day.text, as: UTF8.self).contains("morning run"))
    }
}
