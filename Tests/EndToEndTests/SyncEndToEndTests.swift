import Foundation
import QuireTestSupport
import XCTest

/// Three devices made with init + invite + join, each a real `quire sync`
/// process, on a real relay: they converge after offline edits, deletions
/// stay deleted, concurrent edits come out identical everywhere.
class SyncEndToEndBase: XCTestCase {
    var dir = ""
    var daemons: [SyncDaemon] = []
    let env = ["QUIRE_PASSPHRASE": "a long shared secret"]

    override func setUp() { dir = makeShortDirectory() }

    override func tearDown() {
        for d in daemons { d.stop() }
        daemons = []
        try? FileManager.default.removeItem(atPath: dir)
    }

    var relay: String { "local:\(dir)/relay" }

    func home(_ name: String) -> String { dir + "/" + name }

    /// a (new account), then b and c joined from a's invite.
    func makeThreeDevices() throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        let invite = try String(contentsOfFile: dir + "/invite", encoding: .utf8)
        XCTAssertTrue(invite.hasPrefix("quire-invite-2."))
        // A wrong passphrase joins nothing and leaves no device behind.
        let wrong = try quire(["init", "--join", dir + "/invite", "--name", "x"], home: home("x"), env: ["QUIRE_PASSPHRASE": "not the passphrase"])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stderr.contains("passphrase does not open"), wrong.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home("x") + "/prefs.json"))
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: env)
        // An invite admits one device: c gets its own (pasted as text).
        try quireOK(["invite", "--out", dir + "/invite-c", "--kdf", "interactive"], home: home("a"), env: env)
        let second = try String(contentsOfFile: dir + "/invite-c", encoding: .utf8)
        try quireOK(["init", "--join", second.trimmingCharacters(in: .whitespacesAndNewlines), "--name", "c", "--relay", relay],
                    home: home("c"), env: env)
    }

    func startAll(_ names: [String] = ["a", "b", "c"]) throws {
        for n in names { daemons.append(try SyncDaemon(home: home(n), relay: relay)) }
    }

    func stopAll() {
        for d in daemons { d.stop() }
        daemons = []
    }

    func put(_ home: String, _ args: [String], body: String? = nil) throws {
        try quireOK(["put"] + args, home: home, stdin: body.map { Array($0.utf8) } ?? [])
    }

    func get(_ home: String, _ ns: String, _ name: String) throws -> String {
        try quire(["get", ns, name], home: home).stdout
    }

    func runConvergenceScenario() throws {
        try makeThreeDevices()
        // First contact: certificates travel, rosters fill in through a.
        try startAll()
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b"), home("c")], timeout: 30), daemons.map(\.output).joined())
        for n in ["a", "b", "c"] {
            let r = try quireOK(["devices", "--json"], home: home(n))
            let list = (try jsonObject(r.stdout) as! [String: Any])["devices"] as! [[String: Any]]
            XCTAssertEqual(Set(list.map { $0["name"] as! String }), ["a", "b", "c"], "\(n)'s roster")
        }
        try put(home("a"), ["notebook", "Shared"], body: "First paragraph.")
        try put(home("b"), ["notebook", "Doomed"], body: "Will be deleted.")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b"), home("c")], timeout: 30))
        stopAll()

        // Offline edits on every device.
        try put(home("a"), ["notebook", "From a"], body: "written on a")
        try put(home("b"), ["plans", "From b", "--due", "2026-12-24"])
        try put(home("c"), ["contacts", "Ada", "--email", "ada@example.org"])
        try put(home("c"), ["settings", "theme", "dark"])
        try quireOK(["rm", "notebook", "Doomed"], home: home("c"))
        // Concurrent edits of one note on two devices: both paragraphs survive, identically.
        try put(home("a"), ["notebook", "Shared"], body: "First paragraph.\n\nAdded on a.")
        try put(home("b"), ["notebook", "Shared"], body: "First paragraph.\n\nAdded on b.")

        try startAll()
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b"), home("c")], timeout: 30), daemons.map(\.output).joined())
        // While running, status says so in words.
        _ = waitUntilTrue(timeout: 5) { ((try? syncStatus(self.home("a")))?["siblings"] as? [[String: Any]])?.allSatisfy { $0["inSync"] as? Bool == true } == true }
        let status = try quireOK(["status"], home: home("a")).stdout
        XCTAssertTrue(status.contains("sync: running"), status)
        XCTAssertTrue(status.contains("'b'") && status.contains("in sync"), status)
        stopAll()

        let roots = try digestRoots(home("a"))
        for n in ["b", "c"] { XCTAssertEqual(try digestRoots(home(n)), roots, "\(n) differs from a") }
        for n in ["a", "b", "c"] {
            let h = home(n)
            XCTAssertEqual(try get(h, "notebook", "From a"), "written on a")
            XCTAssertTrue(try quire(["ls", "plans"], home: h).stdout.contains("From b"))
            XCTAssertTrue(try quire(["ls", "contacts"], home: h).stdout.contains("Ada"))
            XCTAssertEqual(try get(h, "settings", "theme").trimmingCharacters(in: .whitespacesAndNewlines), "dark")
            XCTAssertFalse(try quire(["ls", "notebook"], home: h).stdout.contains("Doomed"), "\(n): a deleted note came back")
            let shared = try get(h, "notebook", "Shared")
            XCTAssertTrue(shared.contains("Added on a.") && shared.contains("Added on b."), "\(n): \(shared)")
            XCTAssertEqual(shared, try get(home("a"), "notebook", "Shared"))
        }
        // Once more: an idle fleet that restarts converges with no rows moving.
        let once = try quire(["sync", "--relay", relay, "--until-converged", "--timeout", "5", "--json"], home: home("a"))
        XCTAssertEqual(once.status, 1, "nobody else is running, so a cannot converge: \(once.stdout)")
        XCTAssertTrue(once.stderr.contains("not converged"), once.stderr)
    }
}

func waitUntilTrue(timeout: TimeInterval, _ predicate: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if predicate() { return true }
        usleep(100_000)
    }
    return predicate()
}

final class SyncLocalRelayEndToEndTests: SyncEndToEndBase {
    func testThreeDevicesConvergeOnTheLocalRelay() throws {
        try runConvergenceScenario()
    }

    func testUntilConvergedAndOnceModes() throws {
        try makeThreeDevices()
        try put(home("b"), ["notebook", "Only on b"], body: "b")
        daemons.append(try SyncDaemon(home: home("b"), relay: relay))
        daemons.append(try SyncDaemon(home: home("c"), relay: relay))
        let r = try quire(["sync", "--relay", relay, "--until-converged", "--timeout", "30", "--json"], home: home("a"))
        XCTAssertEqual(r.status, 0, r.stderr + daemons.map(\.output).joined())
        XCTAssertEqual((try jsonObject(r.stdout) as? [String: Any])?["ok"] as? Bool, true)
        XCTAssertEqual(try get(home("a"), "notebook", "Only on b"), "b")
        let once = try quire(["sync", "--relay", relay, "--once", "--timeout", "10"], home: home("a"))
        XCTAssertEqual(once.status, 0, once.stderr)
        XCTAssertTrue(once.stdout.contains("in sync with"), once.stdout)
        // Only one sync per device directory.
        let second = try quire(["sync", "--relay", relay, "--once"], home: home("b"))
        XCTAssertEqual(second.status, 1)
        XCTAssertTrue(second.stderr.contains("already running"), second.stderr)
        XCTAssertEqual(try quire(["sync", "--bogus"], home: home("a")).status, 2)
        XCTAssertTrue(try quire(["sync", "--help"], home: home("a")).stdout.contains("--until-converged"))
    }

    /// A sibling that stopped is said to be away, not reachable, once it
    /// has been silent for two heartbeats, not "syncing" for as long as it
    /// stays gone; and the deletions the barrier cannot collect without it
    /// are said to wait for it (DESIGN rule 8).
    func testASiblingThatStoppedIsSaidToBeAwayAndTheBarrierToWaitForIt() throws {
        try makeThreeDevices()
        let env = ["QUIRE_SIBLING_AWAY_AFTER_SECONDS": "5", "QUIRE_BARRIER_MIN_TOMBSTONES": "1"]
        for n in ["a", "b"] { daemons.append(try SyncDaemon(home: home(n), relay: relay, env: env)) }
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30))
        func status() -> String { (try? quire(["status"], home: home("a"), env: env).stdout) ?? "" }
        func line() -> String { status().split(separator: "\n").first { $0.contains("'b'") && !$0.contains("recent:") }.map(String.init) ?? "" }
        XCTAssertTrue(eventually(20) { line().contains("in sync") }, line())
        try put(home("a"), ["notebook", "Deleted while b is away"], body: "x")
        XCTAssertTrue(eventually(20) { line().contains("in sync") }, line())
        daemons[1].stop()
        try quireOK(["rm", "notebook", "Deleted while b is away"], home: home("a"))
        XCTAssertTrue(eventually(30) { line().contains("AWAY: not reachable since") }, line())
        XCTAssertFalse(line().contains("syncing"), line())
        XCTAssertTrue(eventually(15) { status().contains("barrier: 1 deleted row is kept as a tombstone") }, status())
        let waits = try XCTUnwrap(status().split(separator: "\n").first { $0.hasPrefix("barrier: 1 deleted row") })
        XCTAssertTrue(waits.contains("'b' (away since") && waits.contains("not reachable"), String(waits))
        let json = try jsonObject(try quireOK(["status", "--json"], home: home("a"), env: env).stdout) as! [String: Any]
        let sync = try XCTUnwrap(json["sync"] as? [String: Any])
        XCTAssertEqual(sync["barrierWaitsFor"] as? [String], ["b"], "c never joined the roster (admitted by no running device)")
        let b = (sync["siblings"] as? [[String: Any]])?.first { $0["name"] as? String == "b" }
        XCTAssertEqual(b?["away"] as? Bool, true)
    }
}

final class SyncRedisEndToEndTests: SyncEndToEndBase {
    override var relay: String { (try? SharedTestRedis.url()) ?? "redis://127.0.0.1:1" }

    func testThreeDevicesConvergeOverRedis() throws {
        _ = try SharedTestRedis.url()   // fails the test with the reason when Redis is missing
        try runConvergenceScenario()
        XCTAssertTrue(try quire(["status"], home: home("a")).stdout.contains("redis://"), "status names the relay")
    }
}
