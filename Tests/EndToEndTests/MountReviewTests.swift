import Foundation
import XCTest

/// Bookkeeping corners of the mount found in review, each through a real
/// `quire mount`: renames, exchanges and unlinks while rows are loaded or
/// open.
final class MountReviewTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    /// A saga entry (its key is its date) renamed away, then its date
    /// written anew: the new file holds exactly the new text, not the new
    /// text over the old entry's tail.
    func testSagaDateWrittenAgainAfterARenameHoldsOnlyTheNewText() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "saga", "2024-05-01"], home: home, stdin: Array("a long and busy day\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "settings", "theme", "solarized"], home: home).status, 0)
        }
        XCTAssertEqual(rename(device.path("saga/2024-05-01.md"), device.path("saga/2024-05-02.md")), 0)
        XCTAssertEqual(Syscall.writeFile(device.path("saga/2024-05-01.md"), "hi\n").errno, 0)
        XCTAssertEqual(try device.text("saga/2024-05-01.md"), "hi\n")
        XCTAssertEqual(try quire(["get", "saga", "2024-05-01"], home: device.home).stdout, "hi\n")
        XCTAssertEqual(try device.text("saga/2024-05-02.md"), "a long and busy day\n")

        // The same for a setting (its key is its name).
        XCTAssertEqual(rename(device.path("settings/theme.txt"), device.path("settings/colours.txt")), 0)
        XCTAssertEqual(Syscall.writeFile(device.path("settings/theme.txt"), "dark\n").errno, 0)
        XCTAssertEqual(try device.text("settings/theme.txt"), "dark\n")
        XCTAssertEqual(try device.text("settings/colours.txt"), "solarized\n")
    }

    /// RENAME_EXCHANGE of a scratch file and a note: the note's name shows
    /// the scratch file's text at once, and the scratch name the note's.
    func testExchangeOfAScratchFileAndANoteShowsTheNewTextAtOnce() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Plan"], home: home, stdin: Array("old plan\n".utf8)).status, 0)
        }
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/.Plan.md.new"), "new plan\n").errno, 0)
        XCTAssertEqual(Syscall.rename(device.path("notebook/.Plan.md.new"), device.path("notebook/Plan.md"), flags: Syscall.exchange), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Plan"], home: device.home).stdout, "new plan\n")
        XCTAssertEqual(try device.text("notebook/Plan.md"), "new plan\n")
        XCTAssertEqual(try device.text("notebook/.Plan.md.new"), "old plan\n")

        // And the other way round (the note is the source).
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/.Plan.md.newer"), "newer plan\n").errno, 0)
        XCTAssertEqual(Syscall.rename(device.path("notebook/Plan.md"), device.path("notebook/.Plan.md.newer"), flags: Syscall.exchange), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Plan"], home: device.home).stdout, "newer plan\n")
        XCTAssertEqual(try device.text("notebook/Plan.md"), "newer plan\n")
        XCTAssertEqual(try device.text("notebook/.Plan.md.newer"), "new plan\n")

        // While a reader holds the note open, too.
        let reader = open(device.path("notebook/Plan.md"), O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/.Plan.md.last"), "last plan\n").errno, 0)
        XCTAssertEqual(Syscall.rename(device.path("notebook/.Plan.md.last"), device.path("notebook/Plan.md"), flags: Syscall.exchange), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Plan"], home: device.home).stdout, "last plan\n")
        XCTAssertEqual(try device.text("notebook/Plan.md"), "last plan\n")
        XCTAssertEqual(try device.text("notebook/.Plan.md.last"), "newer plan\n")
    }

    /// A large file written in 1 MiB write() calls holds every byte at the
    /// right place, up to the size limit (16 MiB, `RowLimits.maxBodyBytes`),
    /// and one byte more is refused with EFBIG. (Each write used to copy the
    /// whole text so far: 128 MiB took ~6 s of write() calls, quadratic in
    /// the size; speed is a benchmark's business, so this test checks the
    /// bytes only.)
    func testALargeFileWrittenInManyWritesHoldsEveryByte() throws {
        device = try MountedDevice()
        let path = device.path("notebook/Large.md")
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        for index in 0..<16 {
            let chunk = [UInt8](repeating: UInt8(ascii: "a") + UInt8(index % 26), count: 1 << 20)
            XCTAssertEqual(chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }, chunk.count)
        }
        var extra: UInt8 = 0x21
        XCTAssertEqual(write(descriptor, &extra, 1), -1)
        XCTAssertEqual(errno, EFBIG)
        for index in [0, 1, 7, 15] {
            var byte: UInt8 = 0
            XCTAssertEqual(pread(descriptor, &byte, 1, off_t(index << 20) + 4095), 1)
            XCTAssertEqual(byte, UInt8(ascii: "a") + UInt8(index % 26), "MiB \(index)")
        }
        var info = stat()
        XCTAssertEqual(fstat(descriptor, &info), 0)
        XCTAssertEqual(Int(info.st_size), 16 << 20)
        // Not committed: the test is about the writes (removing it first
        // spares a 16 MiB save at close).
        XCTAssertEqual(unlink(path), 0)
        close(descriptor)
        XCTAssertEqual(try device.rows("notebook").filter { !$0.isTombstone }.count, 0)
    }

    /// A file removed while open (rm, or a save by rename over it from
    /// another program) stays usable through its descriptor, as on any
    /// filesystem: writes succeed and go nowhere, reads and fstat work.
    func testAFileRemovedWhileOpenStaysUsableThroughItsDescriptor() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Log"], home: home, stdin: Array("one\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "notebook", "Gone"], home: home, stdin: Array("bye\n".utf8)).status, 0)
        }
        func write(_ descriptor: Int32, _ text: String) -> Int32 {
            Array(text.utf8).withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) } == text.utf8.count ? 0 : errno
        }
        func readAll(_ descriptor: Int32) -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            return count < 0 ? "errno \(errno)" : String(decoding: buffer.prefix(count), as: UTF8.self)
        }
        let goneKey = try XCTUnwrap(try device.rows("notebook").first { $0.name == "Gone" }?.key)
        // A logger holds Log.md open for appending; sed -i saves over it.
        let logger = open(device.path("notebook/Log.md"), O_RDWR | O_APPEND)
        XCTAssertGreaterThanOrEqual(logger, 0)
        XCTAssertEqual(write(logger, "two\n"), 0)
        XCTAssertEqual(fsync(logger), 0)
        XCTAssertEqual(shell("sed -i 's/one/uno/' '\(device.path("notebook/Log.md"))'").status, 0)
        XCTAssertEqual(write(logger, "three\n"), 0, "a write to the replaced file must not fail")
        XCTAssertEqual(readAll(logger), "one\ntwo\nthree\n")
        // ftruncate through it cuts the replaced text, never the note now at its name.
        XCTAssertEqual(ftruncate(logger, 4), 0)
        XCTAssertEqual(readAll(logger), "one\n")
        XCTAssertEqual(try device.text("notebook/Log.md"), "uno\ntwo\n")

        // rm while open.
        let holder = open(device.path("notebook/Gone.md"), O_RDWR)
        XCTAssertGreaterThanOrEqual(holder, 0)
        XCTAssertEqual(unlink(device.path("notebook/Gone.md")), 0)
        XCTAssertEqual(write(holder, "BYE"), 0, "a write to an unlinked file must not fail")
        XCTAssertEqual(readAll(holder), "BYE\n")
        var info = stat()
        XCTAssertEqual(fstat(holder, &info), 0, "fstat of an unlinked file: errno \(errno)")
        XCTAssertEqual(info.st_size, 4)
        XCTAssertEqual(close(holder), 0)
        XCTAssertEqual(close(logger), 0)
        XCTAssertEqual(try device.rows("notebook").first { $0.key == goneKey }?.isTombstone, true)
        XCTAssertEqual(try device.text("notebook/Log.md"), "uno\ntwo\n")
        XCTAssertEqual(try device.unmount().status, 0)
        XCTAssertEqual(try quire(["get", "notebook", "Log"], home: device.home).stdout, "uno\ntwo\n")
    }

    /// RENAME_EXCHANGE while the files are open: each descriptor follows
    /// its file (now under the other name), and text written before the
    /// exchange and not yet closed ends up under the name the file went to.
    func testExchangeWhileOpenKeepsEachDescriptorWithItsFile() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "A"], home: home, stdin: Array("alpha\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "notebook", "B"], home: home, stdin: Array("beta\n".utf8)).status, 0)
        }
        func readAll(_ descriptor: Int32) -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            return count < 0 ? "errno \(errno)" : String(decoding: buffer.prefix(count), as: UTF8.self)
        }
        let a = device.path("notebook/A.md"), b = device.path("notebook/B.md")
        // A reader of A.
        let reader = open(a, O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertEqual(readAll(reader), "alpha\n")
        XCTAssertEqual(Syscall.rename(a, b, flags: Syscall.exchange), 0)
        XCTAssertEqual(readAll(reader), "alpha\n", "the descriptor follows its file to B.md")
        XCTAssertEqual(try device.text("notebook/A.md"), "beta\n")
        XCTAssertEqual(try device.text("notebook/B.md"), "alpha\n")
        XCTAssertEqual(close(reader), 0)

        // A writer of A.md (now "beta") with text not yet saved.
        let writer = open(a, O_WRONLY | O_TRUNC)
        XCTAssertGreaterThanOrEqual(writer, 0)
        let text = Array("gamma\n".utf8)
        XCTAssertEqual(text.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }, text.count)
        XCTAssertEqual(Syscall.rename(a, b, flags: Syscall.exchange), 0)
        XCTAssertEqual(text.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }, text.count, "errno \(errno)")
        XCTAssertEqual(close(writer), 0)
        XCTAssertEqual(try device.text("notebook/B.md"), "gamma\ngamma\n")
        XCTAssertEqual(try device.text("notebook/A.md"), "alpha\n")
        XCTAssertEqual(try device.unmount().status, 0)
        XCTAssertEqual(try quire(["get", "notebook", "B"], home: device.home).stdout, "gamma\ngamma\n")
        XCTAssertEqual(try quire(["get", "notebook", "A"], home: device.home).stdout, "alpha\n")
    }

    /// A note renamed to a name that is not a row name while a program
    /// still writes to it: the writes go to the file under its new name
    /// (they went to the row, which then reappeared or was deleted with
    /// them).
    func testWritesAfterARenameToAScratchNameFollowTheFile() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Kept"], home: home, stdin: Array("first\n".utf8)).status, 0)
        }
        func write(_ descriptor: Int32, _ text: String) -> Int {
            Array(text.utf8).withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        }
        // A new file.
        let fresh = open(device.path("notebook/Draft.md"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        XCTAssertGreaterThanOrEqual(fresh, 0)
        XCTAssertEqual(write(fresh, "a\n"), 2)
        XCTAssertEqual(rename(device.path("notebook/Draft.md"), device.path("notebook/Draft.txt")), 0)
        XCTAssertEqual(write(fresh, "b\n"), 2)
        XCTAssertEqual(close(fresh), 0)
        XCTAssertEqual(try device.text("notebook/Draft.txt"), "a\nb\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.path("notebook/Draft.md")))
        XCTAssertEqual(try device.rows("notebook").filter { $0.name == "Draft" }.count, 0, "no row for a file that was renamed away")

        // A stored note.
        let kept = open(device.path("notebook/Kept.md"), O_WRONLY | O_APPEND)
        XCTAssertGreaterThanOrEqual(kept, 0)
        XCTAssertEqual(rename(device.path("notebook/Kept.md"), device.path("notebook/Kept.txt")), 0)
        XCTAssertEqual(write(kept, "second\n"), 7)
        XCTAssertEqual(close(kept), 0)
        XCTAssertEqual(try device.text("notebook/Kept.txt"), "first\nsecond\n")
    }

    /// A note deleted elsewhere (another quire command, sync) while a
    /// program reads it: the open file keeps reading the text it had, as
    /// after a local rm, instead of failing with ENOENT.
    func testAReaderOfANoteDeletedElsewhereKeepsReading() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Shared"], home: home, stdin: Array("still here\n".utf8)).status, 0)
        }
        let reader = open(device.path("notebook/Shared.md"), O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        var buffer = [UInt8](repeating: 0, count: 100)
        XCTAssertEqual(buffer.withUnsafeMutableBytes { pread(reader, $0.baseAddress, $0.count, 0) }, 11)
        XCTAssertEqual(try quire(["rm", "notebook", "Shared"], home: device.home).status, 0)
        XCTAssertTrue(eventually(2) { !FileManager.default.fileExists(atPath: self.device.path("notebook/Shared.md")) })
        buffer = [UInt8](repeating: 0, count: 100)
        let count = buffer.withUnsafeMutableBytes { pread(reader, $0.baseAddress, $0.count, 0) }
        XCTAssertEqual(count, 11, "errno \(errno)")
        XCTAssertEqual(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self), "still here\n")
        var info = stat()
        XCTAssertEqual(fstat(reader, &info), 0, "errno \(errno)")
    }

    /// A temp file renamed over a note before it is closed (Python code
    /// that calls os.replace inside its `with` block; the text is still
    /// in its buffer): what is written after the rename lands in the note,
    /// as on any filesystem, instead of in the removed temp file.
    func testWritesToATempFileAfterItWasRenamedOverANoteLandInTheNote() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Kept"], home: home, stdin: Array("old\n".utf8)).status, 0)
        }
        let folder = device.path("notebook")
        // Kept.md is replaced; New.md does not exist yet.
        for name in ["Kept", "New"] {
            let script = "import os; f=open('\(folder)/.\(name).tmp','w'); f.write('first\\n'); f.flush(); f.write('second\\n'); "
                + "os.replace('\(folder)/.\(name).tmp', '\(folder)/\(name).md'); f.close()"
            let result = shell("python3 -c \"\(script)\"")
            XCTAssertEqual(result.status, 0, result.output)
            XCTAssertTrue(eventually(2) { (try? self.device.text("notebook/\(name).md")) == "first\nsecond\n" },
                          "\(name): \(String(describing: try? self.device.text("notebook/\(name).md")))")
            XCTAssertTrue(eventually(2) { (try? quire(["get", "notebook", name], home: self.device.home).stdout) == "first\nsecond\n" })
        }
        XCTAssertEqual(try device.rows("notebook").count, 2)
    }

    /// RENAME_EXCHANGE of a note and a scratch file while both are open:
    /// each open file follows its inode, so the temp file's descriptor now
    /// writes the note and the note's descriptor the temp file.
    func testExchangeWithAScratchFileMovesTheOpenFilesWithTheirInodes() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Plan"], home: home, stdin: Array("old plan\n".utf8)).status, 0)
        }
        let note = device.path("notebook/Plan.md"), temp = device.path("notebook/.Plan.md.new")
        let onNote = open(note, O_RDWR)
        XCTAssertEqual(Syscall.writeFile(temp, "new plan\n").errno, 0)
        let onTemp = open(temp, O_WRONLY | O_APPEND)
        XCTAssertTrue(onNote >= 0 && onTemp >= 0)
        XCTAssertEqual(Syscall.rename(temp, note, flags: Syscall.exchange), 0)

        let more = Array("and more\n".utf8)
        XCTAssertEqual(more.withUnsafeBytes { write(onTemp, $0.baseAddress, $0.count) }, more.count)
        XCTAssertEqual(close(onTemp), 0)
        XCTAssertTrue(eventually(5) { (try? quire(["get", "notebook", "Plan"], home: self.device.home).stdout) == "new plan\nand more\n" },
                      "the temp file's descriptor writes the note now")

        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { pread(onNote, $0.baseAddress, $0.count, 0) }
        XCTAssertEqual(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self), "old plan\n", "the note's descriptor now reads the temp file")
        XCTAssertEqual(Array("OLD".utf8).withUnsafeBytes { pwrite(onNote, $0.baseAddress, 3, 0) }, 3)
        XCTAssertEqual(close(onNote), 0)
        XCTAssertEqual(try device.text("notebook/.Plan.md.new"), "OLD plan\n")
        usleep(300_000)
        XCTAssertEqual(try quire(["get", "notebook", "Plan"], home: device.home).stdout, "new plan\nand more\n")
        XCTAssertEqual(try device.text("notebook/Plan.md"), "new plan\nand more\n")
    }

    /// A saga date deleted and written again is a new file: it does not
    /// inherit the session attributes the old one had (same inode number).
    func testADateWrittenAgainStartsWithoutTheOldSessionAttributes() throws {
        device = try MountedDevice()
        let path = device.path("saga/2024-05-01.md")
        XCTAssertEqual(Syscall.writeFile(path, "first\n").errno, 0)
        XCTAssertEqual(Syscall.setAttribute(path, "user.mime_type", "text/markdown"), 0)
        XCTAssertEqual(Syscall.attribute(path, "user.mime_type").value, "text/markdown")
        XCTAssertEqual(unlink(path), 0)
        XCTAssertEqual(Syscall.writeFile(path, "second\n").errno, 0)
        XCTAssertEqual(Syscall.attribute(path, "user.mime_type").errno, ENODATA)
    }

    /// A card renamed while open with unsaved edits keeps its new name at
    /// close: the FN in the user's text is the one the file showed (they
    /// did not change it), so it does not undo the rename.
    func testRenamingAnOpenContactKeepsTheNewNameAtClose() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "contacts", "Ann", "--email", "ann@example.org"], home: home).status, 0)
        }
        let descriptor = open(device.path("contacts/Ann.vcf"), O_RDWR)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        let shown = try device.text("contacts/Ann.vcf")
        let edited = Array(shown.replacingOccurrences(of: "ann@example.org", with: "ann@work.example").utf8)
        XCTAssertEqual(ftruncate(descriptor, 0), 0)
        XCTAssertEqual(edited.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }, edited.count)
        XCTAssertEqual(rename(device.path("contacts/Ann.vcf"), device.path("contacts/Anna.vcf")), 0)
        XCTAssertEqual(close(descriptor), 0)
        let card = try device.text("contacts/Anna.vcf")
        XCTAssertTrue(card.contains("FN:Anna") && card.contains("ann@work.example"), card)
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.path("contacts/Ann.vcf")))
        XCTAssertEqual(try device.rows("contacts").filter { !$0.isTombstone }.map(\.name), ["Anna"])

        // A user who did change FN in the open card still gets their FN.
        let second = open(device.path("contacts/Anna.vcf"), O_RDWR)
        let renamedInText = Array(card.replacingOccurrences(of: "FN:Anna", with: "FN:Annabel").utf8)
        XCTAssertEqual(ftruncate(second, 0), 0)
        XCTAssertEqual(renamedInText.withUnsafeBytes { pwrite(second, $0.baseAddress, $0.count, 0) }, renamedInText.count)
        XCTAssertEqual(rename(device.path("contacts/Anna.vcf"), device.path("contacts/Ana.vcf")), 0)
        XCTAssertEqual(close(second), 0)
        XCTAssertEqual(try device.rows("contacts").filter { !$0.isTombstone }.map(\.name), ["Annabel"])
    }
}


/// Offloaded notes opened by two programs at once, through a real mount
/// of the phone with a real homebase process.
final class MountReviewOffloadTests: OffloadMountBase {

    /// Both opens wait for the same recall; the later one used to replace
    /// the first one's working copy, so closing one file left the other
    /// reading an empty note (and failing its writes with EBADF).
    func testTwoOpensDuringOneRecallShareTheText() throws {
        let body = try makeMountedFleet(recallTimeout: 5)
        let file = mountpoint + "/notebook/field notes.md"
        try quireOK(["offload", "field notes"], home: home("phone"))
        XCTAssertTrue(eventually(7) { Syscall.attribute(file, "user.quire.resident").value == "0" })

        let descriptors = OpenedDescriptors()
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            Thread { descriptors.append(open(file, O_RDWR)); group.leave() }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        let both = descriptors.items
        XCTAssertEqual(both.count, 2)
        XCTAssertTrue(both.allSatisfy { $0 >= 0 }, "\(both)")
        XCTAssertEqual(close(both[0]), 0)
        var buffer = [UInt8](repeating: 0, count: body.utf8.count + 4096)
        let count = buffer.withUnsafeMutableBytes { pread(both[1], $0.baseAddress, $0.count, 0) }
        XCTAssertEqual(count, body.utf8.count)
        XCTAssertEqual(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self), body, "the other file still reads the note")
        let more = Array("One more.\n".utf8)
        XCTAssertEqual(more.withUnsafeBytes { pwrite(both[1], $0.baseAddress, $0.count, off_t(body.utf8.count)) }, more.count, "errno \(errno)")
        XCTAssertEqual(close(both[1]), 0)
        XCTAssertEqual(try quireOK(["get", "notebook", "field notes"], home: home("phone")).stdout, body + "One more.\n")
    }
}

final class OpenedDescriptors: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int32] = []
    func append(_ descriptor: Int32) { lock.lock(); storage.append(descriptor); lock.unlock() }
    var items: [Int32] { lock.lock(); defer { lock.unlock() }; return storage }
}
