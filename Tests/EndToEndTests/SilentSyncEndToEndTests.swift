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
}
