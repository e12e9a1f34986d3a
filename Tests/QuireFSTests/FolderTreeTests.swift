import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// The notebook as a folder tree, driven directly (no mount): folders are
/// rows, moving one changes one row, files that are not notes are
/// attachments kept byte for byte.
final class FolderTreeTests: XCTestCase {
    func testFoldersNestAndHoldNotesAndAttachments() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Projects")
        try mount.mkdir("notebook/Projects/2026")
        try mount.writeFile("notebook/Projects/2026/idea.md", "an idea\n")
        try mount.writeFile("notebook/Projects/2026/sketch.png", "\u{89}PNG bytes")
        XCTAssertEqual(try mount.list("notebook"), ["Projects"])
        XCTAssertEqual(try mount.list("notebook/Projects"), ["2026"])
        XCTAssertEqual(try mount.list("notebook/Projects/2026"), ["idea.md", "sketch.png"])
        XCTAssertEqual(try mount.text("notebook/Projects/2026/idea.md"), "an idea\n")
        XCTAssertEqual(try mount.text("notebook/Projects/2026/sketch.png"), "\u{89}PNG bytes")
        XCTAssertEqual(try mount.lookup("notebook/Projects").attributes.kind, .directory)

        let rows = try mount.store.summaries(.notebook)
        let projects = try XCTUnwrap(rows.first { $0.name == "Projects" })
        let year = try XCTUnwrap(rows.first { $0.name == "2026" })
        let idea = try XCTUnwrap(rows.first { $0.name == "idea" })
        let sketch = try XCTUnwrap(rows.first { $0.name == "sketch.png" })
        XCTAssertEqual(projects.place.kind, .folder)
        XCTAssertNil(projects.place.folder)
        XCTAssertEqual(year.place.folder, projects.key)
        XCTAssertEqual(idea.place, RowPlace(kind: .note, folder: year.key))
        XCTAssertEqual(sketch.place.kind, .file)
        XCTAssertEqual(sketch.place.folder, year.key)
        // Not-empty folders are not removed; a file is not a folder.
        XCTAssertThrowsError(try mount.rmdir("notebook/Projects")) { XCTAssertEqual($0 as? FuseError, .notEmpty) }
        XCTAssertThrowsError(try mount.rmdir("notebook/Projects/2026/idea.md")) { XCTAssertEqual($0 as? FuseError, .notDirectory) }
        XCTAssertThrowsError(try mount.mkdir("notebook/Projects")) { XCTAssertEqual($0 as? FuseError, .exists) }
        XCTAssertThrowsError(try mount.mkdir("plans/Later")) { XCTAssertEqual($0 as? FuseError, .notPermitted) }
    }

    /// A folder removed and made again is the same row (its key comes
    /// from its name), under another inode number: the kernel keeps the
    /// removed one's inode dead for whoever still holds it (a shell in it).
    func testAFolderMadeAgainGetsAnotherInode() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Box")
        let first = try mount.lookup("notebook/Box").attributes.inode
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "Box" }?.key)
        try mount.rmdir("notebook/Box")
        XCTAssertFalse(mount.exists("notebook/Box"))
        XCTAssertThrowsError(try mount.fileSystem.getAttributes(first, handle: nil, request: mount.caller), "the old number stands for nothing")
        // A shell still in it lists it, or makes a file in it: ENOENT, as on any filesystem.
        XCTAssertThrowsError(try mount.fileSystem.openDirectory(first, flags: FuseOpenFlags(rawValue: O_RDONLY), request: mount.caller)) {
            XCTAssertEqual($0 as? FuseError, .noEntry)
        }
        XCTAssertThrowsError(try mount.fileSystem.create(parent: first, name: "x.md", mode: 0o100644, flags: FuseOpenFlags(rawValue: O_WRONLY),
                                                         request: mount.caller)) { XCTAssertEqual($0 as? FuseError, .noEntry) }
        try mount.mkdir("notebook/Box")
        XCTAssertEqual(try mount.store.summaries(.notebook).first { $0.name == "Box" }?.key, key)
        let second = try mount.lookup("notebook/Box").attributes.inode
        XCTAssertNotEqual(second, first)
        try mount.writeFile("notebook/Box/In.md", "in\n")
        XCTAssertEqual(try mount.list("notebook/Box"), ["In.md"])
        mount.fileSystem.forgotten(first)
        XCTAssertEqual(try mount.lookup("notebook/Box").attributes.inode, second)
        // The same for an empty folder a rename replaced.
        try mount.mkdir("notebook/Empty")
        let empty = try mount.lookup("notebook/Empty").attributes.inode
        try mount.mkdir("notebook/Mover")
        try mount.rename("notebook/Mover", "notebook/Empty")
        try mount.rename("notebook/Empty", "notebook/Moved")
        try mount.mkdir("notebook/Empty")
        XCTAssertNotEqual(try mount.lookup("notebook/Empty").attributes.inode, empty)
        XCTAssertEqual(try mount.list("notebook"), ["Box", "Empty", "Moved"])
    }

    /// A folder move is one row: every row under it keeps its key, and
    /// nothing under it is written.
    func testMovingAFolderChangesOneRowAndKeepsEveryKey() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Work")
        try mount.mkdir("notebook/Archive")
        for i in 0..<5 { try mount.writeFile("notebook/Work/note \(i).md", "text \(i)\n") }
        try mount.writeFile("notebook/Work/data.csv", "a,b\n")
        let before = try mount.store.summaries(.notebook)
        let sequence = try mount.store.changeSequence()
        try mount.rename("notebook/Work", "notebook/Archive/Work 2025")
        XCTAssertEqual(try mount.store.changeSequence(), sequence + 1, "one write")
        XCTAssertEqual(try mount.list("notebook"), ["Archive"])
        XCTAssertEqual(try mount.list("notebook/Archive/Work 2025").count, 6)
        XCTAssertEqual(try mount.text("notebook/Archive/Work 2025/note 3.md"), "text 3\n")
        let after = try mount.store.summaries(.notebook)
        XCTAssertEqual(Set(after.map(\.key)), Set(before.map(\.key)))
        for row in before where row.name != "Work" {
            XCTAssertEqual(after.first { $0.key == row.key }?.seq, row.seq, "\(row.name) was not rewritten")
        }
        // Into itself: EINVAL. Over a non-empty folder: ENOTEMPTY.
        XCTAssertThrowsError(try mount.rename("notebook/Archive", "notebook/Archive/Work 2025/inner")) {
            XCTAssertEqual($0 as? FuseError, .invalid)
        }
        try mount.mkdir("notebook/Full")
        try mount.writeFile("notebook/Full/x.md", "x\n")
        XCTAssertThrowsError(try mount.rename("notebook/Archive", "notebook/Full")) { XCTAssertEqual($0 as? FuseError, .notEmpty) }
        // Over an empty folder: replaced, in one transaction.
        try mount.mkdir("notebook/Empty")
        try mount.rename("notebook/Archive", "notebook/Empty")
        XCTAssertEqual(try mount.list("notebook"), ["Empty", "Full"])
        XCTAssertEqual(try mount.list("notebook/Empty"), ["Work 2025"])
    }

    func testFilesMoveBetweenFoldersAndChangeKindWithTheirName() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/A")
        try mount.writeFile("notebook/A/plan.md", "one\n\ntwo\n")
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "plan" }?.key)
        try mount.rename("notebook/A/plan.md", "notebook/plan.txt")
        XCTAssertEqual(try mount.list("notebook/A"), [])
        XCTAssertEqual(try mount.text("notebook/plan.txt"), "one\n\ntwo\n")
        let moved = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.key == key })
        XCTAssertEqual(moved.name, "plan.txt")
        XCTAssertEqual(moved.place, RowPlace(kind: .file, folder: nil))
        try mount.rename("notebook/plan.txt", "notebook/A/plan.md")
        let folderA = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "A" }?.key)
        XCTAssertEqual(try mount.store.summaries(.notebook).first { $0.key == key }?.place, RowPlace(kind: .note, folder: folderA))
        XCTAssertThrowsError(try mount.rmdir("notebook/A"))
    }

    /// Binary bytes survive as written (no text handling, no paragraph merge).
    func testAttachmentsKeepTheirBytes() throws {
        let mount = try DirectMount()
        let bytes: [UInt8] = (0..<4096).map { UInt8(($0 * 7 + 3) % 256) }
        let file = try mount.create("notebook/blob.bin")
        _ = try mount.checked { try mount.fileSystem.write(file.inode, handle: file.handle, offset: 0, data: bytes, flags: file.flags, request: mount.caller) }
        try mount.close(file)
        let row = try XCTUnwrap(mount.store.row(.notebook, try XCTUnwrap(mount.store.summaries(.notebook).first?.key)))
        guard case .note(let note)? = row.content else { return XCTFail("no row") }
        XCTAssertEqual(note.kind, .file)
        XCTAssertEqual(note.body, bytes)
        XCTAssertEqual(note.title, "blob.bin")
        XCTAssertNil(try mount.store.shadow(.notebook, row.key), "attachments keep no prose shadow")
    }

    /// utimensat sets a file's mtime, which is stored (and so synced).
    func testModificationTimeIsKept() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/old.md", "text\n")
        let inode = try mount.lookup("notebook/old.md").attributes.inode
        var changes = FuseAttributeChanges(fields: [.modificationTime])
        changes.modificationTime = FuseTimestamp(seconds: 1_000_000_000, nanoseconds: 123_456_789)
        _ = try mount.checked { try mount.fileSystem.setAttributes(inode, changes, handle: nil, request: mount.caller) }
        let attributes = try mount.lookup("notebook/old.md").attributes
        XCTAssertEqual(attributes.modificationTime, FuseTimestamp(seconds: 1_000_000_000, nanoseconds: 123_456_789))
        XCTAssertEqual(try mount.store.summaries(.notebook).first?.place.modifiedAt, 1_000_000_000_123_456_789)
        // A write makes the file's time the write's again.
        try mount.writeFile("notebook/old.md", "new text\n")
        XCTAssertNil(try mount.store.summaries(.notebook).first?.place.modifiedAt)
    }

    /// RENAME_EXCHANGE swaps bytes only: each name keeps its folder and kind.
    func testExchangeKeepsEachNamesFolderAndKind() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/d")
        try mount.writeFile("notebook/d/p.bin", "P")
        try mount.writeFile("notebook/d/q.md", "Q\n")
        try mount.rename("notebook/d/p.bin", "notebook/d/q.md", flags: .exchange)
        XCTAssertEqual(try mount.list("notebook/d"), ["p.bin", "q.md"])
        XCTAssertEqual(try mount.list("notebook"), ["d"])
        XCTAssertEqual(try mount.text("notebook/d/p.bin"), "Q\n")
        XCTAssertEqual(try mount.text("notebook/d/q.md"), "P")
        let kinds = Dictionary(uniqueKeysWithValues: try mount.store.summaries(.notebook).map { ($0.name, $0.place.kind) })
        XCTAssertEqual(kinds, ["d": .folder, "p.bin": .file, "q": .note])
        XCTAssertThrowsError(try mount.lookup("notebook/" + String(repeating: "n", count: 256))) { XCTAssertEqual($0 as? FuseError, .nameTooLong) }
    }

    /// A file an older version kept on this device in notebook/ (not a
    /// note then) is an attachment at the next mount, bytes and time kept.
    func testLocalFilesAnOlderVersionKeptBecomeAttachments() throws {
        let mount = try DirectMount()
        let kept = mount.directory + "/scratch/notebook"
        try FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: kept + "/todo.txt", contents: Data("buy milk\n".utf8)))
        XCTAssertTrue(FileManager.default.createFile(atPath: kept + "/.hidden", contents: Data("stays".utf8)))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: kept + "/todo.txt")
        mount.fileSystem.preloadListings()
        let row = try XCTUnwrap(mount.store.summaries(.notebook).first)
        XCTAssertEqual(row.name, "todo.txt")
        XCTAssertEqual(row.place.kind, .file)
        XCTAssertEqual(row.place.modifiedAt, 1_000_000_000 * 1_000_000_000)
        XCTAssertEqual(try mount.text("notebook/todo.txt"), "buy milk\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: kept + "/todo.txt"), "the local copy goes once the row is committed")
        XCTAssertTrue(FileManager.default.fileExists(atPath: kept + "/.hidden"), "hidden files stay local")
    }
}

/// Where rows show, from the rows alone (the same on every device).
final class FolderPlacementTests: XCTestCase {
    func key(_ byte: UInt8) -> RowKey { RowKey(bytes: [UInt8](repeating: byte, count: 16))! }

    func summary(_ key: RowKey, _ title: String, kind: NoteKind, in folder: RowKey?, seq: Int64 = 1) -> RowSummary {
        RowSummary(namespace: .notebook, key: key, name: title, size: 0, updatedAt: Timestamp(seconds: 1), isTombstone: false,
                   isOffloaded: false, seq: seq, place: RowPlace(kind: kind, folder: folder))
    }

    /// Listings kept in order name by name (between two readdirs) list what
    /// a listing made afresh from the same rows lists, through adds,
    /// retitles, moves, name clashes and deletions in any order.
    func testSortedNamesKeptStepByStepMatchAFreshListing() {
        var random = SystemRandomNumberGenerator()
        let titles = ["a", "b", "Note", "note", "caf\u{E9}", "cafe\u{301}", "z z", "\u{1F600}"]
        var rows: [RowKey: RowSummary] = [:]
        var listing = NamespaceListing(namespace: .notebook, summaries: [])
        for step in 1...1500 {
            let k = key(UInt8.random(in: 1...40, using: &random))
            let folders = rows.values.filter { $0.place.kind == .folder && !$0.isTombstone }.map(\.key)
            if Bool.random(using: &random) && rows[k] != nil && Int.random(in: 0..<4, using: &random) == 0 {
                var gone = rows[k]!
                gone.isTombstone = true
                rows[k] = gone
                _ = listing.apply(gone)
            } else {
                let kind: NoteKind = Int.random(in: 0..<5, using: &random) == 0 ? .folder : .note
                let folder = Bool.random(using: &random) ? folders.randomElement(using: &random) : nil
                let made = summary(k, titles.randomElement(using: &random)!, kind: kind, in: folder, seq: Int64(step))
                rows[k] = made
                _ = listing.apply(made)
            }
            var fresh = NamespaceListing(namespace: .notebook, summaries: Array(rows.values))
            for folder in [nil] + rows.keys.map({ Optional($0) }) {
                XCTAssertEqual(listing.sortedNames(in: folder), fresh.sortedNames(in: folder), "step \(step), folder \(String(describing: folder))")
            }
        }
    }

    /// Two devices moved two folders each into the other: the cycle is cut
    /// at the smaller key, which shows at the top with the other inside it.
    func testAFolderCycleIsCutAtTheSmallestKey() {
        let a = key(1), b = key(2), note = key(3)
        let listing = NamespaceListing(namespace: .notebook, summaries: [
            summary(a, "A", kind: .folder, in: b), summary(b, "B", kind: .folder, in: a), summary(note, "n", kind: .note, in: b),
        ])
        XCTAssertNil(listing.folder(of: a))
        XCTAssertEqual(listing.folder(of: b), a)
        XCTAssertEqual(listing.folder(of: note), b)
        XCTAssertEqual(listing.key(named: CanonicalName("A"), in: nil), a)
    }

    /// A note whose folder was deleted (or has not arrived) shows at the
    /// top; when the folder comes (back), the note moves into it.
    func testARowWhoseFolderIsGoneShowsAtTheTop() {
        let folder = key(1), note = key(2)
        var listing = NamespaceListing(namespace: .notebook, summaries: [summary(note, "Letter", kind: .note, in: folder)])
        XCTAssertNil(listing.folder(of: note))
        XCTAssertEqual(listing.key(named: CanonicalName("Letter.md"), in: nil), note)
        let changes = listing.apply(summary(folder, "Drafts", kind: .folder, in: nil, seq: 2))
        XCTAssertEqual(listing.folder(of: note), folder)
        XCTAssertTrue(changes.contains(NameChange(key: note, old: NameSlot(folder: nil, name: CanonicalName("Letter.md")),
                                                  new: NameSlot(folder: folder, name: CanonicalName("Letter.md")))))
        _ = listing.remove(folder)
        XCTAssertNil(listing.folder(of: note))
        XCTAssertEqual(listing.key(named: CanonicalName("Letter.md"), in: nil), note)
    }
}
