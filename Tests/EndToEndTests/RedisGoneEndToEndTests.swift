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
}
