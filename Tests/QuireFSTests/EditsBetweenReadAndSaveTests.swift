import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// A sibling's version of a note landing while an editor has it read but
/// not yet saved (two devices editing one note, online): the editor's save
/// keeps the sibling's paragraphs, and no read is cut short by a size the
/// kernel was told of an older version.
final class EditsBetweenReadAndSaveTests: XCTestCase {
    /// Another writer's version of `title` (a sibling's, as the store holds it after a join).
    private func landsElsewhere(_ mount: DirectMount, _ title: String, _ text: String) throws {
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == title }?.key)
        _ = try mount.store.saveProse(.note(Note(title: title, body: Array(text.utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                                                 updatedAt: Timestamp(seconds: 1_700_000_100))), key: key)
    }

    /// The editor read the note, closed it, and writes it whole later, in
    /// place (O_TRUNC) or after renaming the old file to a backup (vim).
    /// The truncating open shows the editor nothing: what it left out is
    /// counted against what it read, not against the text at that open.
    func testAParagraphThatLandsBetweenAnEditorsReadAndItsSaveStays() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n\ntwo\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n\ntwo\n")
        try landsElsewhere(mount, "A", "one\n\ntwo\n\nthree\n")
        mount.feed()
        let file = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(file, "one\n\ntwo\n\nmine\n")
        try mount.close(file)
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "three", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }

        // vim: the note renamed to its backup name, the text written as a new file of its name.
        XCTAssertEqual(try mount.text("notebook/A.md"), text)
        try landsElsewhere(mount, "A", text + "\nfour\n")
        mount.feed()
        try mount.rename("notebook/A.md", "notebook/A.md~")
        try mount.writeFile("notebook/A.md", text + "\nmine again\n")
        try mount.unlink("notebook/A.md~")
        let after = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["three", "four", "mine again"] { XCTAssertTrue(after.contains(word), "\(word) in \(after)") }
    }

    /// An editor keeps its text after a save (vim, VS Code) and saves
    /// again without reading: the sibling's paragraph its first save was
    /// merged with was never in its buffer, so it is no deletion of its.
    func testASaveThatWasMergedLeavesTheNextSaveItsOwnBaseline() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        mount.feed()
        var buffer = "one\n"
        for (n, word) in ["mine", "more", "most"].enumerated() {
            buffer += "\n\(word)\n"
            if n == 1 {
                try mount.writeFile("notebook/A.md.tmp\(n)", buffer)
                try mount.rename("notebook/A.md.tmp\(n)", "notebook/A.md")
            } else {
                let file = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
                try mount.write(file, buffer)
                try mount.close(file)
            }
            mount.feed()
            let text = try XCTUnwrap(mount.stored(.notebook, "A"))
            for kept in ["one", "two", word] { XCTAssertTrue(text.contains(kept), "save \(n): \(kept) in \(text)") }
        }
    }

    /// Opens, reads and closes `path` as `request`'s program.
    private static func read(_ mount: DirectMount, _ path: String, as request: FuseRequest) throws -> String {
        let inode = try mount.lookup(path).attributes.inode
        let reply = try mount.fileSystem.open(inode, flags: FuseOpenFlags(rawValue: O_RDONLY), request: request)
        let bytes = try mount.fileSystem.read(inode, handle: reply.handle, offset: 0, size: 1 << 16, request: request)
        try mount.fileSystem.release(inode, handle: reply.handle, flags: FuseOpenFlags(rawValue: O_RDONLY), request: request)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Another program (an indexer, a file manager, Obsidian beside vim)
    /// reads the note after a sibling's paragraph landed: the editor, which
    /// read it before, was not shown that paragraph, and its save keeps it.
    func testAnotherProgramsReadIsNotTheEditorsBaseline() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        let indexer = try startOtherProgram()
        defer { indexer.process.terminate() }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n", "the editor reads")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        mount.feed()
        XCTAssertEqual(try Self.read(mount, "notebook/A.md", as: indexer.request), "one\n\ntwo\n", "the indexer reads")
        let file = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(file, "one\n\nmine\n")
        try mount.close(file)
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
        // A program that read nothing of it saves against what the device showed.
        XCTAssertEqual(ProcessGroups.threadGroup(getpid()), getpid())
        XCTAssertNil(ProcessGroups.threadGroup(-1))
    }

    /// An indexer that reads every note between the editor's read and its
    /// save pushes its own baselines out, not the editor's: the sibling's
    /// paragraph it read is still no deletion of the editor's save.
    func testAnIndexerReadingEveryNoteKeepsTheEditorsBaseline() throws {
        let others = ShownBaselines.capacity + 44
        let mount = try DirectMount { store in
            _ = try store.putNote("A", "one\n")
            for i in 0..<others { _ = try store.putNote("N\(i)", "note \(i)\n") }
        }
        let indexer = try startOtherProgram()
        defer { indexer.process.terminate() }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n", "the editor reads")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        mount.feed()
        for name in ["A"] + (0..<others).map({ "N\($0)" }) { _ = try Self.read(mount, "notebook/\(name).md", as: indexer.request) }
        let file = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(file, "one\n\nmine\n")
        try mount.close(file)
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
    }

    /// The editor itself read more notes than any baseline table keeps (a
    /// `grep -r`, Obsidian opening a vault) after it read the note, and a
    /// sibling's paragraph landed meanwhile: with its text evicted, the
    /// version it was shown is still known, and the stored one is not it.
    func testAnEditorThatReadManyNotesSinceDeletesNoneOfASiblingsNewParagraph() throws {
        let others = ShownBaselines.capacity + 44
        let mount = try DirectMount { store in
            _ = try store.putNote("A", "one\n")
            for i in 0..<others { _ = try store.putNote("N\(i)", "note \(i)\n") }
        }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n", "the editor reads")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        mount.feed()
        for i in 0..<others { _ = try mount.text("notebook/N\(i).md") }
        let file = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(file, "one\n\nmine\n")
        try mount.close(file)
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }

        // The same by a save by rename.
        for i in 0..<others { _ = try mount.text("notebook/N\(i).md") }
        try landsElsewhere(mount, "A", text + "\nthree\n")
        mount.feed()
        try mount.writeFile("notebook/A.md.tmp1", "one\n\ntwo\n\nmine\n\nmore\n")
        try mount.rename("notebook/A.md.tmp1", "notebook/A.md")
        let after = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "mine", "three", "more"] { XCTAssertTrue(after.contains(word), "\(word) in \(after)") }
    }

    /// A note nobody on this device read since its sibling's paragraph
    /// landed, written whole (`printf > note.md`): the paragraph stays. One
    /// unchanged since the mount started is replaced whole, as it always was.
    func testAWholeWriteOfANoteNeverShownHereKeepsASiblingsParagraphThatLandedSince() throws {
        let mount = try DirectMount { store in
            _ = try store.putNote("A", "one\n")
            _ = try store.putNote("B", "old\n")
        }
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        mount.feed()
        try mount.writeFile("notebook/A.md", "mine\n")   // an O_TRUNC open of the note
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }

        try mount.writeFile("notebook/B.md", "new\n")
        XCTAssertEqual(try mount.stored(.notebook, "B"), "new\n")
        // Once shown, a note is replaced whole again.
        _ = try mount.text("notebook/A.md")
        try mount.writeFile("notebook/A.md", "only\n")
        XCTAssertEqual(try mount.stored(.notebook, "A"), "only\n")
    }

    /// rsync opens the note it is about to replace, reads none of it, and
    /// renames its temp file over it: an open is not a showing, so a
    /// sibling's paragraph that landed since the note was last read stays.
    func testAnOpenWithoutAReadShowsNothing() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n\ntwo\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n\ntwo\n")
        try landsElsewhere(mount, "A", "one\n\ntwo\n\nsibling\n")
        mount.feed()
        try mount.close(try mount.open("notebook/A.md", O_RDONLY))
        try mount.writeFile("notebook/.A.md.Xa12bc", "one\n\ntwo\n\nrestored\n")
        try mount.rename("notebook/.A.md.Xa12bc", "notebook/A.md")
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "sibling", "restored"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
    }

    /// A program reading a note through the page cache reads on until a
    /// read returns nothing; a sibling's version that lands before that
    /// last read, with a paragraph inserted before the end, must not feed it
    /// the new version's bytes from the old end on (a paragraph cut in two,
    /// then saved). A version that only grew at the end it follows (tail -f).
    func testAPageCacheReaderAtTheOldEndGetsNoPieceOfAVersionChangedBeforeIt() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n\ntwo\n") }
        func readAt(_ file: DirectMount.Descriptor, _ offset: Int) throws -> String {
            String(decoding: try mount.fileSystem.read(file.inode, handle: file.handle, offset: UInt64(offset), size: 4096, request: mount.caller),
                   as: UTF8.self)
        }
        let reader = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertFalse(reader.options.contains(.directIO))
        XCTAssertEqual(try readAt(reader, 0), "one\n\ntwo\n")
        try landsElsewhere(mount, "A", "zero\n\none\n\ntwo\n")
        mount.feed()
        XCTAssertEqual(try readAt(reader, 9), "", "the old version ends there")
        try mount.close(reader)
        XCTAssertEqual(try mount.text("notebook/A.md"), "zero\n\none\n\ntwo\n")

        let follower = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertEqual(try readAt(follower, 0), "zero\n\none\n\ntwo\n")
        try landsElsewhere(mount, "A", "zero\n\none\n\ntwo\n\nthree\n")
        mount.feed()
        XCTAssertEqual(try readAt(follower, 15), "\nthree\n", "an append is followed")
        try mount.close(follower)
    }

    /// An append is sent at the offset where the kernel believes the file
    /// ends, and the kernel writes its bytes there in its own pages. With a
    /// sibling's longer version in and the kernel not told yet, that is
    /// before the text's end: the text is appended to at its end, and the
    /// kernel's size and pages are dropped (the change feed leaves our own
    /// writes alone), or a reader kept on them would be shown a cut text
    /// and its save would delete the cut paragraphs.
    func testAnAppendAtAnOldEndDropsTheKernelsSizeAndPages() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        let appender = try mount.open("notebook/A.md", O_WRONLY | O_APPEND)
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        _ = mount.feed()
        // The kernel still thought the file 4 bytes long.
        try mount.write(appender, "\nmine\n", at: 4)
        let queued = mount.fileSystem.locked { mount.fileSystem.kernelCache.take() }
        XCTAssertTrue(queued.contains(.inode(appender.inode.rawValue)), "\(queued)")
        try mount.close(appender)
        XCTAssertEqual(try mount.stored(.notebook, "A"), "one\n\ntwo\n\nmine\n")
        // Until the kernel has dropped them, a reader is served past them.
        let reader = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertFalse(reader.options.contains(.keepCache))
        XCTAssertTrue(reader.options.contains(.directIO))
        XCTAssertEqual(try mount.read(reader), "one\n\ntwo\n\nmine\n")
        try mount.close(reader)
        // An append at the end the kernel knows drops nothing.
        _ = mount.feed()
        let next = try mount.open("notebook/A.md", O_WRONLY | O_APPEND)
        try mount.write(next, "more\n", at: "one\n\ntwo\n\nmine\n".utf8.count)
        XCTAssertFalse(mount.fileSystem.locked { mount.fileSystem.kernelCache.take() }.contains(.inode(next.inode.rawValue)))
        try mount.close(next)
    }

    /// A note opened to be read and written in place (`r+`: read, seek 0,
    /// truncate, write) has its deletions counted against the text at its
    /// open, so it reads exactly that, from the daemon: never pages or a
    /// size the kernel kept of another version (three devices appending
    /// to and editing one note lost paragraphs that way). A reader keeps
    /// the page cache; so does an attachment, which is bytes.
    func testANoteEditedInPlaceReadsTheTextItsSaveIsCountedAgainst() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        let reader = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(reader.options.contains(.keepCache), "the kernel holds this version")
        try mount.close(reader)
        let editor = try mount.open("notebook/A.md", O_RDWR)
        XCTAssertFalse(editor.options.contains(.keepCache))
        XCTAssertTrue(editor.options.contains(.directIO))
        XCTAssertEqual(try mount.read(editor), "one\n")
        try mount.truncate(editor, to: 0)
        _ = try mount.write(editor, "one\n\ntwo\n")
        try mount.close(editor)
        XCTAssertEqual(try mount.stored(.notebook, "A"), "one\n\ntwo\n")
        try mount.writeFile("notebook/data.bin", "bytes")
        let attachment = try mount.open("notebook/data.bin", O_RDWR)
        XCTAssertFalse(attachment.options.contains(.directIO))
        try mount.close(attachment)
    }

    /// An editor that keeps one note open all day and glances at many
    /// others: each save shows it the note again, so its baseline outlives
    /// the notes it read since its first read of it, in its own texts and
    /// in the device's, and a sibling's paragraph it never saw stays.
    func testANoteSavedAgainOutlivesTheNotesReadSinceItWasFirstShown() throws {
        let glanced = ShownBaselines.perProcess
        let indexed = 200
        let mount = try DirectMount { store in
            _ = try store.putNote("A", "one\n")
            for i in 0..<(glanced + indexed) { _ = try store.putNote("N\(i)", "note \(i)\n") }
        }
        let indexer = try startOtherProgram()
        defer { indexer.process.terminate() }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n", "the editor reads")
        for i in 0..<(glanced - 1) { _ = try mount.text("notebook/N\(i).md") }
        let saved = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(saved, "one\n\nmine\n")
        try mount.close(saved)
        _ = try mount.text("notebook/N\(glanced - 1).md")
        for i in glanced..<(glanced + indexed) { _ = try Self.read(mount, "notebook/N\(i).md", as: indexer.request) }
        // Since A was first shown, more notes than either bound; since its save, fewer.
        try landsElsewhere(mount, "A", "one\n\nmine\n\ntwo\n")
        mount.feed()
        let file = try mount.open("notebook/A.md", O_WRONLY | O_TRUNC)
        try mount.write(file, "one\n\nmine\n\nmore\n")
        try mount.close(file)
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "mine", "two", "more"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
    }

    /// Texts are dropped least recently shown first, and showing the same
    /// texts again and again keeps the order's length bounded.
    func testBaselinesGoLeastRecentlyShownFirst() {
        var texts = BoundedTexts<Int>(capacity: 3)
        for key in [1, 2, 3] { texts[key] = [UInt8(key)] }
        texts[1] = [10]
        texts[4] = [4]
        XCTAssertNil(texts[2], "shown longest ago")
        XCTAssertEqual(texts[1], [10], "shown again since")
        XCTAssertEqual(texts[3], [3])
        texts.removeOldest()
        XCTAssertNil(texts[3])
        XCTAssertEqual(texts.count, 2)
        texts[4] = nil
        texts[4] = [44]
        texts[5] = [5]
        texts[6] = [6]
        XCTAssertNil(texts[1])
        XCTAssertEqual(texts[4], [44], "shown again after its removal: no older place evicts it")
        texts[7] = [7]
        XCTAssertNil(texts[4])
        for round in 0..<10_000 {
            texts[1 + round % 3] = [UInt8(round % 256)]
            XCTAssertLessThanOrEqual(texts.queued, 2 * texts.count + 65)
        }
        XCTAssertEqual(texts.count, 3)
    }

    /// An attachment's bytes, or a text past the size kept, are no baseline:
    /// only their version is (a viewer reading 15 MB files held every copy).
    func testBaselinesKeepNoBinaryOrOversizedTextOnlyItsVersion() {
        var shown = ShownBaselines()
        let ref = RowRef(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: 9, count: 16))!)
        shown.record(ref, Array("a note\n".utf8), process: 7, version: 3)
        XCTAssertEqual(shown.baseline(ref, process: 7), Array("a note\n".utf8))
        shown.record(ref, [0xFF, 0xD8, 0xFF, 0xE0, 0x00], process: 7, version: 4)
        XCTAssertNil(shown.baseline(ref, process: 7), "a photo's bytes are not kept, and the older text is gone")
        XCTAssertTrue(shown.showed(ref, version: 4))
        shown.record(ref, [UInt8](repeating: UInt8(ascii: "a"), count: ShownBaselines.maxTextBytes + 1), process: 8, version: 5)
        XCTAssertNil(shown.baseline(ref, process: 8))
        XCTAssertNil(shown.baseline(ref, process: 7))
        XCTAssertTrue(shown.showed(ref, version: 5))
        shown[ref] = [0xFF]
        XCTAssertNil(shown[ref])
    }

    /// Past the bound, the process holding the most baselines loses its oldest.
    func testProcessBaselinesAreBoundedPerProcessAndInAll() {
        var texts = ProcessTexts(capacity: 10, perProcess: 4, isRunning: { _ in true })
        func ref(_ i: Int) -> RowRef { RowRef(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: UInt8(i), count: 16))!) }
        for i in 0..<3 { texts.set(ref(i), [UInt8(i)], process: 1) }
        for i in 0..<20 { texts.set(ref(100 + i), [UInt8(i)], process: 2) }
        XCTAssertEqual(texts.count, 7)
        XCTAssertEqual((0..<3).compactMap { texts.text(ref($0), process: 1) }, [[0], [1], [2]], "the editor's stay")
        XCTAssertEqual((16..<20).compactMap { texts.text(ref(100 + $0), process: 2) }.count, 4, "the reader keeps its latest four")
        XCTAssertNil(texts.text(ref(100), process: 2))
        for p in 3..<6 { for i in 0..<4 { texts.set(ref(i), [UInt8(p)], process: Int32(p)) } }
        XCTAssertEqual(texts.count, 10, "at most ten in all")
        XCTAssertEqual(texts.text(ref(3), process: 5), [5], "the newest stays")
        // A shell loop's one-shot readers have ended: theirs go, not the editor's.
        var running: Set<Int32> = [1]
        var shell = ProcessTexts(capacity: 4, perProcess: 4, isRunning: { running.contains($0) })
        shell.set(ref(0), [0], process: 1)
        shell.set(ref(1), [1], process: 1)
        for p in 10..<30 { running.insert(Int32(p)); shell.set(ref(p), [UInt8(p)], process: Int32(p)); running.remove(Int32(p)) }
        XCTAssertLessThanOrEqual(shell.count, 4)
        XCTAssertEqual(shell.text(ref(0), process: 1), [0], "the editor's stay")
        XCTAssertEqual(shell.text(ref(1), process: 1), [1])
        XCTAssertEqual(shell.text(ref(29), process: 29), [29], "the newest stays")
        XCTAssertTrue(ProcessGroups.isRunning(getpid()))
    }

    /// A version the listing does not show yet (the feed applies it next
    /// round), or whose invalidation has not reached the kernel: the kernel
    /// holds the older version's size, so the open reads past it (direct
    /// I/O) and its stat agrees with what it reads.
    func testAnOpenOfAVersionTheKernelWasNotToldOfReadsItWhole() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        let racing = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(racing.options.contains(.directIO), "\(racing.options)")
        XCTAssertFalse(racing.options.contains(.keepCache))
        XCTAssertEqual(try mount.size(racing), 9, "stat agrees with the text the file reads")
        XCTAssertEqual(try mount.read(racing), "one\n\ntwo\n")
        // Another open while that one holds the text: just as far behind.
        let beside = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(beside.options.contains(.directIO), "\(beside.options)")
        try mount.close(beside)
        try mount.close(racing)
        // Applied, its invalidation on the way to the kernel: still behind.
        _ = mount.fileSystem.takeChanges()
        let meanwhile = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(meanwhile.options.contains(.directIO))
        try mount.close(meanwhile)
        // Delivered: pages and size are the kernel's to keep again.
        mount.fileSystem.locked { mount.fileSystem.kernelCache.delivered() }
        let settled = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertFalse(settled.options.contains(.directIO))
        try mount.close(settled)
        let again = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(again.options.contains(.keepCache), "an unchanged note keeps its pages")
        try mount.close(again)
    }

    /// A reader with direct I/O reads in pieces (Python's read() asks for
    /// the size it was told, then for more until the end): a sibling's
    /// version landing between two pieces must not give it the rest of
    /// another text, which cut a paragraph in two.
    func testADirectReaderKeepsTheTextItStartedReading() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        let reader = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(reader.options.contains(.directIO))
        func piece(_ offset: UInt64, _ size: Int) throws -> String {
            String(decoding: try mount.fileSystem.read(reader.inode, handle: reader.handle, offset: offset, size: size, request: mount.caller),
                   as: UTF8.self)
        }
        XCTAssertEqual(try piece(0, 5), "one\n\n")
        try landsElsewhere(mount, "A", "one\n\ntwo and more\n\nthree\n")
        mount.feed()
        XCTAssertEqual(try piece(5, 100), "two\n", "the rest of the text it started reading")
        try mount.close(reader)
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n\ntwo and more\n\nthree\n", "a new open reads the new version")
    }

    /// A save by rename whose text was merged with a sibling's paragraph:
    /// the file the kernel moved to the name was written with fewer bytes
    /// than the note holds now, so its size and pages are dropped.
    func testASaveByRenameMergedWithASiblingsParagraphIsReadWhole() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        try landsElsewhere(mount, "A", "one\n\ntwo\n")
        mount.feed()
        try mount.writeFile("notebook/A.md.tmp1", "one\n\nmine\n")
        try mount.rename("notebook/A.md.tmp1", "notebook/A.md")
        let inode = try mount.lookup("notebook/A.md").attributes.inode.rawValue
        XCTAssertTrue(mount.fileSystem.locked { mount.fileSystem.kernelCache.mayHoldOlder(inode) })
        let file = try mount.open("notebook/A.md", O_RDONLY)
        XCTAssertTrue(file.options.contains(.directIO))
        let text = try mount.read(file)
        try mount.close(file)
        for word in ["one", "two", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
        XCTAssertEqual(try mount.lookup("notebook/A.md").attributes.size, UInt64(text.utf8.count))
    }
}
