import Foundation
import XCTest

/// The offload fleet with the phone served by a real mount (its daemon runs
/// the sync engine and recalls through it) instead of `quire sync`.
class OffloadMountBase: OffloadFleetBase {
    var mountpoint: String { dir + "/mnt" }

    override func tearDown() {
        _ = try? quire(["unmount", mountpoint], home: home("phone"))
        shell("fusermount3 -u -z '\(mountpoint)' 2>/dev/null")
        super.tearDown()
    }

    /// The fleet, "field notes" (100 KB) on every device, the phone mounted
    /// with `recall_timeout` seconds. Returns the note's text.
    func makeMountedFleet(recallTimeout: Int = 2) throws -> String {
        try makeFleet()
        let body = Self.body(8, size: 100_000)
        try put("phone", "field notes", body)
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home")], timeout: 30))
        stop("phone")
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try quireOK(["mount", mountpoint, "-o", "recall_timeout=\(recallTimeout)"], home: home("phone"))
        _ = eventually(5) { FileManager.default.fileExists(atPath: self.home("phone") + "/offload.sock") }
        usleep(500_000)
        return body
    }
}

/// Offloaded notes through a real mount of the phone, with a real homebase process.
final class OffloadMountTests: OffloadMountBase {

    func testReadingAnOffloadedNoteRecallsTheExactBytes() throws {
        let body = try makeMountedFleet()
        let file = mountpoint + "/notebook/field notes.md"
        XCTAssertEqual(Syscall.attribute(file, "user.quire.resident").value, "1")
        // Offloaded through the mount daemon's engine (the control channel).
        let r = try quire(["offload", "field notes", "--json"], home: home("phone"))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(eventually(7) { Syscall.attribute(file, "user.quire.resident").value == "0" })
        var info = stat()
        XCTAssertTrue(eventually(7) { stat(file, &info) == 0 && info.st_blocks == 0 }, "st_blocks is 0 while offloaded")
        XCTAssertEqual(Int(info.st_size), body.utf8.count, "st_size stays the real length")
        let holder = Syscall.attribute(file, "user.quire.holder")
        XCTAssertEqual(holder.errno, 0)
        XCTAssertTrue(holder.value.hasPrefix("home ("), holder.value)
        let digest = try encodedDigest("phone")

        let started = Date()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), body, "the exact bytes")
        XCTAssertEqual(Syscall.attribute(file, "user.quire.resident").value, "1")
        XCTAssertEqual(try offloadedTitles("phone"), [])
        XCTAssertEqual(try encodedDigest("phone"), digest, "a recall through the mount is not an edit")

        // Opening for writing recalls too, and the edit is an ordinary new version.
        try quireOK(["offload", "field notes"], home: home("phone"))
        XCTAssertTrue(eventually(7) { Syscall.attribute(file, "user.quire.resident").value == "0" })
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: file))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("One more paragraph.\n".utf8))
        try handle.close()
        XCTAssertEqual(try quireOK(["get", "notebook", "field notes"], home: home("phone")).stdout, body + "One more paragraph.\n")
    }

    func testReadingWithTheHomebaseDownFailsWithEIOWithinTheTimeout() throws {
        _ = try makeMountedFleet()
        let file = mountpoint + "/notebook/field notes.md"
        try quireOK(["offload", "field notes"], home: home("phone"))
        stop("home")
        stop("tablet")
        XCTAssertTrue(eventually(7) { Syscall.attribute(file, "user.quire.resident").value == "0" })
        let started = Date()
        let fd = open(file, O_RDONLY)
        var error: Int32 = 0
        if fd < 0 { error = errno } else {
            var buffer = [UInt8](repeating: 0, count: 4096)
            if read(fd, &buffer, buffer.count) < 0 { error = errno }
            close(fd)
        }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(error, EIO, "never empty or made-up bytes")
        XCTAssertGreaterThan(elapsed, 1.5)
        XCTAssertLessThan(elapsed, 6, "within the 2 s recall timeout (plus slack)")
        let status = try String(contentsOfFile: mountpoint + "/.quire/status", encoding: .utf8)
        XCTAssertTrue(status.contains("cannot recall 'field notes'"), status)
        XCTAssertTrue(status.contains("holder 'home'"), status)
        XCTAssertTrue(status.contains("unreachable"), status)
        XCTAssertEqual(try offloadedTitles("phone"), ["field notes"])
    }
}

/// Attachments offload and come back like note bodies (issue 15).
final class AttachmentOffloadTests: OffloadMountBase {
    func testALargeAttachmentInAFolderOffloadsAndComesBackByteForByte() throws {
        _ = try makeMountedFleet()
        XCTAssertEqual(mkdir(mountpoint + "/notebook/Scans", 0o755), 0)
        let file = mountpoint + "/notebook/Scans/receipt.pdf"
        var generator = SplitMix(seed: 5)
        let bytes = (0..<1_500_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        XCTAssertEqual(Syscall.writeFile(file, chunks: stride(from: 0, to: bytes.count, by: 1 << 20).map {
            Array(bytes[$0..<min(bytes.count, $0 + (1 << 20))])
        }).errno, 0)
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home")], timeout: 30))
        // Only what is over 1 MB goes: the 100 KB note stays.
        let r = try quire(["offload", "--larger-than", "1M", "--json"], home: home("phone"))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(eventually(10) { Syscall.attribute(file, "user.quire.resident").value == "0" }, r.stdout)
        XCTAssertEqual(Syscall.attribute(mountpoint + "/notebook/field notes.md", "user.quire.resident").value, "1")
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(Int(info.st_size), bytes.count, "st_size stays the real length")
        XCTAssertEqual(info.st_blocks, 0)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: file))), bytes, "the exact bytes, recalled")
        XCTAssertEqual(Syscall.attribute(file, "user.quire.resident").value, "1")
        XCTAssertEqual(try quireOK(["fsck"], home: home("phone")).status, 0)
    }
}
