import Foundation
import XCTest

/// Bad input, crashes and the mount machinery (daemon, stale mounts, the
/// mount(8) helper), through real `quire mount` processes.
final class MountFaultTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    func testBadInputGetsAClearErrnoAndLosesNothing() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "contacts", "Ann", "--email", "ann@example.org"], home: home).status, 0)
            XCTAssertEqual(try quire(["put", "memory", "visit"], home: home, stdin: Array("went out".utf8)).status, 0)
        }
        // A name that is not UTF-8.
        let invalid: [CChar] = Array(device.path("notebook/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), CChar(bitPattern: 0xFE)] + Array(".md".utf8CString)
        XCTAssertEqual(invalid.withUnsafeBufferPointer { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o644) }, -1)
        XCTAssertEqual(errno, EILSEQ)
        XCTAssertTrue(try device.text(".quire/status").contains("is not UTF-8"), "the refused name is reported")
        // 10,000 characters, and a name just over the 255-byte limit.
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/" + String(repeating: "x", count: 10_000) + ".md"), "x").errno, ENAMETOOLONG)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/" + String(repeating: "y", count: 300) + ".md"), "y").errno, ENAMETOOLONG)
        // Binary content in a note is kept byte for byte.
        let binary = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Binary.md"), chunks: [binary]).errno, 0)
        XCTAssertEqual(try quire(["get", "notebook", "Binary"], home: device.home).stdoutBytes, binary)
        // A vCard that does not parse: close() fails, the stored contact is
        // intact, and the text is kept beside it.
        let broken = "BEGIN:VCARD\nVERSION:4.0\nFN:Ann\nnot a property\nEND:VCARD\n"
        let result = Syscall.writeFile(device.path("contacts/Ann.vcf"), broken)
        XCTAssertEqual(result.errno, EINVAL)
        XCTAssertEqual(result.step, "close")
        XCTAssertTrue(try device.text("contacts/Ann.vcf").contains("EMAIL:ann@example.org"))
        XCTAssertEqual(try device.text("contacts/Ann.vcf.rejected"), broken)
        XCTAssertTrue(try device.text(".quire/status").contains("line 4 is not a property"))
        XCTAssertEqual(Syscall.writeFile(device.path("contacts/Cut.vcf"), "BEGIN:VCARD\nFN:Cut\n").errno, EINVAL)
        // Read-only files.
        XCTAssertEqual(Syscall.writeFile(device.path(".quire/status"), "no").errno, EACCES)
        let event = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: device.path("memory")).first)
        XCTAssertEqual(Syscall.writeFile(device.path("memory/" + event), "no", flags: O_WRONLY).errno, EACCES)
        XCTAssertEqual(Syscall.writeFile(device.path("memory/new.txt"), "no").errno, EACCES)
        XCTAssertEqual(unlink(device.path("memory/" + event)), -1)
        XCTAssertEqual(errno, EACCES)
        XCTAssertTrue(try device.text("memory/" + event).hasSuffix("went out"))
    }

    func testFullDiskFailsAtCloseAndKeepsEarlierText() throws {
        let disk = try SmallDiskDevice(megabytes: 2, note: "Safe", text: "keep me")
        defer { disk.close() }
        let (mountpoint, home) = (disk.mountpoint, disk.home)
        // Random letters: bodies are stored deflated, and text that does
        // not compress is what fills a disk.
        var generator = SystemRandomNumberGenerator()
        let big = (0..<600_000).map { _ in UInt8(ascii: "a") + UInt8.random(in: 0..<26, using: &generator) }
        var failure: (errno: Int32, step: String)? = nil
        for index in 0..<10 {
            let result = Syscall.writeFile(mountpoint + "/notebook/Big \(index).md", chunks: [big])
            if result.errno != 0 { failure = result; break }
        }
        XCTAssertEqual(failure?.errno, ENOSPC, "\(String(describing: failure))")
        XCTAssertEqual(failure?.step, "close")
        XCTAssertEqual(try String(contentsOfFile: mountpoint + "/notebook/Safe.md", encoding: .utf8), "keep me")
        // A copy of the unsaved text is whole or not there: a cut one would pass for it.
        for name in try FileManager.default.contentsOfDirectory(atPath: mountpoint + "/notebook") where name.hasSuffix(".unsaved") {
            XCTAssertEqual(FileManager.default.contents(atPath: mountpoint + "/notebook/" + name).map { [UInt8]($0) }, big, name)
        }
        let status = try String(contentsOfFile: mountpoint + "/.quire/status", encoding: .utf8)
        XCTAssertTrue(status.contains("disk full"), status)
        let words = try quireOK(["status"], home: home).stdout
        XCTAssertTrue(words.contains("DISK FULL: the disk holding this device has"), words)
        // Deleting is how space is made: with no room for a copy in the
        // trash, a deletion goes ahead without one, and says so.
        let stored = try FileManager.default.contentsOfDirectory(atPath: mountpoint + "/notebook").filter { $0.hasPrefix("Big ") && $0.hasSuffix(".md") }
        XCTAssertFalse(stored.isEmpty)
        for name in stored { XCTAssertEqual(unlink(mountpoint + "/notebook/" + name), 0, "\(name): \(String(cString: strerror(errno)))") }
        let after = try String(contentsOfFile: mountpoint + "/.quire/status", encoding: .utf8)
        XCTAssertTrue(after.contains("deleted without a copy in the trash: the disk is full"), after)
        XCTAssertEqual(Syscall.writeFile(mountpoint + "/notebook/After.md", "room again").errno, 0)
    }

    /// A shell's `>>` never checks close(): on a full disk the write()
    /// itself fails (ENOSPC), so the shell says so, the note is left as it
    /// was, and the status says what fills the disk and what will not help.
    func testAWriteIsRefusedAtOnceWhenTheDiskIsFull() throws {
        let disk = try SmallDiskDevice(megabytes: 4, note: "Todo", text: "keep me\n")
        defer { disk.close() }
        let (mountpoint, home) = (disk.mountpoint, disk.home)
        // Local-only files of the mounted folder fill the disk.
        shell("dd if=/dev/zero of='\(mountpoint)/notebook/.filler' bs=64k 2>/dev/null")
        let todo = mountpoint + "/notebook/Todo.md"
        let refused = shell("bash -c \"echo 'buy milk' >> '\(todo)'\"")
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.output.contains("No space left on device"), refused.output)
        XCTAssertEqual(try String(contentsOfFile: todo, encoding: .utf8), "keep me\n")
        let status = try String(contentsOfFile: mountpoint + "/.quire/status", encoding: .utf8)
        XCTAssertTrue(status.contains("a write to notebook/Todo.md was refused: the disk holding this device is full"), status)
        let words = try quireOK(["status"], home: home).stdout
        XCTAssertTrue(words.contains("DISK FULL: the disk holding this device has"), words)
        XCTAssertTrue(words.contains("deleting notes does not give the disk room back"), words)
        XCTAssertTrue(words.contains("files kept on this device only"), words)
        // truncate(1) is open, ftruncate, close: an emptied file is saved at
        // its last close, which no program hears fail, so the ftruncate fails.
        let truncated = shell("truncate -s 0 '\(todo)'")
        XCTAssertNotEqual(truncated.status, 0)
        XCTAssertTrue(truncated.output.contains("No space left on device"), truncated.output)
        XCTAssertEqual(try String(contentsOfFile: todo, encoding: .utf8), "keep me\n")
        // Room again: the next write goes through at once.
        XCTAssertEqual(unlink(mountpoint + "/notebook/.filler"), 0)
        XCTAssertEqual(shell("echo 'buy milk' >> '\(todo)'").status, 0)
        XCTAssertEqual(try String(contentsOfFile: todo, encoding: .utf8), "keep me\nbuy milk\n")
        XCTAssertEqual(try quireOK(["get", "notebook", "Todo"], home: home).stdout, "keep me\nbuy milk\n")
    }

    /// A resize that could not be saved shows no more once its close has
    /// failed: the file is the stored text again, size and bytes, as soon
    /// as the release that follows the close is done (the kernel kept the
    /// grown size for its whole attribute timeout, 30 s).
    func testAGrowingTruncateThatCouldNotBeSavedShowsTheStoredText() throws {
        let disk = try SmallDiskDevice(megabytes: 4, note: "Todo", text: "keep me\n")
        defer { disk.close() }
        let todo = disk.mountpoint + "/notebook/Todo.md"
        let descriptor = open(todo, O_RDWR)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        // A write that changes nothing asks for room while there is some;
        // the disk fills from outside the mount right after.
        XCTAssertEqual(pwrite(descriptor, "k", 1, 0), 1)
        shell("dd if=/dev/zero of='\(disk.disk)/filler' bs=64k 2>/dev/null")
        // The ftruncate fails at once, or (room known a moment ago) the close does.
        let resized = ftruncate(descriptor, 200_000) == 0 ? 0 : errno
        let closed = close(descriptor) == 0 ? 0 : errno
        XCTAssertEqual(resized == 0 ? closed : resized, ENOSPC, "ftruncate: \(resized), close: \(closed)")
        XCTAssertTrue(eventually(2) { Syscall.status(todo)?.size == 8 }, "\(String(describing: Syscall.status(todo)))")
        XCTAssertEqual(try String(contentsOfFile: todo, encoding: .utf8), "keep me\n")
        XCTAssertEqual(unlink(disk.disk + "/filler"), 0)
        XCTAssertEqual(try quireOK(["get", "notebook", "Todo"], home: disk.home).stdout, "keep me\n")
    }

    /// After a clean unmount the database file alone holds every row: a
    /// copy that leaves out the WAL (a backup tool that skips *-wal, a WAL
    /// deleted as a temp file) loses nothing.
    func testAnUnmountLeavesEveryRowInTheDatabaseFile() throws {
        device = try MountedDevice()
        for i in 0..<40 { XCTAssertEqual(Syscall.writeFile(device.path("notebook/Note \(i).md"), "text \(i)\n").errno, 0) }
        let pid = try XCTUnwrap(device.daemonPID)
        XCTAssertEqual(try device.unmount().status, 0)
        XCTAssertTrue(waitUntilTrue(timeout: 10) { kill(pid, 0) != 0 }, "the daemon ends")
        let wal = (try? FileManager.default.attributesOfItem(atPath: device.home + "/replica.sqlite-wal")[.size] as? Int) ?? 0
        XCTAssertEqual(wal, 0, "the WAL is folded into the database file")
        try? FileManager.default.removeItem(atPath: device.home + "/replica.sqlite-wal")
        try? FileManager.default.removeItem(atPath: device.home + "/replica.sqlite-shm")
        XCTAssertEqual(try device.rows("notebook").filter { !$0.isTombstone }.count, 40)
    }

    func testKillNineLosesNoWriteWhoseCloseSucceeded() throws {
        device = try MountedDevice()
        let pid = try XCTUnwrap(device.daemonPID)
        let confirmed = ConfirmedWrites()
        let root = device.mountpoint
        let writer = Thread {
            var index = 0
            while true {
                let name = "notebook/Note \(index).md"
                let body = "body \(index) " + String(repeating: "w", count: index % 500)
                let result = Syscall.writeFile(root + "/" + name, chunks: [Array(body.utf8)], fsyncBeforeClose: index % 2 == 0)
                if result.errno != 0 { break }
                confirmed.append((name, body))
                index += 1
            }
            confirmed.finish()
        }
        writer.start()
        Thread.sleep(forTimeInterval: 1.0)
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        XCTAssertTrue(confirmed.waitForFinish(timeout: 10), "the writer must see the mount fail")
        let writes = confirmed.items
        XCTAssertGreaterThan(writes.count, 10)
        // Remounting cleans up the stale mount and says so.
        let remount = try quire(["mount", device.mountpoint, "-o", "nosync"], home: device.home)
        XCTAssertEqual(remount.status, 0, remount.stderr)
        XCTAssertTrue(remount.stderr.contains("stale mount"), remount.stderr)
        for (name, body) in writes {
            XCTAssertEqual(try device.text(name), body, "\(name) returned success from close() but is not there")
        }
        XCTAssertEqual(try quire(["digest", "--verify"], home: device.home).status, 0)
    }

    func testStaleMountIsDetectedCleanedAndReported() throws {
        device = try MountedDevice()
        XCTAssertEqual(kill(try XCTUnwrap(device.daemonPID), SIGKILL), 0)
        XCTAssertTrue(eventually(2) { access(self.device.path("notebook"), F_OK) != 0 && errno == ENOTCONN })
        let remount = try quire(["mount", device.mountpoint, "-o", "nosync"], home: device.home)
        XCTAssertEqual(remount.status, 0)
        XCTAssertTrue(remount.stderr.contains("cleaned up a stale mount"), remount.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: device.path("notebook")))
        // quire unmount also cleans a stale mount.
        XCTAssertEqual(kill(try XCTUnwrap(device.daemonPID), SIGKILL), 0)
        usleep(200_000)
        let unmount = try device.unmount()
        XCTAssertEqual(unmount.status, 0, unmount.stderr)
        XCTAssertTrue(unmount.stdout.contains("stale"), unmount.stdout)
        XCTAssertFalse(device.isMounted)
    }

    func testAFolderThatHoldsFilesIsMountedOverOnlyWhenAskedTo() throws {
        device = try MountedDevice()
        XCTAssertEqual(try device.unmount().status, 0)
        let hidden = device.mountpoint + "/my own file.txt"
        XCTAssertTrue(FileManager.default.createFile(atPath: hidden, contents: Data("mine\n".utf8)))
        let refused = try quire(["mount", device.mountpoint, "-o", "nosync"], home: device.home)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("is not empty (it holds 'my own file.txt')"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("-o nonempty"), refused.stderr)
        XCTAssertFalse(device.isMounted)
        XCTAssertEqual(try String(contentsOfFile: hidden, encoding: .utf8), "mine\n")
        // Asked to, it mounts over the file, which shows again after the unmount.
        try device.mount(["-o", "nosync,nonempty"])
        XCTAssertTrue(device.isMounted)
        XCTAssertFalse(FileManager.default.fileExists(atPath: hidden))
        XCTAssertTrue(FileManager.default.fileExists(atPath: device.path("notebook")))
        XCTAssertEqual(try device.unmount().status, 0)
        XCTAssertEqual(try String(contentsOfFile: hidden, encoding: .utf8), "mine\n")
    }

    /// A daemon that stops answering (stopped here with SIGSTOP, as a
    /// wedged one would): `quire unmount --lazy` detaches at once, as it
    /// says, rather than hanging on a question to that daemon.
    func testALazyUnmountDetachesAStuckDaemonsMount() throws {
        device = try MountedDevice()
        let pid = try XCTUnwrap(device.daemonPID)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT); kill(pid, SIGTERM) }
        let started = Date()
        let result = try quire(["unmount", "--lazy", device.mountpoint], home: device.home)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertFalse(device.isMounted)
    }

    func testDaemonModesOptionsAndUnmounting() throws {
        device = try MountedDevice()
        let table = try String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)
        XCTAssertTrue(table.contains("\(device.home) \(device.mountpoint) fuse.quire "), table)
        let line = try XCTUnwrap(table.split(separator: "\n").first { $0.contains(device.mountpoint) })
        XCTAssertFalse(line.contains("allow_other"), String(line))
        // Only its owner reaches it: quire answers access(2) itself, from
        // the bits stat shows, and the kernel checks no bits (see
        // testOnlyAMountOtherUsersReachHasTheKernelCheckPermissionBits).
        XCTAssertFalse(line.contains("default_permissions"), String(line))
        XCTAssertTrue(FileManager.default.createFile(atPath: device.path("notebook/Bits.md"), contents: Data("bits\n".utf8)))
        XCTAssertEqual(access(device.path("notebook/Bits.md"), R_OK | W_OK), 0)
        XCTAssertEqual(access(device.path("notebook/Bits.md"), X_OK), -1, "a note has no x bit, even for root")
        XCTAssertEqual(errno, EACCES)
        XCTAssertEqual(access(device.path("notebook"), X_OK), 0)
        // Mounting twice is refused; unknown options are a usage error.
        XCTAssertEqual(try quire(["mount", device.mountpoint], home: device.home).status, 1)
        XCTAssertEqual(try quire(["mount", device.mountpoint, "-o", "bogus"], home: device.home).status, 2)
        // Busy: an open file blocks a plain unmount, which says so.
        let descriptor = open(device.path("notebook/Open.md"), O_WRONLY | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        let busy = try device.unmount()
        XCTAssertEqual(busy.status, 1)
        XCTAssertTrue(busy.stderr.contains("busy"), busy.stderr)
        _ = Array("closing commits".utf8).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        XCTAssertEqual(close(descriptor), 0)
        let pid = try XCTUnwrap(device.daemonPID)
        let done = try device.unmount()
        XCTAssertEqual(done.status, 0, done.stderr)
        XCTAssertFalse(MountFaultTests.isAlive(pid), "unmount waits for the daemon to finish")
        XCTAssertEqual(try quire(["get", "notebook", "Open"], home: device.home).stdout, "closing commits")
        // fusermount3 -u works as well; ro mounts refuse writes.
        try device.mount(["-o", "nosync,ro"])
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/No.md"), "x").errno, EROFS)
        XCTAssertEqual(shell("fusermount3 -u '\(device.mountpoint)'").status, 0)
        XCTAssertTrue(eventually(5) { !self.device.isMounted })
        // Foreground mode serves until unmounted.
        let foreground = Process()
        foreground.executableURL = URL(fileURLWithPath: QuireBinary.path)
        foreground.arguments = ["--home", device.home, "mount", device.mountpoint, "-f", "-o", "nosync"]
        try foreground.run()
        XCTAssertTrue(eventually(5) { FileManager.default.fileExists(atPath: self.device.path("notebook/Open.md")) })
        foreground.terminate()   // SIGTERM unmounts cleanly
        foreground.waitUntilExit()
        XCTAssertEqual(foreground.terminationStatus, 0)
        XCTAssertFalse(device.isMounted)
    }

    func testOnlyAMountOtherUsersReachHasTheKernelCheckPermissionBits() throws {
        guard getuid() == 0 else { throw XCTSkip("allow_other and a second user need root") }
        device = try MountedDevice(options: ["-o", "nosync,allow_other"])
        let table = try String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)
        let line = try XCTUnwrap(table.split(separator: "\n").first { $0.contains(device.mountpoint) })
        XCTAssertTrue(line.contains("allow_other") && line.contains("default_permissions"), String(line))
        XCTAssertTrue(FileManager.default.createFile(atPath: device.path("notebook/Bits.md"), contents: Data("bits\n".utf8)))
        let nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c"
        let read = shell("\(nobody) 'cat \"\(device.path("notebook/Bits.md"))\"'")
        XCTAssertEqual(read.status, 0, read.output)
        XCTAssertEqual(read.output, "bits\n")
        // Quire's own handlers would let these through: the kernel refuses.
        let append = shell("\(nobody) 'echo more >> \"\(device.path("notebook/Bits.md"))\"'")
        XCTAssertNotEqual(append.status, 0)
        XCTAssertTrue(append.output.contains("Permission denied"), append.output)
        let create = shell("\(nobody) 'echo new > \"\(device.path("notebook/New.md"))\"'")
        XCTAssertTrue(create.output.contains("Permission denied"), create.output)
        XCTAssertEqual(try device.text("notebook/Bits.md"), "bits\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.path("notebook/New.md")))
    }

    func testMountHelperForMountTypeFuseQuire() throws {
        guard getuid() == 0 else { throw XCTSkip("installing /sbin/mount.fuse.quire needs root") }
        device = try MountedDevice()
        XCTAssertEqual(try device.unmount().status, 0)
        let helper = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("mount/mount.quire").path
        let installed = "/sbin/mount.fuse.quire"
        let hadHelper = FileManager.default.fileExists(atPath: installed)
        if !hadHelper { XCTAssertEqual(shell("install -m 0755 '\(helper)' \(installed)").status, 0) }
        defer { if !hadHelper { try? FileManager.default.removeItem(atPath: installed) } }
        let mounted = shell("QUIRE='\(QuireBinary.path)' mount -t fuse.quire '\(device.home)' '\(device.mountpoint)' -o nosync,noatime,_netdev")
        XCTAssertEqual(mounted.status, 0, mounted.output)
        XCTAssertTrue(device.isMounted)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Via helper.md"), "ok").errno, 0)
        XCTAssertEqual(shell("umount '\(device.mountpoint)'").status, 0)
        XCTAssertTrue(eventually(5) { !self.device.isMounted })
        XCTAssertEqual(try quire(["get", "notebook", "Via helper"], home: device.home).stdout, "ok")
    }

    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }
}

/// Writes whose close() returned success, collected by a writer thread.
final class ConfirmedWrites: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [(String, String)] = []
    private let done = DispatchSemaphore(value: 0)

    func append(_ item: (String, String)) { lock.lock(); storage.append(item); lock.unlock() }
    func finish() { done.signal() }
    func waitForFinish(timeout: TimeInterval) -> Bool { done.wait(timeout: .now() + timeout) == .success }
    var items: [(String, String)] { lock.lock(); defer { lock.unlock() }; return storage }
}

/// A device on a tmpfs of a few megabytes holding one note, mounted
/// without sync: a disk that fills (mounting the tmpfs needs root).
struct SmallDiskDevice {
    let disk: String
    let home: String
    let mountpoint: String

    init(megabytes: Int, note: String, text: String) throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a small tmpfs needs root") }
        disk = makeTemporaryDirectory() + "/small"
        home = disk + "/home"
        mountpoint = disk + "-mnt"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        XCTAssertEqual(shell("mount -t tmpfs -o size=\(megabytes)m tmpfs '\(disk)'").status, 0)
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        XCTAssertEqual(try quire(["init", "--name", "small"], home: home).status, 0)
        XCTAssertEqual(try quire(["put", "notebook", note], home: home, stdin: Array(text.utf8)).status, 0)
        XCTAssertEqual(try quire(["mount", mountpoint, "-o", "nosync"], home: home).status, 0)
    }

    func close() {
        _ = try? quire(["unmount", mountpoint], home: home)
        shell("fusermount3 -u -z '\(mountpoint)' 2>/dev/null")
        shell("umount -l '\(disk)'")
    }
}
