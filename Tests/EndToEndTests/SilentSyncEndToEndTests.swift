import Foundation
import XCTest

/// A sync engine blocked on a folder that stops answering, with real
/// processes and a real FUSE mount standing in for a network folder.
final class SilentSyncEndToEndTests: XCTestCase {
    /// The cloud folder sits on a file system whose server stops (as a
    /// network mount that hangs): the engine blocks on its next read of the
    /// folder, and `quire status` says the process has said nothing since,
    /// instead of showing its last snapshot as current. Once the folder
    /// answers again, the status is current again.
    func testASyncBlockedOnAHangingCloudFolderIsCalledSilent() throws {
        let host = try MountedDevice()
        defer { host.close() }
        let cloud = host.path("notebook/cloud")
        XCTAssertEqual(mkdir(cloud, 0o755), 0)
        let dir = makeShortDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let home = dir + "/b", relay = "local:\(dir)/relay"
        try quireOK(["init", "--name", "b", "--relay", relay, "--cloud", cloud, "--kdf", "interactive"], home: home)
        let env = ["QUIRE_SYNC_SILENT_AFTER_SECONDS": "15"]
        func status() -> String { (try? quire(["status"], home: home, env: env).stdout) ?? "" }
        let daemon = try SyncDaemon(home: home, relay: relay)
        defer { daemon.stop() }
        XCTAssertTrue(eventually(20) { status().contains("sync: running (process \(daemon.pid))") }, status())

        let server = try XCTUnwrap(host.daemonPID)
        XCTAssertEqual(kill(server, SIGSTOP), 0)
        defer { kill(server, SIGCONT) }
        // The folder is read every 30 s; then 15 s of silence.
        XCTAssertTrue(eventually(90) { status().contains("sync: process \(daemon.pid) runs but has said NOTHING since") }, status())
        XCTAssertTrue(status().contains("a cloud folder on a network mount?"), status())
        let json = try XCTUnwrap(try jsonObject(try quireOK(["status", "--json"], home: home, env: env).stdout) as? [String: Any])
        XCTAssertEqual((json["sync"] as? [String: Any])?["silent"] as? Bool, true)

        XCTAssertEqual(kill(server, SIGCONT), 0)
        XCTAssertTrue(eventually(30) { status().contains("sync: running (process \(daemon.pid))") }, status())
        XCTAssertTrue(daemon.isRunning)
    }

    /// `quire sync --verbose` with its log on the disk that fills (here
    /// beside the device directory): the next event it prints cannot be
    /// written, and that had trapped (SIGILL) and stopped sync.
    func testASyncWhoseLogIsOnADiskThatFillsKeepsRunning() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a small tmpfs needs root") }
        let dir = makeShortDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let small = dir + "/small"
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        XCTAssertEqual(shell("mount -t tmpfs -o size=3m tmpfs \(small)").status, 0)
        defer { shell("umount -l \(small)") }
        let home = small + "/home", relay = "local:\(dir)/relay"
        try quireOK(["init", "--name", "small", "--relay", relay], home: home)
        let daemon = try SyncDaemon(home: home, relay: relay)
        defer { daemon.stop() }
        XCTAssertTrue(eventually(20) { (try? quire(["status"], home: home).stdout)?.contains("sync: running") == true })
        shell("dd if=/dev/zero of=\(small)/filler bs=64k 2>/dev/null; true")
        // Its next snapshot fails, and the event saying so is printed.
        Thread.sleep(forTimeInterval: 12)
        XCTAssertTrue(daemon.isRunning, "sync stopped when its log could not be written")
        shell("rm -f \(small)/filler")
        XCTAssertTrue(eventually(20) { (try? quire(["status"], home: home).stdout)?.contains("sync: running (process \(daemon.pid))") == true })
    }

    /// The device's disk fills while its sync runs: the engine cannot
    /// replace its snapshot, and `quire status` says so (and that what
    /// follows is from then) instead of showing the old snapshot, siblings
    /// "in sync" as they were, as current for a minute.
    func testASyncThatCannotWriteItsStatusOnAFullDiskSaysSo() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a small tmpfs needs root") }
        let dir = makeShortDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let small = dir + "/small"
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        XCTAssertEqual(shell("mount -t tmpfs -o size=3m tmpfs \(small)").status, 0)
        defer { shell("umount -l \(small)") }
        let home = small + "/home", relay = "local:\(dir)/relay"
        try quireOK(["init", "--name", "small", "--relay", relay], home: home)
        func status() -> String { (try? quire(["status"], home: home).stdout) ?? "" }
        let daemon = try SyncDaemon(home: home, relay: relay)
        defer { daemon.stop() }
        XCTAssertTrue(eventually(20) { status().contains("sync: running (process \(daemon.pid))") }, status())
        shell("dd if=/dev/zero of=\(small)/filler bs=64k 2>/dev/null; true")
        XCTAssertTrue(eventually(40) { status().contains("but the disk is FULL: it could not write what it knows since") }, status())
        XCTAssertTrue(status().contains("what follows is from then"), status())
        let json = try XCTUnwrap(try jsonObject(try quireOK(["status", "--json"], home: home).stdout) as? [String: Any])
        XCTAssertEqual((json["sync"] as? [String: Any])?["unwrittenOnFullDisk"] as? Bool, true)
        shell("rm -f \(small)/filler")
        XCTAssertTrue(eventually(30) { status().contains("sync: running (process \(daemon.pid))") }, status())
        XCTAssertTrue(daemon.isRunning)
    }

    /// The same hang with a short limit on the folder's operations
    /// (`CloudIO`): the engine gives up on the folder instead of waiting
    /// for it, so notes still travel over the relay both ways while the
    /// folder hangs, and the status names the folder that does not answer.
    func testAHangingCloudFolderDoesNotStopSyncOverTheRelay() throws {
        let host = try MountedDevice()
        defer { host.close() }
        let cloud = host.path("notebook/cloud")
        XCTAssertEqual(mkdir(cloud, 0o755), 0)
        let dir = makeShortDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let relay = "local:\(dir)/relay"
        func home(_ name: String) -> String { dir + "/" + name }
        let env = ["QUIRE_PASSPHRASE": "a long shared secret", "QUIRE_CLOUD_TIMEOUT_SECONDS": "2"]
        try quireOK(["init", "--name", "a", "--relay", relay, "--cloud", cloud, "--kdf", "interactive"], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay, "--cloud", cloud], home: home("b"), env: env)
        let a = try SyncDaemon(home: home("a"), relay: relay, env: env)
        defer { a.stop() }
        let b = try SyncDaemon(home: home("b"), relay: relay, env: env)
        defer { b.stop() }
        func body(_ title: String, on name: String) -> String? {
            try? quire(["get", "notebook", title], home: home(name)).stdout
        }
        try quireOK(["put", "notebook", "before"], home: home("a"), stdin: Array("before the hang\n".utf8))
        XCTAssertTrue(eventually(30) { body("before", on: "b")?.contains("before the hang") ?? false }, b.output)

        let server = try XCTUnwrap(host.daemonPID)
        XCTAssertEqual(kill(server, SIGSTOP), 0)
        defer { kill(server, SIGCONT) }
        // Each engine reads the folder within 30 s (its device log); that read hangs, then gives up after 2 s.
        let status = { (try? quire(["status"], home: home("a"), env: env).stdout) ?? "" }
        XCTAssertTrue(eventually(60) { status().contains("cloud folder: has not answered since") }, status() + a.output)
        try quireOK(["put", "notebook", "during a"], home: home("a"), stdin: Array("written on a while the folder hangs\n".utf8))
        try quireOK(["put", "notebook", "during b"], home: home("b"), stdin: Array("written on b while the folder hangs\n".utf8))
        XCTAssertTrue(eventually(30) { body("during a", on: "b")?.contains("while the folder hangs") ?? false }, b.output)
        XCTAssertTrue(eventually(30) { body("during b", on: "a")?.contains("while the folder hangs") ?? false }, a.output)
        XCTAssertTrue(a.isRunning && b.isRunning)

        XCTAssertEqual(kill(server, SIGCONT), 0)
        XCTAssertTrue(eventually(90) { !status().contains("cloud folder: has not answered since") }, status())
    }
}
