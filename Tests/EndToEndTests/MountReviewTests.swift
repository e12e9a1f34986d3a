import Foundation
import XCTest

/// Bookkeeping corners of the mount found in review, through a real
/// `quire mount`: the ones where what the kernel and real programs do (sed
/// -i, Python's os.replace, page caching, invalidation) is the point. The
/// other open-file-across-rename cases run without a mount, much faster, in
/// QuireFSTests/OpenFilesAcrossRenamesTests.
final class MountReviewTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
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

    /// Two programs with the same note open: the first one's close commits
    /// their shared text, so the second one's close must not repeat it. (The
    /// second kept the baseline it was shown at open, and its save merged
    /// the first one's paragraphs in again.)
    func testTwoFilesOpenOnANoteDoNotRepeatEachOthersParagraphs() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Shared"], home: home, stdin: Array("text\n".utf8)).status, 0)
        }
        let first = open(device.path("notebook/Shared.md"), O_RDWR), second = open(device.path("notebook/Shared.md"), O_RDWR)
        XCTAssertTrue(first >= 0 && second >= 0)
        XCTAssertEqual(Array("TEXT\n".utf8).withUnsafeBytes { pwrite(first, $0.baseAddress, 5, 0) }, 5)
        XCTAssertEqual(close(first), 0)
        XCTAssertEqual(Array("more\n".utf8).withUnsafeBytes { pwrite(second, $0.baseAddress, 5, 5) }, 5)
        XCTAssertEqual(close(second), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Shared"], home: device.home).stdout, "TEXT\nmore\n")
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
