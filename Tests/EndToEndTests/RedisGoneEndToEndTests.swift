import Foundation
import QuireTestSupport
import XCTest

/// A Redis server that goes away in the middle of a catch-up is an outage
/// the daemons ride out, never the end of one (a write to the closed
/// socket raised SIGPIPE, which killed the serving daemon silently).
final class RedisGoneEndToEndTests: XCTestCase {
    func testBothDaemonsOutliveRedisStoppingInTheMiddleOfACatchUp() throws {
        let dir = makeShortDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let redis = try TestRedisServer()
        let env = ["QUIRE_PASSPHRASE": "a long shared secret"]
        func home(_ name: String) -> String { dir + "/" + name }
        try quireOK(["init", "--name", "a", "--relay", redis.url], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", redis.url], home: home("b"), env: env)
        try quireOK(["debug", "burst", "--count", "8000", "--size", "3000"], home: home("a"))
        let a = try SyncDaemon(home: home("a"), relay: redis.url)
        let b = try SyncDaemon(home: home("b"), relay: redis.url)
        // Stopped once the serving daemon is sending (b pulls 24 MB).
        XCTAssertTrue(eventually(20) { (try? quire(["status", "--json"], home: home("b")).stdout)?.contains("catch") == true
            || !((try? quire(["ls", "notebook"], home: home("b")).stdout) ?? "").isEmpty })
        redis.stop()
        sleep(3)
        XCTAssertTrue(a.isRunning, "the serving daemon died: \(a.output.suffix(400))")
        XCTAssertTrue(b.isRunning, "the pulling daemon died: \(b.output.suffix(400))")
        a.stop()
        b.stop()
    }

    /// A laptop that mounts before its network is up: the folder works at
    /// once, `quire mount` says sync waits for the relay, and sync starts
    /// when the relay answers (it never started before, until a remount).
    func testAMountMadeWhileTheRelayIsDownSyncsOnceItAnswers() throws {
        let dir = makeShortDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = try freeTCPPort()
        var redis: TestRedisServer? = try TestRedisServer(port: port)
        let url = "redis://127.0.0.1:\(port)"
        let env = ["QUIRE_PASSPHRASE": "a long shared secret"]
        func home(_ name: String) -> String { dir + "/" + name }
        try quireOK(["init", "--name", "a", "--relay", url], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", url], home: home("b"), env: env)
        let a = try SyncDaemon(home: home("a"), relay: url)
        defer { a.stop() }
        try quireOK(["put", "notebook", "before"], home: home("a"), stdin: Array("from a\n".utf8))
        let b = try SyncDaemon(home: home("b"), relay: url)
        XCTAssertTrue(eventually(30) { (try? quire(["get", "notebook", "before"], home: home("b")).stdout) == "from a\n" }, "paired and synced")
        b.stop()
        redis?.stop()
        redis = nil
        let mountpoint = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let mounted = try quire(["mount", mountpoint], home: home("b"))
        defer { _ = try? quire(["unmount", mountpoint], home: home("b")) }
        XCTAssertEqual(mounted.status, 0, mounted.stderr)
        XCTAssertTrue(mounted.stderr.contains("sync waits for the relay"), mounted.stderr)
        XCTAssertEqual(try String(contentsOfFile: mountpoint + "/notebook/before.md", encoding: .utf8), "from a\n", "the folder works meanwhile")
        redis = try TestRedisServer(port: port)
        try quireOK(["put", "notebook", "after"], home: home("a"), stdin: Array("once the relay is back\n".utf8))
        XCTAssertTrue(eventually(60) { (try? String(contentsOfFile: mountpoint + "/notebook/after.md", encoding: .utf8)) == "once the relay is back\n" },
                      "sync started when the relay answered: \(String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: home("b") + "/quire.log"))) ?? Data(), as: UTF8.self).suffix(600))")
        _ = redis
    }
}
