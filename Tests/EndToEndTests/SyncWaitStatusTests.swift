import Foundation
import QuireTestSupport
import XCTest

/// What `quire status` says while a mount's sync waits instead of running,
/// with real mounts, a real Redis and real processes.
final class SyncWaitStatusTests: XCTestCase {
    var dir = ""
    var mountpoints: [(home: String, mountpoint: String)] = []

    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() {
        for (home, mountpoint) in mountpoints {
            _ = try? quire(["unmount", mountpoint], home: home)
            shell("fusermount3 -u -z '\(mountpoint)' 2>/dev/null")
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    func mount(_ home: String, at name: String, file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let mountpoint = dir + "/" + name
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        mountpoints.append((home, mountpoint))
        let r = try quire(["mount", mountpoint], home: home)
        XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
        return r
    }

    /// The pid of the mount daemon serving `name` (its pid file).
    func mountPid(_ home: String, _ name: String) throws -> Int32 {
        let mountpoint = dir + "/" + name
        for file in try FileManager.default.contentsOfDirectory(atPath: home + "/mounts") {
            let lines = try String(contentsOfFile: home + "/mounts/" + file, encoding: .utf8).split(separator: "\n")
            if lines.count > 1, lines[1] == mountpoint, let pid = Int32(lines[0]) { return pid }
        }
        throw MountTestError("no pid file for \(mountpoint)")
    }

    /// Mounted before Redis is up: `quire status` (and `--json`, and the
    /// mount's `.quire/status`) says sync waits for the relay, which one
    /// (its password never shown), since when and the last error, rather
    /// than that sync never ran; once the relay answers it says sync runs.
    func testStatusSaysWhichRelayAMountWaitsForSinceWhenAndWhy() throws {
        let home = dir + "/a"
        let port = try freeTCPPort()
        let url = "redis://:a-secret@127.0.0.1:\(port)"
        try quireOK(["init", "--name", "a", "--relay", url], home: home)
        let before = Int64(Date().timeIntervalSince1970)
        let mounted = try mount(home, at: "mnt")
        XCTAssertTrue(mounted.stderr.contains("sync waits for the relay"), mounted.stderr)
        XCTAssertFalse(mounted.stderr.contains("a-secret"), mounted.stderr)
        let pid = try mountPid(home, "mnt")

        let text = try quireOK(["status"], home: home).stdout
        XCTAssertFalse(text.contains("has not run"), text)
        XCTAssertTrue(text.contains("sync: WAITS FOR THE RELAY redis://***@127.0.0.1:\(port), unreachable since "), text)
        XCTAssertTrue(text.contains("connection refused"), text)
        XCTAssertTrue(text.contains("The mount (process \(pid))"), text)
        XCTAssertFalse(text.contains("a-secret"), text)

        let sync = try syncStatus(home)
        XCTAssertEqual(sync["running"] as? Bool, false)
        let wait = try XCTUnwrap(sync["waitingForRelay"] as? [String: Any], "\(sync)")
        XCTAssertEqual(wait["relay"] as? String, "redis://***@127.0.0.1:\(port)")
        XCTAssertEqual(wait["pid"] as? Int, Int(pid))
        let since = try XCTUnwrap(wait["since"] as? Int)
        XCTAssertTrue(since >= before && since <= Int(Date().timeIntervalSince1970), "\(since)")
        XCTAssertTrue((wait["lastError"] as? String ?? "").contains("connection refused"), "\(wait)")
        // The mount waits with growing intervals: later tries update the last error's time, not `since`.
        XCTAssertTrue(eventually(10) {
            let later = (try? syncStatus(home))?["waitingForRelay"] as? [String: Any]
            return (later?["lastTriedAt"] as? Int ?? 0) > since && later?["since"] as? Int == since
        })

        let mountStatus = try String(contentsOfFile: dir + "/mnt/.quire/status", encoding: .utf8)
        XCTAssertTrue(mountStatus.contains("sync: WAITS FOR THE RELAY redis://***@127.0.0.1:\(port)"), mountStatus)
        XCTAssertFalse(mountStatus.contains("has not run"), mountStatus)

        // The relay answers: sync starts in the mount, and the wait is over.
        let redis = try TestRedisServer(arguments: ["--requirepass", "a-secret"], port: port)
        defer { redis.stop() }
        XCTAssertTrue(eventually(45) { (try? syncStatus(home))?["running"] as? Bool == true },
                      (try? quire(["status"], home: home).stdout) ?? "")
        let running = try quireOK(["status"], home: home).stdout
        XCTAssertFalse(running.contains("WAITS FOR THE RELAY"), running)
        XCTAssertTrue(running.contains("sync: running (process \(pid))"), running)
        XCTAssertNil(try syncStatus(home)["waitingForRelay"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: home + "/sync-relay-wait.json"))
    }

    /// A second mount of one device leaves sync to the first, and its
    /// `.quire/status` names the first one's process.
    func testASecondMountOfOneDeviceNamesTheMountThatSyncs() throws {
        let home = dir + "/a"
        try quireOK(["init", "--name", "a", "--relay", "local:\(dir)/relay"], home: home)
        _ = try mount(home, at: "one")
        let first = try mountPid(home, "one")
        _ = try mount(home, at: "two")
        let second = try String(contentsOfFile: dir + "/two/.quire/status", encoding: .utf8)
        XCTAssertTrue(second.contains("sync waits for process \(first), which syncs this device now"), second)
        XCTAssertTrue(second.contains("sync: running (process \(first))"), second)
        XCTAssertFalse(second.contains("process ?"), second)
    }

    /// A mount that asks just as another process has taken the lock, and
    /// has not written its pid yet (two mounts started at once), waits for
    /// the pid and names it, rather than "process ?"; it takes over once
    /// that process stops. The other process is a shell holding the lock
    /// with util-linux `flock`, paused in that moment.
    func testAMountNamesAProcessThatTookTheLockAMomentBefore() throws {
        let home = dir + "/a"
        try quireOK(["init", "--name", "a", "--relay", "local:\(dir)/relay"], home: home)
        let ready = dir + "/holder-ready"
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", """
            exec 9<>"$LOCK"
            flock -x 9 || exit 9
            : > "$READY"
            sleep 0.5
            : > "$LOCK"; printf '%s\\n' $$ > "$LOCK"
            exec sleep 60
            """]
        holder.environment = ["LOCK": home + "/sync.lock", "READY": ready, "PATH": "/usr/bin:/bin"]
        try holder.run()
        defer { if holder.isRunning { holder.terminate() } }
        XCTAssertTrue(eventually(5) { FileManager.default.fileExists(atPath: ready) }, "the holder never took the lock")
        _ = try mount(home, at: "mnt")
        let status = { (try? String(contentsOfFile: self.dir + "/mnt/.quire/status", encoding: .utf8)) ?? "" }
        XCTAssertTrue(status().contains("sync waits for process \(holder.processIdentifier), which syncs this device now"), status())
        XCTAssertFalse(status().contains("process ?"), status())

        holder.terminate()
        holder.waitUntilExit()
        let mountPid = try self.mountPid(home, "mnt")
        XCTAssertTrue(eventually(10) { (try? quire(["status"], home: home).stdout)?.contains("sync: running (process \(mountPid))") == true },
                      (try? quire(["status"], home: home).stdout) ?? "")
    }
}
