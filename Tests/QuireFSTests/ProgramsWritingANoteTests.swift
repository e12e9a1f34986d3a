import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// Programs that write a note without replacing it whole (appends, a shell
/// redirection's two descriptors, an emptied file written through a
/// write-only descriptor): each save is counted against the text its
/// writes land on, and no paragraph is lost or repeated.
final class ProgramsWritingANoteTests: XCTestCase {
    /// `echo line >> note.md` as `request`'s program: open for appending, write at the end, close.
    private static func append(_ mount: DirectMount, _ path: String, _ line: String, as request: FuseRequest) throws {
        let inode = try mount.lookup(path).attributes.inode
        let flags = FuseOpenFlags(rawValue: O_WRONLY | O_APPEND)
        let reply = try mount.fileSystem.open(inode, flags: flags, request: request)
        let size = try mount.fileSystem.getAttributes(inode, handle: reply.handle, request: request).attributes.size
        _ = try mount.fileSystem.write(inode, handle: reply.handle, offset: size, data: Array(line.utf8), flags: flags, request: request)
        try mount.fileSystem.flush(inode, handle: reply.handle, request: request)
        try mount.fileSystem.release(inode, handle: reply.handle, flags: flags, request: request)
    }

    /// A log note two programs append to in turns (a cron job and a
    /// shell): each append lands after the other's, and the note holds each
    /// line once. An append is written onto the text as it is at its open,
    /// not onto what its program last wrote.
    func testTwoProgramsAppendingInTurnsWriteEachLineOnce() throws {
        let mount = try DirectMount { try $0.putNote("W", "base\n") }
        let other = try startOtherProgram()
        defer { other.process.terminate() }
        try Self.append(mount, "notebook/W.md", "from a\n", as: mount.caller)
        try Self.append(mount, "notebook/W.md", "from b\n", as: other.request)
        try Self.append(mount, "notebook/W.md", "from c\n", as: mount.caller)
        try Self.append(mount, "notebook/W.md", "from d\n", as: other.request)
        XCTAssertEqual(try mount.stored(.notebook, "W"), "base\nfrom a\nfrom b\nfrom c\nfrom d\n")
        XCTAssertEqual(try mount.text("notebook/W.md"), "base\nfrom a\nfrom b\nfrom c\nfrom d\n")
    }

    /// Every interleaving of two programs' appends (open, write, close,
    /// twice each): a file opened while another holds unsaved writes is
    /// counted against the text those writes landed on, so whichever
    /// closes first saves both, and nothing is repeated.
    func testInterleavedAppendsOfTwoProgramsWriteEachLineOnce() throws {
        let other = try startOtherProgram()
        defer { other.process.terminate() }
        enum Step { case open, write, close }
        let steps: [Step] = [.open, .write, .close, .open, .write, .close]
        func interleavings(_ a: Int, _ b: Int) -> [[Bool]] {
            if a == 0 { return [Array(repeating: false, count: b)] }
            if b == 0 { return [Array(repeating: true, count: a)] }
            return interleavings(a - 1, b).map { [true] + $0 } + interleavings(a, b - 1).map { [false] + $0 }
        }
        for order in interleavings(steps.count, steps.count) {
            let mount = try DirectMount { try $0.putNote("W", "base\n") }
            let inode = try mount.lookup("notebook/W.md").attributes.inode
            let flags = FuseOpenFlags(rawValue: O_WRONLY | O_APPEND)
            var next = [0, 0]
            var handles: [UInt64?] = [nil, nil]
            for first in order {
                let program = first ? 0 : 1
                let request = first ? mount.caller : other.request
                let step = steps[next[program]]
                next[program] += 1
                switch step {
                case .open: handles[program] = try mount.fileSystem.open(inode, flags: flags, request: request).handle
                case .write:
                    _ = try mount.fileSystem.write(inode, handle: handles[program]!, offset: 0, data: Array((first ? "x\n" : "y\n").utf8),
                                                   flags: flags, request: request)
                case .close:
                    try mount.fileSystem.flush(inode, handle: handles[program]!, request: request)
                    try mount.fileSystem.release(inode, handle: handles[program]!, flags: flags, request: request)
                }
            }
            let text = try XCTUnwrap(mount.stored(.notebook, "W"))
            XCTAssertEqual(text.split(separator: "\n", omittingEmptySubsequences: false).sorted(), ["", "base", "x", "x", "y", "y"],
                           "\(order.map { $0 ? "x" : "y" }.joined()): \(text)")
        }
    }

    /// A logger appends to a note an editor read; the editor saves its
    /// rewrite of the head line by rename. The note is the rewrite with the
    /// appended line after it, once: repeated, this doubled the note at
    /// every save.
    func testALineAppendedUnderAnEditorFollowsItsRewrite() throws {
        let mount = try DirectMount { try $0.putNote("Log", "REV s\nl1\nl2\n") }
        let logger = try startOtherProgram()
        defer { logger.process.terminate() }
        XCTAssertEqual(try mount.text("notebook/Log.md"), "REV s\nl1\nl2\n", "the editor reads")
        var expected = "REV s\nl1\nl2\n"
        for round in 1...5 {
            try Self.append(mount, "notebook/Log.md", "appended \(round)\n", as: logger.request)
            let rewrite = expected.replacingOccurrences(of: "REV \(round == 1 ? "s" : String(round - 1))", with: "REV \(round)")
            try mount.writeFile("notebook/Log.md.tmp\(round)", rewrite)
            try mount.rename("notebook/Log.md.tmp\(round)", "notebook/Log.md")
            expected = rewrite + "appended \(round)\n"
            XCTAssertEqual(try mount.stored(.notebook, "Log"), expected, "round \(round)")
            XCTAssertEqual(try mount.text("notebook/Log.md"), expected, "the editor reads it again")
        }
    }

    /// `printf … > note.md` as `request`'s program: a truncating open, the text, close.
    private static func writeWhole(_ mount: DirectMount, _ path: String, _ text: String, as request: FuseRequest) throws {
        let inode = try mount.lookup(path).attributes.inode
        let flags = FuseOpenFlags(rawValue: O_WRONLY | O_TRUNC)
        let reply = try mount.fileSystem.open(inode, flags: flags, request: request)
        _ = try mount.fileSystem.write(inode, handle: reply.handle, offset: 0, data: Array(text.utf8), flags: flags, request: request)
        try mount.fileSystem.flush(inode, handle: reply.handle, request: request)
        try mount.fileSystem.release(inode, handle: reply.handle, flags: flags, request: request)
    }

    /// A shell writes a note with `>`, another program here replaces it
    /// whole (vim saving, `git checkout` removing the file and making it
    /// again), and the same shell (one process: `echo` is a builtin) writes
    /// it with `>` again: the note is what the shell wrote last. The other
    /// program's text had been kept as a paragraph the shell was never
    /// shown, so `echo new > note.md` left `final\n\nnew` on every device.
    /// A sibling's paragraph that lands after the replacement still stays.
    func testAShellsWholeWriteAfterAnotherProgramReplacedTheNoteReplacesIt() throws {
        let mount = try DirectMount { try $0.putNote("S", "start\n") }
        let editor = try startOtherProgram()
        defer { editor.process.terminate() }
        try mount.writeFile("notebook/S.md", "draft\n")
        try Self.writeWhole(mount, "notebook/S.md", "final version\n", as: editor.request)
        try mount.writeFile("notebook/S.md", "brand new\n")
        XCTAssertEqual(try mount.stored(.notebook, "S"), "brand new\n")

        // git checkout: unlink, then the file made again with O_EXCL.
        let folder = try mount.folderInode("notebook")
        try mount.fileSystem.unlink(parent: folder, name: "S.md", request: editor.request)
        let flags = FuseOpenFlags(rawValue: O_WRONLY | O_CREAT | O_EXCL)
        let made = try mount.fileSystem.create(parent: folder, name: "S.md", mode: 0o100644, flags: flags, request: editor.request)
        let inode = made.entry.attributes.inode
        _ = try mount.fileSystem.write(inode, handle: made.open.handle, offset: 0, data: Array("committed\n".utf8), flags: flags, request: editor.request)
        try mount.fileSystem.flush(inode, handle: made.open.handle, request: editor.request)
        try mount.fileSystem.release(inode, handle: made.open.handle, flags: flags, request: editor.request)
        XCTAssertEqual(try mount.stored(.notebook, "S"), "committed\n")
        try mount.writeFile("notebook/S.md", "edit 2\n")
        XCTAssertEqual(try mount.stored(.notebook, "S"), "edit 2\n")

        // The editor replaces it again, then a sibling's paragraph lands: the shell never saw it, and it stays.
        try Self.writeWhole(mount, "notebook/S.md", "the editor's\n", as: editor.request)
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "S" }?.key)
        _ = try mount.store.saveProse(.note(Note(title: "S", body: Array("the editor's\n\ntheirs\n".utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                                                 updatedAt: Timestamp(seconds: 1_700_000_100))), key: key)
        mount.feed()
        try mount.writeFile("notebook/S.md", "mine\n")
        let text = try XCTUnwrap(mount.stored(.notebook, "S"))
        XCTAssertTrue(text.contains("theirs") && text.contains("mine") && !text.contains("the editor's"), text)
    }

    /// `cat note.md` as `request`'s program: it is shown the whole text.
    private static func readWhole(_ mount: DirectMount, _ path: String, as request: FuseRequest) throws -> String {
        let inode = try mount.lookup(path).attributes.inode
        let flags = FuseOpenFlags(rawValue: O_RDONLY)
        let reply = try mount.fileSystem.open(inode, flags: flags, request: request)
        let bytes = try mount.fileSystem.read(inode, handle: reply.handle, offset: 0, size: 1 << 20, request: request)
        try mount.fileSystem.release(inode, handle: reply.handle, flags: flags, request: request)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What a program here typed into a text it wrote whole counts as shown
    /// to the other programs here, and nothing more: an editor that read
    /// the note before a sibling's paragraph landed, saving after a shell
    /// here rewrote the note (with that paragraph, which the shell read),
    /// deletes the shell's line it left out, as on any filesystem, and
    /// keeps the sibling's paragraph it was never shown (no word lost).
    func testAnEditorsSaveAfterAnotherProgramsWholeWriteKeepsTheSiblingsParagraphItWasNeverShown() throws {
        let mount = try DirectMount { try $0.putNote("T", "base\n") }
        let editor = try startOtherProgram()
        defer { editor.process.terminate() }
        XCTAssertEqual(try Self.readWhole(mount, "notebook/T.md", as: editor.request), "base\n")
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "T" }?.key)
        _ = try mount.store.saveProse(.note(Note(title: "T", body: Array("base\n\ntheirs\n".utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                                                 updatedAt: Timestamp(seconds: 1_700_000_100))), key: key)
        mount.feed()
        XCTAssertEqual(try mount.text("notebook/T.md"), "base\n\ntheirs\n")
        try mount.writeFile("notebook/T.md", "base\n\ntheirs\n\nshell line\n")
        try Self.writeWhole(mount, "notebook/T.md", "base\n\neditor line\n", as: editor.request)
        let text = try XCTUnwrap(mount.stored(.notebook, "T"))
        XCTAssertTrue(text.contains("theirs"), "the sibling's paragraph the editor was never shown is kept: \(text)")
        XCTAssertTrue(text.contains("editor line") && text.contains("base"), text)
        XCTAssertFalse(text.contains("shell line"), "the editor's save counts against what the shell here wrote: \(text)")
    }

    /// `printf … > note.md` in a shell: the redirection opens the note
    /// truncating, copies the descriptor to 1 and closes the first one (a
    /// flush of an empty file) before any text is written. That close saves
    /// nothing: the one version is the text, with no tombstone for a
    /// paragraph it still holds, so a sibling's concurrent edit keeps it.
    func testAShellRedirectionsFirstCloseSavesNoEmptyVersion() throws {
        let mount = try DirectMount { try $0.putNote("L", "keep me\n\ncount: 1\n") }
        XCTAssertEqual(try mount.text("notebook/L.md"), "keep me\n\ncount: 1\n")
        let before = try mount.store.changeSequence()
        let file = try mount.open("notebook/L.md", O_WRONLY | O_TRUNC)
        try mount.fileSystem.flush(file.inode, handle: file.handle, request: mount.caller)
        XCTAssertEqual(try mount.store.changeSequence(), before, "the first close saved nothing")
        XCTAssertEqual(try mount.stored(.notebook, "L"), "keep me\n\ncount: 1\n")
        try mount.write(file, "keep me\n\ncount: 2\n\nextra\n")
        try mount.close(file)
        XCTAssertEqual(try mount.store.changeSequence(), before + 1, "one version")
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "L" }?.key)
        guard case .note(let note)? = try mount.store.row(.notebook, key)?.content else { return XCTFail("no note") }
        XCTAssertEqual(Set(note.deletedParagraphs), [ParagraphHash(paragraph: "count: 1").bytes], "only the rewritten paragraph")
        let saved = ProseVersion(text: String(decoding: note.body ?? [], as: UTF8.self),
                                 deletedParagraphs: Set(note.deletedParagraphs.compactMap { ParagraphHash(bytes: $0) }))
        let sibling = ProseVersion(text: "keep me\n\ncount: 1\n\ntheirs\n")
        let merged = ProseMerge.merge(saved, sibling).text
        for kept in ["keep me", "count: 2", "extra", "theirs"] { XCTAssertTrue(merged.contains(kept), "\(kept) in \(merged)") }

        // Emptied on purpose (`: > note.md`): saved empty at the last close.
        let emptied = try mount.open("notebook/L.md", O_WRONLY | O_TRUNC)
        try mount.close(emptied)
        XCTAssertEqual(try mount.stored(.notebook, "L"), "")
    }

    /// A program opens the note write-only without O_TRUNC, empties it with
    /// ftruncate and writes its text whole: as a truncating open, its save
    /// counts against what it was shown, and a paragraph a sibling added
    /// since stays.
    func testAWriteOnlyFileEmptiedAndWrittenWholeKeepsASiblingsParagraph() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n", "the program reads")
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "A" }?.key)
        _ = try mount.store.saveProse(.note(Note(title: "A", body: Array("one\n\ntwo\n".utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                                                 updatedAt: Timestamp(seconds: 1_700_000_100))), key: key)
        mount.feed()
        let file = try mount.open("notebook/A.md", O_WRONLY)
        try mount.truncate(file, to: 0)
        try mount.write(file, "one\n\nmine\n")
        try mount.close(file)
        let text = try XCTUnwrap(mount.stored(.notebook, "A"))
        for word in ["one", "two", "mine"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
    }

    /// A temp file (a local scratch file, never limited as it is written)
    /// renamed over a note is held to the limit every version keeps: EFBIG,
    /// and the note and the temp file stay as they were.
    func testASaveByRenameOverTheSizeLimitIsRefusedAndLosesNothing() throws {
        let mount = try DirectMount { try $0.putNote("lim", "small\n") }
        let line = String(repeating: "a", count: 99) + "\n"
        let big = String(repeating: line, count: RowLimits.maxBodyBytes / line.utf8.count + 1)
        try mount.writeFile("notebook/sedAbC123", big)
        XCTAssertThrowsError(try mount.rename("notebook/sedAbC123", "notebook/lim.md")) {
            XCTAssertEqual($0 as? FuseError, .fileTooLarge)
        }
        XCTAssertEqual(try mount.stored(.notebook, "lim"), "small\n")
        XCTAssertEqual(try mount.lookup("notebook/sedAbC123").attributes.size, UInt64(big.utf8.count))
    }

    /// A note just under the limit (a merge of two devices' appends can
    /// make one), saved in place by a program that ignores the short write
    /// the limit gives it: the cut text is never committed. close() fails
    /// with EFBIG, the stored note stays whole, and what was written is
    /// kept beside it.
    func testATextWrittenPastTheLimitIsNeverCommittedCut() throws {
        let line = String(repeating: "a", count: 99) + "\n"
        let whole = String(repeating: line, count: RowLimits.maxBodyBytes / line.utf8.count) + "the last paragraph\n"
        let mount = try DirectMount { try $0.putNote("big", whole) }
        let edited = "one word more\n" + whole
        let file = try mount.open("notebook/big.md", O_WRONLY | O_TRUNC)
        let chunk = 128 * 1024
        var offset = 0, refused = false
        let bytes = Array(edited.utf8)
        while offset < bytes.count {
            let piece = String(decoding: bytes[offset..<min(bytes.count, offset + chunk)], as: UTF8.self)
            do { offset += try mount.write(file, piece, at: offset) } catch { refused = (error as? FuseError) == .fileTooLarge; break }
        }
        XCTAssertTrue(refused, "the write past the limit is refused")
        XCTAssertThrowsError(try mount.close(file)) { XCTAssertEqual($0 as? FuseError, .fileTooLarge) }
        XCTAssertTrue(try mount.stored(.notebook, "big") == whole, "the stored note is whole")
        XCTAssertEqual(try mount.lookup("notebook/big.md").attributes.size, UInt64(whole.utf8.count), "the file shows it whole")
        XCTAssertEqual(try mount.lookup("notebook/big.md.rejected").attributes.size, UInt64(offset), "what was written is kept beside it")
        // The next save that fits is saved.
        try mount.writeFile("notebook/big.md", "smaller now\n")
        XCTAssertEqual(try mount.stored(.notebook, "big"), "smaller now\n")
    }
    /// An attachment written past the limit keeps what was written beside
    /// it as `NAME.rejected` too: a file of this device only, which can be
    /// removed and renamed like one, and which no later mount syncs.
    func testARejectedAttachmentStaysAFileOfThisDevice() throws {
        let mount = try DirectMount()
        let file = try mount.create("notebook/big.bin", O_WRONLY | O_CREAT | O_TRUNC)
        let chunk = String(repeating: "b", count: 1 << 20)
        var offset = 0, refused = false
        while offset <= RowLimits.maxBodyBytes {
            do { offset += try mount.write(file, chunk, at: offset) } catch { refused = (error as? FuseError) == .fileTooLarge; break }
        }
        XCTAssertTrue(refused)
        XCTAssertThrowsError(try mount.close(file)) { XCTAssertEqual($0 as? FuseError, .fileTooLarge) }
        XCTAssertEqual(FileNames.meaning(of: "big.bin.rejected", in: .notebook), .localOnly)
        XCTAssertEqual(try mount.lookup("notebook/big.bin.rejected").attributes.size, UInt64(offset))
        try mount.rename("notebook/big.bin.rejected", "notebook/big.bin.unsaved")
        XCTAssertEqual(try mount.lookup("notebook/big.bin.unsaved").attributes.size, UInt64(offset))
        _ = try mount.nextMount()
        XCTAssertFalse(try mount.liveTitles(.notebook).contains { $0.hasPrefix("big.bin.") }, "no mount makes it a row")
        try mount.unlink("notebook/big.bin.unsaved")
        XCTAssertFalse(mount.exists("notebook/big.bin.unsaved"))
    }
}
