import Foundation
import QuireFuse
import XCTest

final class MountedFileSystemTests: XCTestCase {
    private var mounted: MountedFileSystem!

    override func setUpWithError() throws {
        mounted = try MountedFileSystem()
    }

    override func tearDown() {
        mounted?.close()
        mounted = nil
    }

    private func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    func testCreateWriteReadBackAndList() throws {
        let file = mounted.path("note.md")
        try "first words".write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertEqual(try contents(file), "first words")

        // Overwrite through O_TRUNC: libfuse's atomic O_TRUNC hands it to open.
        try "short".write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertEqual(try contents(file), "short")

        // Append at an offset.
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: file))
        handle.seekToEndOfFile()
        handle.write(Data(" and more".utf8))
        try handle.close()
        XCTAssertEqual(try contents(file), "short and more")
        XCTAssertGreaterThan(mounted.fileSystem.flushCount, 0, "close(2) should reach flush")

        try FileManager.default.createDirectory(atPath: mounted.path("plans"), withIntermediateDirectories: false)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mounted.mountpoint).sorted(), ["note.md", "plans"])
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        XCTAssertEqual(attributes[.size] as? Int, 14)
        XCTAssertEqual(attributes[.type] as? FileAttributeType, .typeRegular)

        try FileManager.default.removeItem(atPath: file)
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
        XCTAssertEqual(rmdir(mounted.path("plans")), 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mounted.mountpoint), [])
    }

    func testLargeDirectoryListsEveryEntryOnceAcrossReaddirCalls() throws {
        // ~600 entries need several readdir requests: offsets must resume.
        let names = (0..<600).map { "entry-\($0)-with-a-longish-name" }
        for name in names { mounted.fileSystem.addFileOutsideMount(name, contents: "x") }
        let listed = try FileManager.default.contentsOfDirectory(atPath: mounted.mountpoint)
        XCTAssertEqual(listed.count, names.count)
        XCTAssertEqual(Set(listed), Set(names))
    }

    func testRenameNoReplaceAndExchange() throws {
        let a = mounted.path("a"), b = mounted.path("b")
        try "A".write(toFile: a, atomically: false, encoding: .utf8)
        try "B".write(toFile: b, atomically: false, encoding: .utf8)

        XCTAssertEqual(ExtraLibC.rename(a, b, flags: ExtraLibC.noReplace), EEXIST)
        XCTAssertEqual(try contents(b), "B", "a refused rename must not touch the target")

        XCTAssertEqual(ExtraLibC.rename(a, b, flags: ExtraLibC.exchange), 0)
        XCTAssertEqual(try contents(a), "B")
        XCTAssertEqual(try contents(b), "A")

        XCTAssertEqual(ExtraLibC.rename(a, mounted.path("c"), flags: ExtraLibC.noReplace), 0)
        XCTAssertEqual(try contents(mounted.path("c")), "B")
        XCTAssertFalse(FileManager.default.fileExists(atPath: a))

        // Plain rename replaces.
        XCTAssertEqual(Glibc.rename(mounted.path("c"), b), 0)
        XCTAssertEqual(try contents(b), "B")
    }

    func testExtendedAttributesWithSizeProbes() throws {
        let file = mounted.path("tagged")
        // Not String.write: Foundation adds its own com.apple.TextEncoding xattr.
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let value = Array("offloaded to homebase".utf8)

        XCTAssertEqual(ExtraLibC.setAttribute(file, "user.quire.residency", value), 0)
        XCTAssertEqual(ExtraLibC.setAttribute(file, "user.quire.residency", value, flags: ExtraLibC.xattrCreate), EEXIST)
        XCTAssertEqual(ExtraLibC.setAttribute(file, "user.b", [1, 2, 3]), 0)

        let probe = ExtraLibC.attribute(file, "user.quire.residency", capacity: 0)
        XCTAssertEqual(probe.result, value.count, "size probe returns the length")
        XCTAssertEqual(ExtraLibC.attribute(file, "user.quire.residency", capacity: 4).errno, ERANGE)
        XCTAssertEqual(ExtraLibC.attribute(file, "user.quire.residency", capacity: 64).value, value)
        XCTAssertEqual(ExtraLibC.attribute(file, "user.missing", capacity: 64).errno, ENODATA)

        let namesProbe = ExtraLibC.attributeNames(file, capacity: 0)
        XCTAssertEqual(namesProbe.result, "user.b\0user.quire.residency\0".utf8.count)
        XCTAssertEqual(ExtraLibC.attributeNames(file, capacity: 3).errno, ERANGE)
        XCTAssertEqual(ExtraLibC.attributeNames(file, capacity: 256).names, ["user.b", "user.quire.residency"])

        XCTAssertEqual(ExtraLibC.removeAttribute(file, "user.b"), 0)
        XCTAssertEqual(ExtraLibC.removeAttribute(file, "user.b"), ENODATA)
        XCTAssertEqual(ExtraLibC.attributeNames(file, capacity: 256).names, ["user.quire.residency"])
    }

    func testUnimplementedOperationsReachTheCallerAsENOSYS() throws {
        // symlink and mknod are not implemented: the protocol default throws
        // .notSupported and the kernel passes ENOSYS through unchanged for
        // these (it only remembers ENOSYS for flush/fsync/xattr/access-style
        // calls, where it turns into success or EOPNOTSUPP).
        XCTAssertEqual(symlink("target", mounted.path("link")), -1)
        XCTAssertEqual(errno, ENOSYS)
        XCTAssertEqual(mkfifo(mounted.path("fifo"), 0o644), -1)
        XCTAssertEqual(errno, ENOSYS)
        XCTAssertEqual(link(mounted.path("."), mounted.path("hard")), -1)
        XCTAssertEqual(errno, EPERM, "link(2) on a directory is refused by the VFS before FUSE is asked")
    }

    func testUnexpectedErrorsBecomeEIOAndAreReported() throws {
        let file = mounted.path("broken")
        try "data".write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertEqual(ExtraLibC.setAttribute(file, "user.broken", [1]), 0)
        let descriptor = open(file, O_RDONLY)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(read(descriptor, &buffer, 16), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertTrue(mounted.reportedErrors.contains { $0.hasPrefix("read:") }, "\(mounted.reportedErrors)")
    }

    func testMountShowsInProcMountsWithSubtype() throws {
        let entry = try XCTUnwrap(FuseMounts.entry(at: mounted.mountpoint))
        XCTAssertEqual(entry.type, "fuse.quire")
        XCTAssertEqual(entry.subtype, "quire")
        XCTAssertEqual(entry.source, "quire-test")
        XCTAssertTrue(entry.options.contains("default_permissions"), "\(entry.options)")
        XCTAssertTrue(FuseMounts.isMounted(mounted.mountpoint))
        XCTAssertFalse(FuseMounts.isStale(mounted.mountpoint))
        let table = try String(contentsOfFile: "/proc/mounts", encoding: .utf8)
        XCTAssertTrue(table.contains(" \(mounted.mountpoint) fuse.quire "))
    }

    func testStatisticsDefaultIsLibfuseDefault() throws {
        var result = statvfs()
        XCTAssertEqual(statvfs(mounted.mountpoint, &result), 0)
        XCTAssertEqual(result.f_namemax, 255)
    }

    func testCleanUnmountWithFusermountEndsTheLoop() throws {
        // Serve one request first, so INIT has happened and destroy is due.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mounted.mountpoint), [])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/fusermount3")
        process.arguments = ["-u", mounted.mountpoint]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)

        let outcome = try XCTUnwrap(mounted.waitForEnd(), "run() did not return after fusermount3 -u")
        XCTAssertEqual(try outcome.get(), .unmounted)
        XCTAssertFalse(FuseMounts.isMounted(mounted.mountpoint))
        XCTAssertFalse(mounted.session.isMounted)
        XCTAssertEqual(mounted.fileSystem.destroyCount, 1)
        XCTAssertThrowsError(try mounted.session.invalidateEntry(parent: .root, name: "x")) { error in
            XCTAssertEqual(error as? FuseError, .notConnected)
        }
    }

    func testStopFromAnotherThreadEndsTheLoop() throws {
        // Serve one request first, so INIT has happened and destroy is due.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mounted.mountpoint), [])
        DispatchQueue.global().async { [mounted] in mounted!.session.stop() }
        let outcome = try XCTUnwrap(mounted.waitForEnd(), "run() did not return after stop()")
        XCTAssertEqual(try outcome.get(), .unmounted)
        XCTAssertFalse(FuseMounts.isMounted(mounted.mountpoint))
        XCTAssertEqual(mounted.fileSystem.destroyCount, 1)
        // Teardown closed /dev/fuse even though stop() did the unmounting.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        let fuseDescriptors = descriptors.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == "/dev/fuse"
        }
        XCTAssertEqual(fuseDescriptors, [])
    }
}

final class InvalidationTests: XCTestCase {
    private var mounted: MountedFileSystem!

    override func setUpWithError() throws {
        let fileSystem = MemoryFileSystem()
        fileSystem.negativeTimeout = 3600
        fileSystem.entryTimeout = 3600
        mounted = try MountedFileSystem(fileSystem: fileSystem)
    }

    override func tearDown() {
        mounted?.close()
        mounted = nil
    }

    func testInvalidateEntryShowsAFileAddedOutsideTheMount() throws {
        let path = mounted.path("synced.md")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))  // kernel caches "missing" for an hour

        mounted.fileSystem.addFileOutsideMount("synced.md", contents: "from another device")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the negative entry should still be cached")

        try mounted.session.invalidateEntry(parent: .root, name: "synced.md")
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "from another device")
    }

    func testInvalidateInodeAndUncachedNamesAreQuiet() throws {
        // Nothing cached for these: the kernel answers ENOENT, which is success.
        XCTAssertNoThrow(try mounted.session.invalidateEntry(parent: .root, name: "never-looked-up"))
        XCTAssertNoThrow(try mounted.session.invalidateInode(FuseInode(999_999)))
        let inode = mounted.fileSystem.addFileOutsideMount("a", contents: "1")
        XCTAssertTrue(FileManager.default.fileExists(atPath: mounted.path("a")))
        XCTAssertNoThrow(try mounted.session.invalidateInode(inode))
        XCTAssertNoThrow(try mounted.session.notifyDelete(parent: .root, child: inode, name: "a"))
    }
}
