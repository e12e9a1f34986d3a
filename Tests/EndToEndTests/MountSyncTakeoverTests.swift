import Foundation
import XCTest

/// A mount started while another process syncs the same device (`quire
/// sync` in a terminal, a joining device's first sync) starts its own
/// sync once that process stops, without being mounted again.
final class MountSyncTakeoverTests: TwoMountedDevicesTestCase {
    func testAMountStartedWhileAnotherProcessSyncsTakesOverWhenItStops() throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: env)
        for name in ["a", "b"] { try FileManager.default.createDirectory(atPath: mount(name), withIntermediateDirectories: true) }
        try quireOK(["mount", mount("a")], home: home("a"))

        let other = try SyncDaemon(home: home("b"), relay: relay)
        XCTAssertTrue(eventually(10) { lockHolder(home("b")) == "\(other.pid)" }, "the sync process never took the lock")
        try quireOK(["mount", mount("b")], home: home("b"))
        let log = { (try? String(contentsOfFile: self.home("b") + "/quire.log", encoding: .utf8)) ?? "" }
        XCTAssertTrue(eventually(5) { log().contains("sync waits for process \(other.pid)") }, log())

        // While the other process syncs, b's mount shows what it brings in.
        try Data("first\n".utf8).write(to: URL(fileURLWithPath: mount("a") + "/notebook/first.md"))
        XCTAssertTrue(eventually(30) { (try? String(contentsOfFile: self.mount("b") + "/notebook/first.md", encoding: .utf8)) == "first\n" },
                      other.output + log())

        other.stop()
        XCTAssertTrue(eventually(10) { log().contains("sync started: the process that held it stopped") }, log())
        let mountPid = try XCTUnwrap(String(contentsOfFile: home("b") + "/sync.lock", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertNotEqual(mountPid, "\(other.pid)")
        // Both ways now go through b's mount alone.
        try Data("second\n".utf8).write(to: URL(fileURLWithPath: mount("a") + "/notebook/second.md"))
        XCTAssertTrue(eventually(30) { (try? String(contentsOfFile: self.mount("b") + "/notebook/second.md", encoding: .utf8)) == "second\n" }, log())
        try Data("from b\n".utf8).write(to: URL(fileURLWithPath: mount("b") + "/notebook/from b.md"))
        XCTAssertTrue(eventually(30) { (try? String(contentsOfFile: self.mount("a") + "/notebook/from b.md", encoding: .utf8)) == "from b\n" }, log())

        // A second `quire sync` is refused now: the mount holds the lock.
        let refused = try quire(["sync", "--relay", relay, "--once"], home: home("b"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("already running"), refused.stderr)
    }

    /// The process id written in the device's sync lock, if any.
    private func lockHolder(_ home: String) -> String? {
        (try? String(contentsOfFile: home + "/sync.lock", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
