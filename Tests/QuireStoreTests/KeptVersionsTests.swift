import Foundation
import QuireCore
@testable import QuireStore
import XCTest

/// Trash and earlier versions in the store: what a write replaces is kept
/// on this device (real SQLite files), within bounds, and comes back as a
/// local edit that syncs.
final class KeptVersionsTests: XCTestCase {
    private func text(_ s: ReplicaStore, _ id: Int64) throws -> String { String(decoding: try s.keptBytes(id), as: UTF8.self) }

    private func body(_ row: Row?) -> String? {
        guard case .note(let n)? = row?.content, let body = n.body else { return nil }
        return String(decoding: body, as: UTF8.self)
    }

    private func edit(_ s: ReplicaStore, _ key: RowKey, body: String? = nil, title: String? = nil, tags: [String]? = nil,
                      folder: RowKey?? = nil) throws -> Row {
        guard case .note(var n)? = try s.row(.notebook, key)?.content else { throw StoreError(.notFound, "no note") }
        if let body { n.body = Array(body.utf8) }
        if let title { n.title = title }
        if let tags { n.tags = tags }
        if let folder { n.folder = folder }
        return try s.put(.note(n), key: key)
    }

    private func folder(_ s: ReplicaStore, _ title: String, in parent: RowKey? = nil) throws -> Row {
        let zero = Timestamp(seconds: 0)
        return try s.put(.note(Note(title: title, body: [], createdAt: zero, updatedAt: zero, kind: .folder, folder: parent)))
    }

    private func attachment(_ title: String, _ bytes: [UInt8], in parent: RowKey? = nil) -> RowContent {
        let zero = Timestamp(seconds: 0)
        return .note(Note(title: title, body: bytes, createdAt: zero, updatedAt: zero, kind: .file, folder: parent))
    }

    /// Every notebook row of `from`, as a sync import would hand them over.
    private func sync(_ from: ReplicaStore, into to: ReplicaStore) throws {
        try to.apply(try from.rows(.notebook, from: [], to: nil) + (try from.tombstones(.notebook)))
    }

    // MARK: What is kept

    /// What the mount reads when a removed file is created again: the
    /// text of this device's deletion, only while that is the row's last kept text.
    func testTheDeletedTextIsTheTrashsCopyOfThisDevicesDeletion() throws {
        let s = try makeStore(temporaryDirectory(), clock: ManualClock())
        let row = try s.put(note("Ideas", "first words\n"))
        XCTAssertNil(try s.deletedText(row.key), "live")
        _ = try edit(s, row.key, body: "second words\n")
        XCTAssertNil(try s.deletedText(row.key), "an edit's kept text is no deletion")
        try s.delete(.notebook, row.key)
        XCTAssertEqual(try s.deletedText(row.key), Array("second words\n".utf8))
        let unkept = try s.put(note("Other", "other words\n"))
        s.keptLimits = KeptLimits(days: 0)
        try s.delete(.notebook, unkept.key)
        XCTAssertNil(try s.deletedText(unkept.key), "the trash is off")
    }

    func testALocalEditKeepsTheTextItReplacedAndADeleteGoesToTheTrash() throws {
        let clock = ManualClock()
        let s = try makeStore(temporaryDirectory(), clock: clock)
        let row = try s.put(note("Ideas", "first words\n", tags: ["draft"]))
        XCTAssertEqual(try s.keptVersions(), [], "a new row replaces nothing")
        clock.advance(60)
        _ = try edit(s, row.key, body: "second words\n")
        var kept = try s.keptVersions()
        XCTAssertEqual(kept.count, 1)
        XCTAssertEqual(kept[0].reason, .editedHere)
        XCTAssertEqual(kept[0].place, .versions)
        XCTAssertEqual(kept[0].title, "Ideas")
        XCTAssertEqual(kept[0].tags, ["draft"])
        XCTAssertEqual(kept[0].size, 12)
        XCTAssertEqual(kept[0].keptAt.seconds, 1_800_000_060)
        XCTAssertEqual(try text(s, kept[0].id), "first words\n")

        clock.advance(60)
        try s.delete(.notebook, row.key)
        kept = try s.keptVersions()
        XCTAssertEqual(kept.map(\.reason), [.editedHere, .deletedHere])
        XCTAssertEqual(kept.map(\.place), [.versions, .trash], "the deletion of a row that is gone shows in the trash")
        XCTAssertEqual(try text(s, kept[1].id), "second words\n")
        XCTAssertFalse(kept[1].isRowLive)
        XCTAssertTrue(kept[1].isRowPresent)
        let usage = try s.keptUsage()
        XCTAssertEqual(usage.trashFiles, 1)
        XCTAssertEqual(usage.versions, 1)
        XCTAssertEqual(usage.trashBytes + usage.versionsBytes, 25)
    }

    func testARetitleAMoveTagsAndOtherNamespacesKeepNothing() throws {
        let s = try makeStore(temporaryDirectory())
        let projects = try folder(s, "Projects")
        let row = try s.put(note("Ideas", "words\n"))
        _ = try edit(s, row.key, title: "Better ideas")
        _ = try edit(s, row.key, tags: ["x"])
        _ = try edit(s, row.key, folder: .some(projects.key))
        _ = try edit(s, projects.key, title: "Work")          // a folder's rename
        try s.put(.saga(SagaEntry(date: "2026-01-02", text: Array("a day\n".utf8), updatedAt: Timestamp(seconds: 0))))
        try s.put(.saga(SagaEntry(date: "2026-01-02", text: Array("another day\n".utf8), updatedAt: Timestamp(seconds: 0))))
        // An empty text replaced (a shell's `>` commits one first) is not worth keeping.
        let empty = try s.put(note("Scratch", ""))
        _ = try edit(s, empty.key, body: "filled\n")
        XCTAssertEqual(try s.keptVersions(), [])
        // The text changes: kept, under the folder it is in now.
        _ = try edit(s, row.key, body: "new words\n")
        let kept = try s.keptVersions().filter { $0.key == row.key }
        XCTAssertEqual(kept.map(\.title), ["Better ideas"])
        XCTAssertEqual(kept.map(\.folderPath), [["Work"]])
        XCTAssertEqual(kept.map(\.folderKey), [projects.key])
    }

    func testAFolderPathIsKeptEvenWhenTheFolderWentFirst() throws {
        let s = try makeStore(temporaryDirectory())
        let projects = try folder(s, "Projects")
        let year = try folder(s, "2026", in: projects.key)
        let idea = try s.put(note("idea", "an idea\n"))
        _ = try edit(s, idea.key, folder: .some(year.key))
        let photo = try s.put(attachment("photo.jpg", [0xFF, 0xD8, 0x00, 0x01], in: year.key))
        try s.delete(.notebook, idea.key)
        // A sibling's `rm -r` may arrive folder first: the files still name
        // the path they had.
        try s.delete(.notebook, year.key)
        try s.delete(.notebook, projects.key)
        try s.delete(.notebook, photo.key)
        let kept = try s.keptVersions()
        XCTAssertEqual(kept.map(\.title), ["idea", "photo.jpg"], "folders are not listed")
        XCTAssertEqual(kept.map(\.folderPath), [["Projects", "2026"], ["Projects", "2026"]])
        XCTAssertEqual(kept.map(\.kind), [.note, .file])
        XCTAssertEqual(try s.keptBytes(kept[1].id), [0xFF, 0xD8, 0x00, 0x01], "attachments byte for byte")
    }

    func testASiblingsEditAndDeleteAreKeptButAFreshImportKeepsNothing() throws {
        let a = try makeStore(temporaryDirectory(), device: deviceA, seed: 1)
        let b = try makeStore(temporaryDirectory(), device: deviceB, seed: 2)
        let rows = try a.putMany((0..<300).map { note("note \($0)", "text \($0)\n") })
        try sync(a, into: b)
        XCTAssertEqual(try b.counts(.notebook).live, 300)
        XCTAssertEqual(try b.keptVersions(), [], "a row that was absent before has no earlier version")
        try sync(a, into: b)
        XCTAssertEqual(try b.keptVersions(), [], "the same rows again change nothing")

        _ = try edit(a, rows[7].key, body: "text 7, edited on a\n")
        try a.delete(.notebook, rows[8].key)
        try sync(a, into: b)
        let kept = try b.keptVersions()
        XCTAssertEqual(kept.map(\.reason), [.editedElsewhere, .deletedElsewhere])
        XCTAssertEqual(kept.map(\.title), ["note 7", "note 8"])
        XCTAssertEqual(kept.map(\.place), [.versions, .trash])
        XCTAssertEqual(try text(b, kept[0].id), "text 7\n")
        XCTAssertEqual(try text(b, kept[1].id), "text 8\n")
        // Each device keeps its own: a's are its own edits.
        XCTAssertEqual(try a.keptVersions().map(\.reason), [.editedHere, .deletedHere])
    }

    func testConcurrentVersionsKeepWhatTheFileShowed() throws {
        let a = try makeStore(temporaryDirectory(), device: deviceA, seed: 1)
        let b = try makeStore(temporaryDirectory(), device: deviceB, seed: 2)
        let row = try a.put(note("Shared", "one\n"))
        try sync(a, into: b)
        _ = try edit(a, row.key, body: "one\n\ntwo from a\n")
        _ = try edit(b, row.key, body: "one\n\nthree from b\n")
        try sync(b, into: a)
        XCTAssertEqual(try a.row(.notebook, row.key)?.heads.count, 2)
        // a's own edit, then its text replaced by the union.
        let kept = try a.keptVersions()
        XCTAssertEqual(kept.map(\.reason), [.editedHere, .editedElsewhere])
        XCTAssertEqual(try text(a, kept[1].id), "one\n\ntwo from a\n")
        // A delete of the joined row keeps the union the file showed.
        try a.delete(.notebook, row.key)
        let union = try XCTUnwrap(try a.keptVersions().last)
        XCTAssertEqual(union.reason, .deletedHere)
        let shown = try text(a, union.id)
        XCTAssertTrue(shown.contains("two from a") && shown.contains("three from b"), shown)
    }

    func testOffloadAndRecallKeepNothing() throws {
        let s = try makeStore(temporaryDirectory())
        let bytes = Array("a body worth offloading\n".utf8)
        let row = try s.put(.note(Note(title: "Old", body: bytes, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        let hash = Note.bodyDigest(bytes)
        try s.markOffloaded(row.key, contentHash: hash, holders: [deviceB])
        XCTAssertEqual(try s.restoreBody(bytes, contentHash: hash), 1)
        XCTAssertEqual(try s.keptVersions(), [], "residency is not an edit (rule 6)")
        // Deleted while offloaded: the text was never here to keep.
        try s.markOffloaded(row.key, contentHash: hash, holders: [deviceB])
        try s.delete(.notebook, row.key)
        XCTAssertEqual(try s.keptVersions(), [])
    }

    // MARK: Bounds

    func testOldTextsArePrunedByAge() throws {
        let clock = ManualClock()
        let s = try makeStore(temporaryDirectory(), clock: clock)
        let row = try s.put(note("Diary", "day 1\n"))
        _ = try edit(s, row.key, body: "day 2\n")
        clock.advance(20 * 86_400)
        _ = try edit(s, row.key, body: "day 3\n")
        XCTAssertEqual(try s.keptVersions().count, 2)
        clock.advance(11 * 86_400)
        // The first write after the limit drops what is older than 30 days.
        _ = try edit(s, row.key, body: "day 4\n")
        XCTAssertEqual(try s.keptVersions().map { try text(s, $0.id) }, ["day 2\n", "day 3\n"])
    }

    /// The size limit is a limit: within the prune interval, the write
    /// that keeps a text over it drops the oldest at once (a few at a
    /// time), so what is kept never stands over it, not even for a while.
    func testTheOldestGoFirstWhenTheSizeLimitIsReached() throws {
        let clock = ManualClock()
        let s = try makeStore(temporaryDirectory(), clock: clock)
        s.keptLimits = KeptLimits(days: 30, mebibytes: 1)
        let random = SeededRandom(seed: 7)
        let row = try s.put(attachment("scan.bin", random.bytes(300_000)))
        for edit in 0..<6 {
            clock.advance(1)
            try s.put(attachment("scan.bin", random.bytes(300_000)), key: row.key)
            XCTAssertLessThanOrEqual(try s.keptUsage().versionsBytes, 1 << 20, "after edit \(edit + 1)")
        }
        let kept = try s.keptVersions()
        XCTAssertEqual(kept.count, 3, "three of 300,000 incompressible bytes fit in 1 MiB")
        XCTAssertEqual(kept.map(\.id), [4, 5, 6], "the oldest were dropped")
        XCTAssertEqual(try s.pruneKept().overSize, 0, "nothing was left over the limit for quire trash prune")
        // Limits of zero keep nothing at all.
        s.keptLimits = KeptLimits(days: 0)
        try s.put(attachment("scan.bin", random.bytes(10)), key: row.key)
        XCTAssertEqual(try s.keptVersions(), [])
    }

    /// A burst of small edits within the interval stays under the limit too,
    /// and the write path drops in batches rather than at every edit.
    func testABurstOfEditsStaysUnderTheSizeLimitAndPrunesInBatches() throws {
        let clock = ManualClock()
        let s = try makeStore(temporaryDirectory(), clock: clock)
        s.keptLimits = KeptLimits(days: 30, mebibytes: 1)
        let random = SeededRandom(seed: 11)
        let row = try s.put(attachment("log.bin", random.bytes(20_000)))
        var counts: [Int] = []
        for _ in 0..<120 {
            try s.put(attachment("log.bin", random.bytes(20_000)), key: row.key)
            XCTAssertLessThanOrEqual(try s.keptUsage().versionsBytes, 1 << 20)
            counts.append(try s.keptVersions().count)
        }
        let drops = zip(counts, counts.dropFirst()).filter { $0.1 <= $0.0 }.count
        XCTAssertLessThan(drops, 20, "dropped in batches: \(counts)")
        XCTAssertGreaterThan(counts.last ?? 0, (1 << 20) * 15 / 16 / 20_000 - 2, "room below the limit is still used: \(counts)")
    }

    /// A prune that fails (here a trigger stands in for a full disk) drops
    /// nothing, and never takes the edit it rides on down with it.
    func testAFailingPruneLosesNothing() throws {
        let clock = ManualClock()
        let s = try makeStore(temporaryDirectory(), clock: clock)
        let row = try s.put(note("Plan", "v1\n"))
        _ = try edit(s, row.key, body: "v2\n")
        try s.db.execute("CREATE TEMP TRIGGER full_disk BEFORE DELETE ON kept BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        clock.advance(40 * 86_400)
        _ = try edit(s, row.key, body: "v3\n")
        XCTAssertEqual(body(try s.row(.notebook, row.key)), "v3\n", "the edit committed")
        XCTAssertEqual(try s.keptVersions().map { try text(s, $0.id) }, ["v1\n", "v2\n"], "nothing was dropped")
        XCTAssertNotNil(try s.keptUsage().pruneProblem)
        XCTAssertThrowsError(try s.pruneKept()) { XCTAssertTrue("\($0)".contains("disk is full"), "\($0)") }
        XCTAssertEqual(try s.keptVersions().count, 2)
        try s.db.execute("DROP TRIGGER full_disk")
        XCTAssertEqual(try s.pruneKept().expired, 1, "v1 is 40 days old, v2 was kept just now")
        XCTAssertNil(try s.keptUsage().pruneProblem)
    }

    func testPrefsSetTheLimits() throws {
        var prefs = Prefs(deviceName: "x")
        XCTAssertEqual(KeptLimits(prefs: prefs), KeptLimits(days: 30, mebibytes: 512))
        prefs.keptDays = 7
        prefs.keptMebibytes = 64
        XCTAssertEqual(KeptLimits(prefs: prefs).bytes, 64 << 20)
        XCTAssertEqual(KeptLimits(prefs: prefs).days, 7)
        // An older prefs file (no such keys) still loads.
        let old = #"{"formatVersion":1,"deviceName":"y","generation":0,"backupEnabled":true,"role":"device","relay":"local","recallTimeoutSeconds":10}"#
        XCTAssertNil(try JSONDecoder().decode(Prefs.self, from: Data(old.utf8)).keptDays)
    }

    // MARK: Bringing one back

    func testUndeleteRevivesTheRowUnderItsKeyAndTheSiblingTakesIt() throws {
        let a = try makeStore(temporaryDirectory(), device: deviceA, seed: 1)
        let b = try makeStore(temporaryDirectory(), device: deviceB, seed: 2)
        let projects = try folder(a, "Projects")
        let row = try a.put(.note(Note(title: "Lost", tags: ["t"], body: Array("precious\n".utf8), createdAt: Timestamp(seconds: 0),
                                       updatedAt: Timestamp(seconds: 0), folder: projects.key)))
        try sync(a, into: b)
        let tombstone = try a.delete(.notebook, row.key)
        try sync(a, into: b)
        XCTAssertEqual(try b.row(.notebook, row.key)?.isTombstone, true)
        let trash = try XCTUnwrap(try a.keptVersions().first { $0.place == .trash })
        let outbox = try a.pendingEdits()

        let restored = try a.restoreKept(trash.id)
        XCTAssertEqual(restored.outcome, .revived)
        XCTAssertEqual(restored.row.key, row.key)
        XCTAssertEqual(restored.folder, projects.key)
        XCTAssertTrue(restored.isInItsFolder)
        XCTAssertEqual(restored.row.context.compare(tombstone.context), .dominates, "the new version saw the delete")
        XCTAssertEqual(try a.pendingEdits(), outbox + 1, "a local edit, recorded to be advertised")
        guard case .note(let n)? = try a.row(.notebook, row.key)?.content else { return XCTFail("not back") }
        XCTAssertEqual(n.tags, ["t"])
        XCTAssertEqual(n.folder, projects.key)
        XCTAssertEqual(try a.keptVersions().filter { $0.place == .trash }, [], "no longer in the trash")

        try sync(a, into: b)
        XCTAssertEqual(body(try b.row(.notebook, row.key)), "precious\n", "the sibling takes the undelete")
    }

    /// `rm -r Vault/Delta`, then `mkdir Vault/Delta`: a new folder row with
    /// the old one's path. A note undeleted from the old one goes into it.
    func testUndeleteIntoAFolderMadeAgainAtTheSamePath() throws {
        let s = try makeStore(temporaryDirectory())
        let vault = try folder(s, "Vault")
        let delta = try folder(s, "Delta", in: vault.key)
        let zero = Timestamp(seconds: 0)
        let note = try s.put(.note(Note(title: "note1", body: Array("kept words\n".utf8), createdAt: zero, updatedAt: zero, folder: delta.key)))
        try s.delete(.notebook, note.key)
        try s.delete(.notebook, delta.key)
        let again = try folder(s, "Delta", in: vault.key)
        _ = try folder(s, "Delta")   // the same name elsewhere is not the place
        let trash = try XCTUnwrap(try s.keptVersions().first { $0.title == "note1" })
        XCTAssertEqual(trash.folderPath, ["Vault", "Delta"])
        let restored = try s.restoreKept(trash.id)
        XCTAssertEqual(restored.outcome, .revived)
        XCTAssertEqual(restored.folder, again.key)
        XCTAssertTrue(restored.isInItsFolder)
        guard case .note(let n)? = try s.row(.notebook, note.key)?.content else { return XCTFail("not back") }
        XCTAssertEqual(n.folder, again.key)
    }

    /// A file deleted, then another made under its name: the deleted one
    /// comes back beside it as `NAME (restored)`, and the live one keeps
    /// its name and text. Elsewhere the name is free, and a folder's file
    /// of the name is no obstacle at the top.
    func testUndeleteBesideALiveFileOfItsNameTakesARestoredTitle() throws {
        let s = try makeStore(temporaryDirectory())
        let projects = try folder(s, "Projects")
        let old = try s.put(note("Ideas", "old ideas\n"))
        try s.delete(.notebook, old.key)
        let other = try s.put(note("Ideas", "other ideas\n"))
        try s.delete(.notebook, other.key)
        let live = try s.put(note("Ideas", "new ideas\n"))
        let photo = try s.put(attachment("photo.png", [1, 2], in: projects.key))
        try s.delete(.notebook, photo.key)
        _ = try s.put(attachment("photo.png", [3], in: projects.key))
        let kept = try s.keptVersions()
        let ideas = try XCTUnwrap(kept.first { $0.key == old.key })
        let zed = kept.first { $0.key == other.key }
        XCTAssertEqual(try s.restoreKept(ideas.id).outcome, .revived)
        guard case .note(let back)? = try s.row(.notebook, old.key)?.content,
              case .note(let stays)? = try s.row(.notebook, live.key)?.content else { return XCTFail("a row is missing") }
        XCTAssertEqual(back.title, "Ideas (restored)")
        XCTAssertEqual(back.body, Array("old ideas\n".utf8))
        XCTAssertEqual(stays.title, "Ideas")
        XCTAssertEqual(stays.body, Array("new ideas\n".utf8))
        let image = try XCTUnwrap(kept.first { $0.key == photo.key })
        _ = try s.restoreKept(image.id)
        guard case .note(let png)? = try s.row(.notebook, photo.key)?.content else { return XCTFail("not back") }
        XCTAssertEqual(png.title, "photo (restored).png")
        XCTAssertEqual(png.folder, projects.key)
        // Another of the name deleted earlier: the next free title.
        let z = try XCTUnwrap(zed)
        _ = try s.restoreKept(z.id)
        guard case .note(let second)? = try s.row(.notebook, z.key)?.content else { return XCTFail("not back") }
        XCTAssertEqual(second.title, "Ideas (restored 2)")
    }

    func testUndeleteAfterTheBarrierCollectedTheTombstoneMakesANewRowAtTheTop() throws {
        let s = try makeStore(temporaryDirectory())
        let projects = try folder(s, "Projects")
        let row = try s.put(attachment("data.csv", Array("a,b\n".utf8), in: projects.key))
        try s.delete(.notebook, row.key)
        try s.delete(.notebook, projects.key)
        XCTAssertEqual(try s.dropTombstonesForBarrier(), 2)
        let trash = try XCTUnwrap(try s.keptVersions().first)
        XCTAssertEqual(trash.place, .trash)
        XCTAssertFalse(trash.isRowPresent)
        XCTAssertEqual(trash.folderPath, ["Projects"])

        let restored = try s.restoreKept(trash.id)
        XCTAssertEqual(restored.outcome, .recreated)
        XCTAssertNotEqual(restored.row.key, row.key, "a collected key is never written again")
        XCTAssertNil(restored.folder, "its folder is gone: at the top")
        XCTAssertFalse(restored.isInItsFolder)
        guard case .note(let n)? = try s.row(.notebook, restored.row.key)?.content else { return XCTFail("not back") }
        XCTAssertEqual(n.kind, .file)
        XCTAssertEqual(n.title, "data.csv")
        XCTAssertEqual(n.body, Array("a,b\n".utf8))
    }

    func testRestoringAnEarlierVersionIsANewEditThatKeepsTheCurrentText() throws {
        let s = try makeStore(temporaryDirectory())
        let row = try s.put(note("Essay", "draft one\n"))
        _ = try edit(s, row.key, body: "draft two\n")
        let first = try XCTUnwrap(try s.keptVersions().first)
        let restored = try s.restoreKept(first.id)
        XCTAssertEqual(restored.outcome, .replacedText)
        XCTAssertEqual(body(try s.row(.notebook, row.key)), "draft one\n")
        XCTAssertEqual(try s.keptVersions().map { try text(s, $0.id) }, ["draft one\n", "draft two\n"], "the text it replaced is kept in turn")
        XCTAssertEqual(try s.restoreKept(first.id).outcome, .unchanged)
    }

    func testBadInputGetsAClearErrorAndChangesNothing() throws {
        let s = try makeStore(temporaryDirectory())
        let row = try s.put(note("Keep", "safe\n"))
        try s.delete(.notebook, row.key)
        let sequence = try s.changeSequence()
        XCTAssertThrowsError(try s.restoreKept(999)) { XCTAssertEqual(($0 as? StoreError)?.kind, .notFound) }
        // Damaged on disk: refused, never shown as the text.
        let id = try XCTUnwrap(try s.keptVersions().first).id
        try s.db.run("UPDATE kept SET body = ? WHERE id = ?", [.blob(Array("safe!\n".utf8)), .int(id)])
        XCTAssertThrowsError(try s.keptBytes(id)) { XCTAssertEqual(($0 as? StoreError)?.kind, .corrupt) }
        XCTAssertThrowsError(try s.restoreKept(id)) { XCTAssertEqual(($0 as? StoreError)?.kind, .corrupt) }
        XCTAssertEqual(try s.changeSequence(), sequence)
        XCTAssertEqual(try s.row(.notebook, row.key)?.isTombstone, true)
    }

    func testKeptTextsSurviveReopening() throws {
        let dir = temporaryDirectory()
        var s: ReplicaStore? = try makeStore(dir)
        let row = try s!.put(note("Note", "before\n"))
        _ = try edit(s!, row.key, body: "after\n")
        s = nil
        let again = try ReplicaStore(path: dir + "/replica.sqlite", deviceID: deviceA, clock: ManualClock())
        XCTAssertEqual(try again.keptVersions().map { try text(again, $0.id) }, ["before\n"])
    }
}
