import Foundation
import Glibc
import Synchronization
import QuireCore
@testable import QuireFS
import QuireFuse
import XCTest

/// Files open across renames, exchanges and unlinks, driven directly
/// (no mount): the cases fixed one by one in the mount's history, each
/// as the kernel sends it. Every request also checks that no working copy
/// outlives its handles (`DirectMount.checked`).
final class OpenFilesAcrossRenamesTests: XCTestCase {
    /// A saga entry (its key is its date) renamed away, then its date
    /// written anew: the new file holds exactly the new text, not the new
    /// text over the old entry's tail. The same for a setting.
    func testADateOrSettingWrittenAgainAfterARenameHoldsOnlyTheNewText() throws {
        let mount = try DirectMount { store in
            try store.put(.saga(SagaEntry(date: "2024-05-01", text: Array("a long and busy day\n".utf8), updatedAt: Timestamp(seconds: 1))))
            try store.put(.setting(Setting(name: "theme", value: "solarized", updatedAt: Timestamp(seconds: 1))))
        }
        try mount.rename("saga/2024-05-01.md", "saga/2024-05-02.md")
        try mount.writeFile("saga/2024-05-01.md", "hi\n")
        XCTAssertEqual(try mount.text("saga/2024-05-01.md"), "hi\n")
        XCTAssertEqual(try mount.stored(.saga, "2024-05-01"), "hi\n")
        XCTAssertEqual(try mount.text("saga/2024-05-02.md"), "a long and busy day\n")

        try mount.rename("settings/theme.txt", "settings/colours.txt")
        try mount.writeFile("settings/theme.txt", "dark\n")
        XCTAssertEqual(try mount.text("settings/theme.txt"), "dark\n")
        XCTAssertEqual(try mount.text("settings/colours.txt"), "solarized\n")
    }

    /// RENAME_EXCHANGE of a scratch file and a note, both ways and with a
    /// reader holding the note: each name shows the other's text at once.
    func testExchangeOfAScratchFileAndANoteShowsTheNewTextAtOnce() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "old plan\n") }
        try mount.writeFile("notebook/.Plan.md.new", "new plan\n")
        try mount.rename("notebook/.Plan.md.new", "notebook/Plan.md", flags: .exchange)
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "new plan\n")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "new plan\n")
        XCTAssertEqual(try mount.text("notebook/.Plan.md.new"), "old plan\n")

        try mount.writeFile("notebook/.Plan.md.newer", "newer plan\n")
        try mount.rename("notebook/Plan.md", "notebook/.Plan.md.newer", flags: .exchange)
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "newer plan\n")
        XCTAssertEqual(try mount.text("notebook/.Plan.md.newer"), "new plan\n")

        let reader = try mount.open("notebook/Plan.md", O_RDONLY)
        try mount.writeFile("notebook/.Plan.md.last", "last plan\n")
        try mount.rename("notebook/.Plan.md.last", "notebook/Plan.md", flags: .exchange)
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "last plan\n")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "last plan\n")
        XCTAssertEqual(try mount.text("notebook/.Plan.md.last"), "newer plan\n")
        XCTAssertEqual(try mount.read(reader), "newer plan\n", "the reader's inode went to the scratch name")
        try mount.close(reader)
    }

    /// A file removed while open (sed -i saves over it; rm) stays usable
    /// through its descriptor: writes succeed and go nowhere, reads and
    /// fstat work, ftruncate cuts its own text, never the new file's.
    func testAFileRemovedWhileOpenStaysUsableThroughItsDescriptor() throws {
        var goneKey: RowKey?
        let mount = try DirectMount { store in
            try store.putNote("Log", "one\n")
            goneKey = try store.putNote("Gone", "bye\n").key
        }
        let logger = try mount.open("notebook/Log.md", O_RDWR | O_APPEND)
        try mount.write(logger, "two\n")
        try mount.fileSystem.synchronize(logger.inode, handle: logger.handle, dataOnly: false, request: mount.caller)
        // sed -i: a temp file with the new text, renamed over the note.
        try mount.writeFile("notebook/sedAb12Cd", "uno\ntwo\n")
        try mount.rename("notebook/sedAb12Cd", "notebook/Log.md")
        XCTAssertEqual(try mount.write(logger, "three\n"), 6, "a write to the replaced file must not fail")
        XCTAssertEqual(try mount.read(logger), "one\ntwo\nthree\n")
        try mount.truncate(logger, to: 4)
        XCTAssertEqual(try mount.read(logger), "one\n")
        XCTAssertEqual(try mount.text("notebook/Log.md"), "uno\ntwo\n")

        let holder = try mount.open("notebook/Gone.md", O_RDWR)
        try mount.unlink("notebook/Gone.md")
        XCTAssertEqual(try mount.write(holder, "BYE"), 3, "a write to an unlinked file must not fail")
        XCTAssertEqual(try mount.read(holder), "BYE\n")
        XCTAssertEqual(try mount.size(holder), 4)
        try mount.close(holder)
        try mount.close(logger)
        XCTAssertEqual(try mount.store.row(.notebook, goneKey!)?.content, nil, "a tombstone")
        XCTAssertEqual(try mount.stored(.notebook, "Log"), "uno\ntwo\n")
        mount.fileSystem.destroy()
        XCTAssertEqual(try mount.stored(.notebook, "Log"), "uno\ntwo\n", "nothing of the orphan is committed at unmount")
    }

    /// RENAME_EXCHANGE of two notes while open: each descriptor follows its
    /// file, and unsaved text ends up under the name the file went to.
    func testExchangeWhileOpenKeepsEachDescriptorWithItsFile() throws {
        let mount = try DirectMount { store in
            try store.putNote("A", "alpha\n")
            try store.putNote("B", "beta\n")
        }
        let reader = try mount.open("notebook/A.md", O_RDONLY)
        try mount.rename("notebook/A.md", "notebook/B.md", flags: .exchange)
        XCTAssertEqual(try mount.read(reader), "alpha\n", "the descriptor follows its file to B.md")
        XCTAssertEqual(try mount.text("notebook/A.md"), "beta\n")
        XCTAssertEqual(try mount.text("notebook/B.md"), "alpha\n")
        try mount.close(reader)

        let writer = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(writer, "gamma\n")
        try mount.rename("notebook/A.md", "notebook/B.md", flags: .exchange)
        try mount.write(writer, "gamma\n", at: 6)
        try mount.close(writer)
        XCTAssertEqual(try mount.text("notebook/B.md"), "gamma\ngamma\n")
        XCTAssertEqual(try mount.text("notebook/A.md"), "alpha\n")
        mount.fileSystem.destroy()
        XCTAssertEqual(try mount.stored(.notebook, "B"), "gamma\ngamma\n")
        XCTAssertEqual(try mount.stored(.notebook, "A"), "alpha\n")
    }

    /// A note renamed to a name that is not a row name while a program
    /// still writes to it: the writes go to the file under its new name.
    func testWritesAfterARenameToAScratchNameFollowTheFile() throws {
        let mount = try DirectMount { try $0.putNote("Kept", "first\n") }
        let fresh = try mount.create("notebook/Draft.md")
        try mount.write(fresh, "a\n")
        try mount.rename("notebook/Draft.md", "notebook/Draft.md~")
        try mount.write(fresh, "b\n", at: 2)
        try mount.close(fresh)
        XCTAssertEqual(try mount.text("notebook/Draft.md~"), "a\nb\n")
        XCTAssertFalse(mount.exists("notebook/Draft.md"))
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Kept"], "no row for a file that was renamed away")

        let kept = try mount.open("notebook/Kept.md", O_WRONLY | O_APPEND)
        try mount.rename("notebook/Kept.md", "notebook/Kept.txt")
        try mount.write(kept, "second\n")
        try mount.close(kept)
        XCTAssertEqual(try mount.text("notebook/Kept.txt"), "first\nsecond\n")
    }

    /// A note deleted elsewhere (another quire command, sync) while a
    /// program reads it: the open file keeps its text and its size.
    func testAReaderOfANoteDeletedElsewhereKeepsReading() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Shared", "still here\n").key }
        let reader = try mount.open("notebook/Shared.md", O_RDONLY)
        XCTAssertEqual(try mount.read(reader), "still here\n")
        try mount.store.delete(.notebook, key!)
        let invalidations = mount.feed()
        XCTAssertTrue(invalidations.contains(.entry(parent: InodeTable.folderInode(.notebook), name: CanonicalName("Shared.md"))))
        XCTAssertTrue(invalidations.contains(.inode(reader.inode.rawValue)))
        XCTAssertFalse(mount.exists("notebook/Shared.md"))
        XCTAssertEqual(try mount.read(reader), "still here\n")
        XCTAssertEqual(try mount.size(reader), 11)
        try mount.close(reader)
    }

    /// A temp file renamed over a note (and onto a free name) before it is
    /// closed, as Python's os.replace inside a `with` block does: what is
    /// written after the rename lands in the note.
    func testWritesToATempFileAfterItWasRenamedOverANoteLandInTheNote() throws {
        let mount = try DirectMount { try $0.putNote("Kept", "old\n") }
        for name in ["Kept", "New"] {
            let temp = try mount.create("notebook/.\(name).tmp")
            try mount.write(temp, "first\n")
            try mount.rename("notebook/.\(name).tmp", "notebook/\(name).md")
            try mount.write(temp, "second\n", at: 6)
            try mount.close(temp)
            XCTAssertEqual(try mount.text("notebook/\(name).md"), "first\nsecond\n", name)
            XCTAssertEqual(try mount.stored(.notebook, name), "first\nsecond\n", name)
        }
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Kept", "New"])
    }

    /// RENAME_EXCHANGE of a note and a scratch file while both are open:
    /// the temp file's descriptor now writes the note, the note's the temp file.
    func testExchangeWithAScratchFileMovesTheOpenFilesWithTheirInodes() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "old plan\n") }
        let onNote = try mount.open("notebook/Plan.md", O_RDWR)
        try mount.writeFile("notebook/.Plan.md.new", "new plan\n")
        let onTemp = try mount.open("notebook/.Plan.md.new", O_WRONLY | O_APPEND)
        try mount.rename("notebook/.Plan.md.new", "notebook/Plan.md", flags: .exchange)
        try mount.write(onTemp, "and more\n")
        try mount.close(onTemp)
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "new plan\nand more\n", "the temp file's descriptor writes the note now")
        XCTAssertEqual(try mount.read(onNote), "old plan\n", "the note's descriptor reads the temp file now")
        try mount.write(onNote, "OLD")
        try mount.close(onNote)
        XCTAssertEqual(try mount.text("notebook/.Plan.md.new"), "OLD plan\n")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "new plan\nand more\n")
    }

    /// A saga date deleted and written again starts without the session
    /// attributes the old file had (it gets the same inode number).
    func testADateWrittenAgainStartsWithoutTheOldSessionAttributes() throws {
        let mount = try DirectMount()
        try mount.writeFile("saga/2024-05-01.md", "first\n")
        let inode = try mount.lookup("saga/2024-05-01.md").attributes.inode
        try mount.fileSystem.setExtendedAttribute(inode, name: "user.mime_type", value: Array("text/markdown".utf8), flags: [], request: mount.caller)
        XCTAssertEqual(try mount.fileSystem.extendedAttribute(inode, name: "user.mime_type", request: mount.caller), Array("text/markdown".utf8))
        try mount.unlink("saga/2024-05-01.md")
        try mount.writeFile("saga/2024-05-01.md", "second\n")
        let again = try mount.lookup("saga/2024-05-01.md").attributes.inode
        XCTAssertEqual(again, inode)
        XCTAssertThrowsError(try mount.fileSystem.extendedAttribute(again, name: "user.mime_type", request: mount.caller)) {
            XCTAssertEqual($0 as? FuseError, .noData)
        }
    }

    /// A card renamed while open keeps its new name at close. The file
    /// name is the client's handle (vdir), apart from the card's FN: a
    /// rename leaves the card's text alone, and an FN edit the name.
    func testRenamingAnOpenContactKeepsTheNewNameAtClose() throws {
        let mount = try DirectMount {
            try $0.put(.contact(Contact(name: "Ann", emails: ["ann@example.org"], updatedAt: Timestamp(seconds: 1))))
        }
        let file = try mount.open("contacts/Ann.vcf", O_RDWR)
        let shown = try mount.read(file)
        try mount.truncate(file, to: 0)
        try mount.write(file, shown.replacingOccurrences(of: "ann@example.org", with: "ann@work.example"))
        try mount.rename("contacts/Ann.vcf", "contacts/Anna.vcf")
        try mount.close(file)
        let card = try XCTUnwrap(try mount.text("contacts/Anna.vcf"))
        XCTAssertTrue(card.contains("FN:Ann\r\n") && card.contains("ann@work.example"), card)
        XCTAssertFalse(mount.exists("contacts/Ann.vcf"))
        XCTAssertEqual(try mount.liveTitles(.contacts), ["Anna"])

        let second = try mount.open("contacts/Anna.vcf", O_RDWR)
        try mount.truncate(second, to: 0)
        try mount.write(second, card.replacingOccurrences(of: "FN:Ann\r\n", with: "FN:Annabel\r\n"))
        try mount.rename("contacts/Anna.vcf", "contacts/Ana.vcf")
        try mount.close(second)
        XCTAssertEqual(try mount.liveTitles(.contacts), ["Ana"])
        XCTAssertTrue(try XCTUnwrap(try mount.text("contacts/Ana.vcf")).contains("FN:Annabel\r\n"))
    }

    /// Two files open on one note share its text; closing one leaves the
    /// other reading and writing it, and the copy goes with the last.
    func testTwoOpenFilesShareOneCopyUntilTheLastCloses() throws {
        let mount = try DirectMount { try $0.putNote("Shared", "text\n") }
        let first = try mount.open("notebook/Shared.md", O_RDWR)
        let second = try mount.open("notebook/Shared.md", O_RDWR)
        try mount.write(first, "TEXT\n")
        XCTAssertEqual(try mount.read(second), "TEXT\n")
        let ref = try XCTUnwrap(mount.fileSystem.locked { mount.fileSystem.openFiles[first.handle]?.target.row })
        XCTAssertEqual(mount.fileSystem.locked { mount.fileSystem.openFiles.openCount(of: ref) }, 2)
        try mount.close(first)
        XCTAssertEqual(mount.fileSystem.locked { mount.fileSystem.openFiles.openCount(of: ref) }, 1)
        try mount.write(second, "more\n", at: 5)
        XCTAssertEqual(try mount.read(second), "TEXT\nmore\n")
        try mount.close(second)
        XCTAssertEqual(mount.fileSystem.locked { mount.fileSystem.openFiles.copyCount }, 0)
        XCTAssertEqual(try mount.stored(.notebook, "Shared"), "TEXT\nmore\n")
    }

    /// A save by rename over an open note: the open file becomes an orphan
    /// (its text kept), the note keeps its key, and the editor's temp row
    /// leaves no trace.
    func testSaveByRenameOverAnOpenNoteKeepsTheRowAndOrphansTheOpenFile() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Plan", "one\n").key }
        let open = try mount.open("notebook/Plan.md", O_RDONLY)
        try mount.writeFile("notebook/Plan.md.tmp.md", "two\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Plan", "Plan.md.tmp"])
        try mount.rename("notebook/Plan.md.tmp.md", "notebook/Plan.md")
        XCTAssertEqual(try mount.read(open), "one\n")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "two\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Plan"])
        XCTAssertEqual(try mount.store.summaries(.notebook).first?.key, key)
        try mount.close(open)
    }

    /// emacs's backup step: the note is renamed to its backup name (a
    /// local scratch file) and written anew under its name: the same row,
    /// key and history. A note renamed away and never written again is
    /// deleted (here at unmount; in a mount after the grace).
    func testAnEditorsBackupStepKeepsTheRowAndAnAbandonedOneIsDeleted() throws {
        var keptKey: RowKey?, goneKey: RowKey?
        let mount = try DirectMount { store in
            keptKey = try store.putNote("Kept", "vim\n").key
            goneKey = try store.putNote("Gone", "bye\n").key
        }
        try mount.rename("notebook/Kept.md", "notebook/Kept.md~")
        XCTAssertFalse(mount.exists("notebook/Kept.md"))
        try mount.writeFile("notebook/Kept.md", "emacs\n")
        XCTAssertEqual(try mount.text("notebook/Kept.md~"), "vim\n", "the backup is a local scratch file")
        XCTAssertEqual(try mount.store.summaries(.notebook).first { $0.name == "Kept" }?.key, keptKey)

        try mount.rename("notebook/Gone.md", "notebook/Gone.md~")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Gone", "Kept"], "waits for its name to come back")
        mount.fileSystem.destroy()
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Kept"])
        XCTAssertNil(try mount.store.row(.notebook, goneKey!)?.content, "a tombstone")
        XCTAssertEqual(try mount.text("notebook/Gone.md~"), "bye\n")
    }

    /// Two opens of an offloaded note during recalls (the lock is let go
    /// while one waits): they share one working copy, so what the first
    /// file wrote while the second still waited is not replaced by the
    /// second's recalled text, and closing one leaves the other working.
    func testTwoOpensDuringOneRecallShareTheText() throws {
        let body = "field notes\n"
        let calls = Atomic<Int>(0)
        let mount = try DirectMount({ store in
            let row = try store.putNote("Field", body)
            guard case .note(let note)? = row.content else { return XCTFail("not a note") }
            try store.markOffloaded(row.key, contentHash: note.contentHash, holders: [DeviceID(bytes: [UInt8](repeating: 7, count: 16))!])
        }, recall: { _, _, _ in
            // The first recall is quick, the second slow: the first file
            // writes while the second still waits.
            usleep(calls.wrappingAdd(1, ordering: .relaxed).oldValue == 0 ? 50_000 : 500_000)
            return Array(body.utf8)
        })
        let opened = Mutex<[DirectMount.Descriptor]>([])
        let group = DispatchGroup()
        for index in 0..<2 {
            group.enter()
            Thread {
                if let file = try? mount.open("notebook/Field.md", O_RDWR) {
                    if index == 0 { _ = try? mount.write(file, "First.\n", at: body.utf8.count) }
                    opened.withLock { $0.append(file) }
                }
                group.leave()
            }.start()
            usleep(10_000)
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        let both = opened.withLock { $0 }
        XCTAssertEqual(both.count, 2)
        XCTAssertEqual(try mount.read(both[1]), body + "First.\n", "the second file sees the first one's write")
        try mount.close(both[0])
        XCTAssertEqual(try mount.read(both[1]), body + "First.\n", "the other file still reads the note")
        try mount.write(both[1], "One more.\n", at: body.utf8.count + 7)
        try mount.close(both[1])
        XCTAssertEqual(try mount.stored(.notebook, "Field"), body + "First.\nOne more.\n")
    }
}
