import Foundation
import QuireTestSupport
import XCTest

/// What `quire sync` answers when it cannot run, with the real binary:
/// a malformed relay is a mistake in the call (exit 2), a relay that does
/// not answer is a failure (exit 1), and `--json` reports a failure as
/// JSON on standard output too.
final class SyncCommandLineTests: XCTestCase {
    var dir = ""

    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func home(_ name: String) -> String { dir + "/" + name }

    func testSyncWithJSONPrintsAFailureToStartAsJSON() throws {
        try quireOK(["init", "--name", "a", "--relay", "local:\(dir)/relay"], home: home("a"))
        let closed = "redis://127.0.0.1:\(try freeTCPPort())"
        for mode in [["--once"], ["--until-converged"]] {
            let r = try quire(["sync"] + mode + ["--json", "--timeout", "2", "--relay", closed], home: home("a"))
            XCTAssertEqual(r.status, 1, "\(mode): \(r.stderr)")
            let o = try XCTUnwrap(try? jsonObject(r.stdout) as? [String: Any], "\(mode): stdout is no JSON object: '\(r.stdout)'")
            XCTAssertEqual(o["ok"] as? Bool, false)
            let message = try XCTUnwrap(o["message"] as? String)
            XCTAssertTrue(message.contains("cannot reach the relay"), message)
            // The same fields as a sync that ran, so a script reads one shape.
            XCTAssertEqual(Set(o.keys), ["ok", "message", "rounds", "rowsApplied", "bytesOut", "bytesIn"])
            XCTAssertEqual(o["rounds"] as? Int, 0)
            // The one line on stderr stays, as for every failure.
            XCTAssertTrue(r.stderr.contains("cannot reach the relay"), r.stderr)
        }
        // A Redis password stays in prefs, out of the failure's words.
        let secret = try quire(["sync", "--once", "--json", "--relay", "redis://:a-secret@127.0.0.1:\(try freeTCPPort())"], home: home("a"))
        XCTAssertEqual(secret.status, 1, secret.stderr)
        XCTAssertTrue(secret.stdout.contains("redis://***@127.0.0.1:"), secret.stdout)
        XCTAssertFalse(secret.stdout.contains("a-secret") || secret.stderr.contains("a-secret"), secret.stdout + secret.stderr)
        // Without --json, nothing on stdout.
        let plain = try quire(["sync", "--once", "--timeout", "2", "--relay", closed], home: home("a"))
        XCTAssertEqual(plain.status, 1)
        XCTAssertEqual(plain.stdout, "")

        // Another process syncing this device: a failure too, in JSON.
        let running = try SyncDaemon(home: home("a"), relay: "local:\(dir)/relay")
        defer { running.stop() }
        XCTAssertTrue(eventually(10) { ((try? String(contentsOfFile: self.home("a") + "/sync.lock", encoding: .utf8)) ?? "").contains("\(running.pid)") })
        let held = try quire(["sync", "--once", "--json", "--timeout", "2"], home: home("a"))
        XCTAssertEqual(held.status, 1, held.stderr)
        let o = try XCTUnwrap(try? jsonObject(held.stdout) as? [String: Any], "stdout is no JSON object: '\(held.stdout)'")
        XCTAssertEqual(o["ok"] as? Bool, false)
        XCTAssertTrue((o["message"] as? String ?? "").contains("already running for this device (process \(running.pid))"), "\(o)")

        // No device here at all: the same.
        let none = try quire(["sync", "--once", "--json"], home: home("nobody"))
        XCTAssertEqual(none.status, 1, none.stderr)
        XCTAssertEqual((try? jsonObject(none.stdout) as? [String: Any])?["ok"] as? Bool, false, none.stdout)
    }

    func testAMalformedRelayIsAUsageErrorAndAnUnreachableOneAFailure() throws {
        try quireOK(["init", "--name", "a", "--relay", "local:\(dir)/relay"], home: home("a"))
        for command in ["sync", "up"] {
            for spec in ["bogus://x", "local:relative/dir", "redis://127.0.0.1:99999", "redis://"] {
                for mode in [["--once"], ["--once", "--json"], []] {
                    let r = try quire([command, "--relay", spec] + mode, home: home("a"))
                    XCTAssertEqual(r.status, 2, "quire \(command) --relay \(spec) \(mode): \(r.stderr)")
                    XCTAssertTrue(r.stderr.contains("invalid"), r.stderr)
                    XCTAssertTrue(r.stderr.contains("quire \(command) --help"), r.stderr)
                }
            }
        }
        for spec in ["bogus://x", "local:relative/dir"] {
            let r = try quire(["init", "--name", "b", "--relay", spec], home: home("b"))
            XCTAssertEqual(r.status, 2, "init --relay \(spec): \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: home("b") + "/prefs.json"), "no device made from a call that was refused")
        }
        // Well-formed, but nothing listens there: a failure, exit 1.
        let unreachable = try quire(["sync", "--once", "--timeout", "2", "--relay", "redis://127.0.0.1:\(try freeTCPPort())"], home: home("a"))
        XCTAssertEqual(unreachable.status, 1, unreachable.stderr)
        XCTAssertTrue(unreachable.stderr.contains("cannot reach the relay"), unreachable.stderr)
    }
}
