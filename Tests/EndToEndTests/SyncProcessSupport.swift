import Foundation
import XCTest

/// A `quire sync` daemon running as a real process, stopped with SIGTERM.
final class SyncDaemon: @unchecked Sendable {
    let home: String
    private let process = Process()
    private let log: String

    init(home: String, relay: String, extra: [String] = []) throws {
        self.home = home
        log = home + ".daemon.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: QuireBinary.path)
        process.arguments = ["--home", home, "sync", "--relay", relay, "--verbose"] + extra
        let handle = FileHandle(forWritingAtPath: log)!
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

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

func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard ok else { throw NSError(domain: "EndToEnd", code: 1, userInfo: [NSLocalizedDescriptionKey: "no free port"]) }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A private redis-server for one test class (or QUIRE_TEST_REDIS_URL).
/// A missing redis-server fails the tests: the Redis path is tested for real.
final class RedisForTests: @unchecked Sendable {
    let url: String
    private var process: Process?

    init() throws {
        if let url = ProcessInfo.processInfo.environment["QUIRE_TEST_REDIS_URL"], !url.isEmpty { self.url = url; return }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw NSError(domain: "EndToEnd", code: 2, userInfo: [NSLocalizedDescriptionKey:
                "redis-server is not installed (/usr/bin/redis-server); run tools/setup: these tests need a real Redis"])
        }
        let port = try freePort()
        url = "redis://127.0.0.1:\(port)"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        p.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            a.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return }
            usleep(50_000)
        }
        throw NSError(domain: "EndToEnd", code: 3, userInfo: [NSLocalizedDescriptionKey: "redis-server did not start on \(port)"])
    }

    func stop() {
        guard let p = process, p.isRunning else { return }
        p.terminate()
        p.waitUntilExit()
        process = nil
    }

    deinit { stop() }
}
