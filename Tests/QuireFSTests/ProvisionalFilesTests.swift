import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// Files named as save-by-rename temp files (`Plan.md.aB3dE9`) stay local
/// until renamed over a note, or become rows once their grace ends.
final class ProvisionalFilesTests: XCTestCase {
    private func tombstones(_ mount: DirectMount) throws -> [String] {
        try mount.store.tombstones(.notebook).map { $0.key.hex }
    }

    private func rowKey(_ mount: DirectMount, _ title: String) throws -> RowKey? {
        try mount.store.summaries(.notebook).first { $0.name == title }?.key
    }

    private func promote(_ mount: DirectMount, after seconds: TimeInterval) {
        mount.fileSystem.locked { mount.fileSystem.promoteProvisionalFiles(at: Date(timeIntervalSinceNow: seconds)) }
    }

    func testTempNamesAndTheirStems() {
        XCTAssertEqual(FileNames.tempName("Plan.md.aB3dE9"), .besideItsStem("Plan.md"), "mkstemp's six letters and digits (GLib, Qt)")
        XCTAssertEqual(FileNames.tempName("Plan.md.3841176092"), .besideItsStem("Plan.md"), "npm write-file-atomic's number")
        XCTAssertEqual(FileNames.tempName("todo.000123"), .besideItsStem("todo"))
        XCTAssertEqual(FileNames.tempName("Plan.md.tmp2596996162"), .besideItsStem("Plan.md"), "Go's os.CreateTemp(dir, \"Plan.md.tmp*\")")
        XCTAssertEqual(FileNames.tempName("Plan.md.tmp7"), .besideItsStem("Plan.md"))
        XCTAssertEqual(FileNames.tempName("app.json.xvnl45h_"), .besideItsStem("app.json"), "Python's tempfile.mkstemp(prefix=\"app.json.\")")
        XCTAssertEqual(FileNames.tempName("p.md.oAZTXlX"), .besideItsStem("p.md"), "GNU patch's output")
        XCTAssertEqual(FileNames.tempName("p.md.rej.r1b2c3d"), .besideItsStem("p.md.rej"), "GNU patch's rejects")
        XCTAssertEqual(FileNames.tempName("lu3245f8z3ke.tmp"), .always, "LibreOffice")
        XCTAssertEqual(FileNames.tempName("index.lock"), .always, "git")
        XCTAssertEqual(FileNames.tempName("tmp_obj_Ab12Cd"), .always, "git")
        XCTAssertEqual(FileNames.tempName("index.stash.2885"), .always, "git stash")
        for name in ["library.db-journal", "library.db-wal", "library.db-shm"] { XCTAssertEqual(FileNames.tempName(name), .always, "SQLite") }
        for name in ["Plan.md", "photo.jpeg", "Plan.md.aB3dE", "Plan.md.aB3dE9x", "Plan.md.12345678901", "Plan.md.aB-dE9", ".aB3dE9",
                     "Plan.md.", "README", "Cargo.lockfile", "lock", "Plan.md.tmp12345678901", "Plan.md.tmpx", "Plan.md.tmp1a", "Plan.md.xvnl45H_", "Plan.md.xvnl45h-",
                     "notes.md.outline", "x.md.oAZTX-X", "x.md.pAZTXlX"] {
            XCTAssertNil(FileNames.tempName(name), name)
        }
    }

    /// GLib's g_file_set_contents and Qt's QSaveFile over a note: one new
    /// version of it, and the temp file never a row (no tombstone).
    func testATempFileRenamedOverANoteWasNeverARow() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Plan.md", "first\n")
        let key = try XCTUnwrap(rowKey(mount, "Plan"))
        let temp = try mount.create("notebook/Plan.md.aB3dE9", O_RDWR | O_EXCL)
        try mount.write(temp, "second\n")
        try mount.close(temp)
        XCTAssertEqual(try mount.list("notebook"), ["Plan.md", "Plan.md.aB3dE9"], "listed here like any file")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Plan"], "not a row while it waits")
        try mount.rename("notebook/Plan.md.aB3dE9", "notebook/Plan.md")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "second\n")
        XCTAssertEqual(try rowKey(mount, "Plan"), key, "the note keeps its key")
        XCTAssertEqual(try tombstones(mount), [], "the temp file left no tombstone")
        XCTAssertEqual(try mount.list("notebook"), ["Plan.md"])
        promote(mount, after: 60)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Plan"], "nothing left to promote")

        // npm's write-file-atomic, and a new note saved by GLib (no target yet).
        let npm = try mount.create("notebook/Plan.md.3841176092", O_WRONLY | O_EXCL)
        try mount.write(npm, "third\n")
        try mount.close(npm)
        try mount.rename("notebook/Plan.md.3841176092", "notebook/Plan.md")
        // Go's os.CreateTemp(dir, "Plan.md.tmp*"), then os.Rename.
        let go = try mount.create("notebook/Plan.md.tmp2596996162", O_RDWR | O_EXCL)
        try mount.write(go, "fourth\n")
        try mount.close(go)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Plan"], "not a row while it waits")
        try mount.rename("notebook/Plan.md.tmp2596996162", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "fourth\n")
        // GNU patch: its output beside the note, renamed over it.
        try mount.writeFile("notebook/Plan.md.oAZTXlX", "patched\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Plan"], "not a row while it waits")
        try mount.rename("notebook/Plan.md.oAZTXlX", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "patched\n")
        try mount.writeFile("notebook/Plan.md.3841176093", "third\n")
        try mount.rename("notebook/Plan.md.3841176093", "notebook/Plan.md")
        try mount.writeFile("notebook/Fresh.md.Zz09Aa", "new\n")
        try mount.rename("notebook/Fresh.md.Zz09Aa", "notebook/Fresh.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "third\n")
        XCTAssertEqual(try mount.stored(.notebook, "Fresh"), "new\n")
        XCTAssertEqual(try rowKey(mount, "Plan"), key)
        XCTAssertEqual(try tombstones(mount), [])
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Fresh", "Plan"])
    }

    /// A file that only looks like a temp file becomes a row when its grace
    /// ends after its last close: same name, same inode, same bytes.
    func testAFileLeftWhereItWasWrittenBecomesARow() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Archive")
        let file = try mount.create("notebook/Archive/backup.tar.123456", O_RDWR)
        let inode = file.inode
        try mount.write(file, "bytes of an archive")
        promote(mount, after: 60)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Archive"], "open: it waits for its last close")
        try mount.close(file)
        promote(mount, after: 1)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Archive"], "its grace counts from the close")
        XCTAssertNotNil(mount.fileSystem.locked { mount.fileSystem.provisional.nextDeadline }, "the feed is told when to look again")
        let reader = try mount.open("notebook/Archive/backup.tar.123456", O_RDONLY)
        promote(mount, after: ProvisionalFiles.grace + 1)
        XCTAssertEqual(try mount.read(reader), "bytes of an archive", "a reader does not hold it back, and follows it")
        try mount.close(reader)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Archive", "backup.tar.123456"])
        XCTAssertEqual(try mount.lookup("notebook/Archive/backup.tar.123456").attributes.inode, inode, "the kernel's inode still names it")
        XCTAssertEqual(try mount.text("notebook/Archive/backup.tar.123456"), "bytes of an archive")
        let summary = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "backup.tar.123456" })
        let folder = try XCTUnwrap(rowKey(mount, "Archive"))
        XCTAssertEqual(summary.place.folder, folder, "in the folder it was written in")
        XCTAssertEqual(summary.place.kind, .file)
        XCTAssertNil(mount.fileSystem.locked { mount.fileSystem.provisional.nextDeadline })
    }

    /// Names that are not temp files' are rows at once; one whose stem has
    /// no extension is a temp file's only beside a file of that stem.
    func testOnlyTempFileNamesWait() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Board.canvas", "{}")
        try mount.writeFile("notebook/todo.aB3dE9", "no todo here: a file")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Board.canvas", "todo.aB3dE9"])
        try mount.writeFile("notebook/todo", "a list")
        try mount.writeFile("notebook/todo.Qq1234", "the list, saved by GLib")
        XCTAssertFalse(try mount.liveTitles(.notebook).contains("todo.Qq1234"), "beside todo: a temp file")
        try mount.rename("notebook/todo.Qq1234", "notebook/todo")
        XCTAssertEqual(try mount.stored(.notebook, "todo"), "the list, saved by GLib")
        XCTAssertEqual(try tombstones(mount), [])
    }

    /// Unmounting leaves no file behind in the scratch area: a waiting one
    /// becomes a row then.
    func testUnmountTurnsWaitingFilesIntoRows() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/photo.jpg.ABCDEF", "jpeg")
        XCTAssertEqual(try mount.liveTitles(.notebook), [])
        mount.fileSystem.destroy()
        XCTAssertEqual(try mount.liveTitles(.notebook), ["photo.jpg.ABCDEF"])
        XCTAssertEqual(try mount.stored(.notebook, "photo.jpg.ABCDEF"), "jpeg")
    }

    /// sed -i's, perl -i's and Python's temp files renamed over a note were
    /// never rows; words that fit their names (`sedentary`, `tmp_notes`)
    /// wait like them, then sync. One an older build kept on this device
    /// (as editor junk) syncs from the next mount.
    func testNamesLikeMkstempsWaitThenSync() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Log.md", "one\n")
        let key = try XCTUnwrap(rowKey(mount, "Log"))
        for temp in ["sedAb3dE9", "XXq1W2e3", "tmpk2j_x9qa", "sedqwerty", "tmpqzxkvwjb"] {
            try mount.writeFile("notebook/" + temp, "saved by \(temp)\n")
            XCTAssertEqual(try mount.liveTitles(.notebook), ["Log"], temp)
            try mount.rename("notebook/" + temp, "notebook/Log.md")
        }
        XCTAssertEqual(try mount.stored(.notebook, "Log"), "saved by tmpqzxkvwjb\n")
        XCTAssertEqual(try rowKey(mount, "Log"), key)
        XCTAssertEqual(try tombstones(mount), [])
        let words = ["sedentary", "tmp_notes", "tmpfiles", "zillions"]
        for word in words { try mount.writeFile("notebook/" + word, "a file named \(word)\n") }
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Log"], "they wait")
        promote(mount, after: ProvisionalFiles.grace + 1)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Log"] + words)
        for word in words { XCTAssertEqual(try mount.stored(.notebook, word), "a file named \(word)\n") }

        let kept = mount.fileSystem.scratch.path(.namespace(.notebook), CanonicalName("tmpwords"))
        XCTAssertTrue(FileManager.default.createFile(atPath: kept, contents: Data("kept here\n".utf8)))
        _ = try mount.nextMount()
        XCTAssertEqual(try mount.stored(.notebook, "tmpwords"), "kept here\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: kept))
    }

    /// A mount that stopped without unmounting (killed) left waiting files
    /// in the scratch area: the next mount lets them wait again.
    func testAMountKilledMeanwhileLeavesThemToTheNext() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Books")
        try mount.writeFile("notebook/Books/list.txt.a1B2c3", "kept")
        try mount.writeFile("notebook/top.csv.000042", "kept too")
        let next = try mount.nextMount()
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Books", "top.csv.000042"], "the top folder's are adopted at once, as before")
        XCTAssertNotNil(next.locked { next.provisional.nextDeadline }, "the subfolder's waits")
        next.locked { next.promoteProvisionalFiles(at: Date(timeIntervalSinceNow: ProvisionalFiles.grace + 1)) }
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Books", "list.txt.a1B2c3", "top.csv.000042"])
        XCTAssertEqual(try mount.stored(.notebook, "list.txt.a1B2c3"), "kept")
    }

    /// A sibling's file of the same name arriving while one waits: both
    /// are kept, each a row.
    func testASiblingsFileOfTheNameMeanwhileKeepsBoth() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/data.csv.123456", "ours")
        try mount.store.put(.note(Note(title: "data.csv.123456", body: Array("theirs".utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                                       updatedAt: Timestamp(seconds: 1_700_000_000), kind: .file)))
        mount.feed()
        promote(mount, after: ProvisionalFiles.grace + 1)
        let rows = try mount.store.summaries(.notebook).filter { $0.name == "data.csv.123456" }
        XCTAssertEqual(rows.count, 2)
        let names = try mount.list("notebook")
        let texts = try names.map { try mount.text("notebook/" + $0) ?? "" }
        XCTAssertEqual(texts.sorted(), ["ours", "theirs"], "\(names)")
    }

    /// An ignored file kept in the notebook's top folder stays local at the
    /// next mount (the adoption of an older build's local files skipped no
    /// ignore rule, and synced it).
    func testAnIgnoredFileStaysLocalAtTheNextMount() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/.quireignore", "*.log\nsecret.txt\n")
        try mount.writeFile("notebook/build.log", "local")
        try mount.writeFile("notebook/secret.txt", "local too")
        try mount.writeFile("notebook/kept.txt", "synced")
        mount.fileSystem.destroy()
        XCTAssertEqual(try mount.liveTitles(.notebook), ["kept.txt"])
        let next = try mount.nextMount()
        XCTAssertEqual(try mount.liveTitles(.notebook), ["kept.txt"], "still local after the next mount")
        let ignored = next.locked { next.ignoredNotebookFiles() }
        XCTAssertEqual(ignored.count, 2, "\(ignored)")
    }
}
