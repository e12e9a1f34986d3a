import Foundation
import XCTest
import QuireTestSupport

/// A `quire sync` daemon running as a real process, stopped with SIGTERM.
/// `env` adds to the environment (the test-only faults of a holder);
/// `waitsForControlChannel` returns once its offload socket answers.
final class SyncDaemon: @unchecked Sendable {
    let home: String
    private let process = Process()
    private let log: String

    init(home: String, relay: String, extra: [String] = [], env: [String: String] = [:],
         waitsForControlChannel: Bool = false) throws {
        self.home = home
        // One log per process: a restarted daemon does not wipe the last one's.
        log = home + ".daemon-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: QuireBinary.path)
        process.arguments = ["--home", home, "sync", "--relay", relay, "--verbose"] + extra
        process.environment = ProcessInfo.processInfo.environment.merging(env) { _, added in added }
        let handle = FileHandle(forWritingAtPath: log)!
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        if waitsForControlChannel {
            _ = eventually(5) { FileManager.default.fileExists(atPath: home + "/offload.sock") }
            usleep(300_000)
        }
    }

    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }
    /// The exit status, once it is no longer running.
    var terminationStatus: Int32 { process.terminationStatus }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    deinit { stop() }
}

/// Runs quire and fails the test (with its stderr) unless it exits 0.
@discardableResult
func quireOK(_ args: [String], home: String? = nil, stdin: [UInt8]? = nil, env: [String: String] = [:],
             file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
    let r = try quire(args, home: home, stdin: stdin, env: env)
    XCTAssertEqual(r.status, 0, "quire \(args.joined(separator: " ")): \(r.stderr)", file: file, line: line)
    return r
}

/// `quire digest --json` roots, per namespace (the comparison of replicas).
func digestRoots(_ home: String) throws -> [String: String] {
    let r = try quire(["digest", "--json"], home: home)
    guard r.status == 0, let o = try jsonObject(r.stdout) as? [String: Any], let list = o["namespaces"] as? [[String: Any]] else { return [:] }
    var roots: [String: String] = [:]
    for ns in list { roots[ns["namespace"] as! String] = ns["root"] as? String }
    return roots
}

/// Waits until every home reports the same digest.
func waitForEqualDigests(_ homes: [String], timeout: TimeInterval) throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let all = try homes.map(digestRoots)
        if !all[0].isEmpty && all.allSatisfy({ $0 == all[0] }) { return true }
        usleep(200_000)
    }
    return false
}

/// The `sync` part of `quire status --json`.
func syncStatus(_ home: String) throws -> [String: Any] {
    let r = try quire(["status", "--json"], home: home)
    return ((try? jsonObject(r.stdout)) as? [String: Any])?["sync"] as? [String: Any] ?? [:]
}

/// A short private directory (AF_UNIX socket paths are limited to 107 bytes).
func makeShortDirectory() -> String {
    var template = Array("/tmp/qe-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!
    return String(cString: made)
}

func freePort() throws -> Int { try freeTCPPort() }
