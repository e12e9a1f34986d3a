import Foundation
import QuireFuse
import XCTest

/// A daemon that dies (kill -9) leaves its mount behind: every access fails
/// with ENOTCONN until someone unmounts it. The daemon here is this same test
/// binary, re-run with an environment variable that selects the child path.
final class StaleMountTests: XCTestCase {
    private static let childVariable = "QUIRE_FUSE_TEST_CHILD_MOUNTPOINT"
    private var directory: String?

    override func tearDown() {
        if let directory {
            let mountpoint = directory + "/mnt"
            if FuseMounts.isMounted(mountpoint) { try? FuseMounts.unmountLazily(mountpoint) }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Child side: mounts and serves until killed. Skipped in a normal run.
    func testChildServesUntilKilled() throws {
        guard let mountpoint = ProcessInfo.processInfo.environment[Self.childVariable] else {
            throw XCTSkip("helper for testKilledDaemonLeavesAStaleMountThatCanBeCleared")
        }
        let session = try FuseSession(fileSystem: MemoryFileSystem(), mountpoint: mountpoint)
        try session.run()
        XCTFail("the child should be killed before its session ends")
    }

    func testKilledDaemonLeavesAStaleMountThatCanBeCleared() throws {
        let directory = NSTemporaryDirectory() + "quire-fuse-stale-\(UUID().uuidString)"
        self.directory = directory
        let mountpoint = directory + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["QuireFuseTests.StaleMountTests/testChildServesUntilKilled"]
        child.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: mountpoint]) { $1 }
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }

        // Wait until the child serves the mount (root inode answers).
        let deadline = Date().addingTimeInterval(20)
        var served = false
        while Date() < deadline, child.isRunning {
            var attributes = stat()
            if FuseMounts.isMounted(mountpoint), stat(mountpoint, &attributes) == 0, attributes.st_ino == 1 {
                served = true
                break
            }
            usleep(50_000)
        }
        XCTAssertTrue(served, "the child never served its mount")
        XCTAssertFalse(FuseMounts.isStale(mountpoint))

        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        XCTAssertEqual(child.terminationReason, .uncaughtSignal)

        XCTAssertTrue(FuseMounts.isStale(mountpoint))
        XCTAssertTrue(FuseMounts.isMounted(mountpoint))
        // stat is served from cached attributes (1 s here) before it, too,
        // reports the dead connection.
        var attributes = stat()
        var statError: Int32 = 0
        let statDeadline = Date().addingTimeInterval(5)
        while Date() < statDeadline {
            if stat(mountpoint, &attributes) != 0 { statError = errno; break }
            usleep(100_000)
        }
        XCTAssertEqual(statError, ENOTCONN)
        XCTAssertThrowsError(try FuseSession(fileSystem: MemoryFileSystem(), mountpoint: mountpoint),
                             "mounting over a stale mount must fail")

        try FuseMounts.unmountLazily(mountpoint)
        XCTAssertFalse(FuseMounts.isMounted(mountpoint))
        XCTAssertFalse(FuseMounts.isStale(mountpoint))
        XCTAssertEqual(stat(mountpoint, &attributes), 0)
    }
}
