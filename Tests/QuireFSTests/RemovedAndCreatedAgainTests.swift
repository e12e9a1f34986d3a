import Foundation
import QuireCore
@testable import QuireFS
import QuireStore
import XCTest

/// A file removed and created anew under its name (git checkout, some
/// editors) is the same row written again (`RecentlyRemoved`).
final class RemovedAndCreatedAgainTests: XCTestCase {
    func deletedParagraphs(_ store: ReplicaStore, _ key: RowKey) throws -> Set<ParagraphHash> {
        guard case .note(let note)? = try store.row(.notebook, key)?.content else { return [] }
        return Set(note.deletedParagraphs.compactMap { ParagraphHash(bytes: $0) })
    }

    func testANoteRemovedAndCreatedAgainByNameKeepsItsRowAndDeletesTheRemovedParagraphs() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Plan", "one\n\ntwo\n").key }
        // As git checkout does: unlink, then O_CREAT|O_EXCL and write.
        try mount.unlink("notebook/Plan.md")
        let file = try mount.create("notebook/Plan.md", O_WRONLY | O_CREAT | O_EXCL)
        try mount.write(file, "two\n\nthree\n")
        try mount.close(file)
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "two\n\nthree\n")
        let rows = try mount.store.summaries(.notebook, includeTombstones: true)
        XCTAssertEqual(rows.map(\.key), [try XCTUnwrap(key)], "one row, the old one: \(rows)")
        XCTAssertEqual(rows.first?.isTombstone, false)
        XCTAssertEqual(try deletedParagraphs(mount.store, key!), [Paragraphs.paragraphHash("one")])
        // The removed text is an earlier version of the note now, not a deleted file.
        XCTAssertEqual(try mount.list(".quire/trash"), [])
        let versions = try mount.list(".quire/versions")
        XCTAssertEqual(versions.count, 1, "\(versions)")
        XCTAssertEqual(try mount.text(".quire/versions/" + versions[0]), "one\n\ntwo\n")
        // Another name is another row.
        try mount.unlink("notebook/Plan.md")
        try mount.writeFile("notebook/Other.md", "other\n")
        let after = try mount.store.summaries(.notebook, includeTombstones: true)
        XCTAssertEqual(after.filter { !$0.isTombstone }.map(\.name), ["Other"])
        XCTAssertNotEqual(after.first { !$0.isTombstone }?.key, key)
    }

    /// A sibling edited the note while this device replaced it by removing
    /// and creating it: one note comes of it on both, with the sibling's new
    /// paragraph and without the removed one (not a second note beside it).
    func testASiblingsConcurrentEditMergesIntoTheNoteCreatedAgain() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Plan", "one\n\ntwo\n").key }
        let sibling = try ReplicaStore(path: mount.directory + "/sibling.sqlite", deviceID: DeviceID(bytes: [UInt8](repeating: 0xD2, count: 16))!, create: true)
        func sync(_ from: ReplicaStore, into to: ReplicaStore) throws {
            try to.apply(try from.rows(.notebook, from: [], to: nil) + (try from.tombstones(.notebook)))
        }
        try sync(mount.store, into: sibling)
        guard case .note(var note)? = try sibling.row(.notebook, try XCTUnwrap(key))?.content else { return XCTFail("no row on the sibling") }
        note.body = Array("one\n\ntwo\n\nfour\n".utf8)
        try sibling.saveProse(.note(note), key: key)

        try mount.unlink("notebook/Plan.md")
        try mount.writeFile("notebook/Plan.md", "two\n\nthree\n")
        for _ in 0..<3 {
            try sync(sibling, into: mount.store)
            try sync(mount.store, into: sibling)
        }
        mount.feed()
        XCTAssertEqual(try mount.store.roots(), try sibling.roots())
        for store in [mount.store, sibling] {
            let live = try store.summaries(.notebook)
            XCTAssertEqual(live.map(\.key), [key!], "one note: \(live)")
            let text = try store.row(.notebook, key!)?.content.flatMap(RowFormat.render).map { String(decoding: $0, as: UTF8.self) } ?? ""
            for kept in ["two", "three", "four"] { XCTAssertTrue(text.contains(kept), "\(kept) in \(text.debugDescription)") }
            XCTAssertFalse(text.contains("one"), text)
        }
    }

    /// zip, and programs that save by removing the file and renaming the
    /// new text over its name: the same row, written again (one file when a
    /// sibling edited it meanwhile), from a row or a local temp file.
    func testAFileRenamedOntoANameRemovedAMomentAgoIsTheRemovedRowWrittenAgain() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Plan", "one\n\ntwo\n").key }
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "one\n\ntwo\n")
        try mount.writeFile("notebook/Plan.md.new", "two\n\nthree\n")
        try mount.unlink("notebook/Plan.md")
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        var live = try mount.store.summaries(.notebook)
        XCTAssertEqual(live.map(\.key), [try XCTUnwrap(key)], "one row, the old one: \(live)")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "two\n\nthree\n")
        XCTAssertEqual(try deletedParagraphs(mount.store, key!), [Paragraphs.paragraphHash("one")])

        // From a local temp file (Python's tempfile name).
        try mount.writeFile("notebook/tmpab_12cd", "three\n\nfour\n")
        try mount.unlink("notebook/Plan.md")
        try mount.rename("notebook/tmpab_12cd", "notebook/Plan.md")
        live = try mount.store.summaries(.notebook)
        XCTAssertEqual(live.map(\.key), [key!], "\(live)")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "three\n\nfour\n")
        let trash = try mount.list(".quire/trash")
        XCTAssertFalse(trash.contains { $0.hasPrefix("Plan") && !$0.hasSuffix(".new") }, "the removed note is an earlier version, not a deleted file: \(trash)")
    }

    func testARemovalIsRememberedForItsWindowAndOnce() {
        var removed = RecentlyRemoved()
        let ref = RowRef(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: 7, count: 16))!)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        removed.record(.init(ref: ref, text: nil, at: start), name: CanonicalName("A.md"), in: .namespace(.notebook))
        XCTAssertNil(removed.take(CanonicalName("A.md"), in: .subfolder(ref.key), at: start), "another folder")
        XCTAssertEqual(removed.take(CanonicalName("A.md"), in: .namespace(.notebook), at: start + 9)?.ref, ref)
        XCTAssertNil(removed.take(CanonicalName("A.md"), in: .namespace(.notebook), at: start + 9), "taken once")
        removed.record(.init(ref: ref, text: nil, at: start), name: CanonicalName("A.md"), in: .namespace(.notebook))
        XCTAssertNil(removed.take(CanonicalName("A.md"), in: .namespace(.notebook), at: start + RecentlyRemoved.window + 1), "too late")
    }

    /// Python's `fileinput(inplace=True)` and `perl -i.bak`: the note
    /// renamed to `NAME.md.bak`, a new `NAME.md` written, the backup then
    /// removed (fileinput) or kept (perl). The note keeps its key and
    /// history, and no tombstone is made: it had become an attachment
    /// `NAME.md.bak`, deleted a moment later, and the new text a second
    /// row, so a sibling's edit made meanwhile brought the old note back
    /// beside it. A backup kept is a file of its own once its wait ends;
    /// a note renamed to `NAME.md.bak` for good keeps its key under it.
    func testANoteEditedThroughABakBackupKeepsItsRow() throws {
        var key: RowKey?, kept: RowKey?, moved: RowKey?
        let mount = try DirectMount { store in
            key = try store.putNote("fi", "one\n\ntwo\n").key
            kept = try store.putNote("pl", "perl\n").key
            moved = try store.putNote("old", "archived\n").key
        }
        try mount.rename("notebook/fi.md", "notebook/fi.md.bak")
        try mount.writeFile("notebook/fi.md", "one\n\nTWO\n")
        XCTAssertEqual(try mount.text("notebook/fi.md.bak"), "one\n\ntwo\n")
        try mount.unlink("notebook/fi.md.bak")
        XCTAssertEqual(try mount.stored(.notebook, "fi"), "one\n\nTWO\n")
        XCTAssertEqual(try mount.store.summaries(.notebook).first { $0.name == "fi" }?.key, try XCTUnwrap(key))

        try mount.rename("notebook/pl.md", "notebook/pl.md.bak")
        try mount.writeFile("notebook/pl.md", "perl edited\n")
        try mount.rename("notebook/old.md", "notebook/old.md.bak")
        mount.fileSystem.locked {
            mount.fileSystem.promoteProvisionalFiles(at: Date(timeIntervalSinceNow: ProvisionalFiles.grace + 1))
            for ref in mount.fileSystem.names.expiredDetached(at: Date(timeIntervalSinceNow: ChangeFeed.detachGrace + 1),
                                                              grace: ChangeFeed.detachGrace) {
                mount.fileSystem.finishDetach(ref)
            }
        }
        let rows = try mount.store.summaries(.notebook, includeTombstones: true)
        XCTAssertEqual(rows.filter(\.isTombstone).map(\.name), [], "\(rows)")
        XCTAssertEqual(rows.first { $0.name == "pl" }?.key, try XCTUnwrap(kept))
        XCTAssertEqual(try mount.stored(.notebook, "pl.md.bak"), "perl\n", "the backup kept syncs as a file of its own")
        XCTAssertEqual(rows.first { $0.name == "old.md.bak" }?.key, try XCTUnwrap(moved), "renamed for good: the same row")
        XCTAssertEqual(try mount.text("notebook/old.md.bak"), "archived\n")
        XCTAssertEqual(Set(try mount.list("notebook")), ["fi.md", "pl.md", "pl.md.bak", "old.md.bak"])
    }
}
