import Foundation

// Shared by the relay, sync and end-to-end tests: a free port on loopback and
// a private redis-server. (A plain target, so three test targets can use it.)

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A free TCP port on 127.0.0.1, found by binding port 0.
public func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestSupportError("no free TCP port on 127.0.0.1") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// True when something accepts TCP connections on 127.0.0.1:port.
public func acceptsConnections(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    a.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &a) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// A private redis-server on a free port, or QUIRE_TEST_REDIS_URL when set.
/// A missing redis-server fails the tests: the Redis path is real.
public final class TestRedisServer: @unchecked Sendable {
    public let url: String
    private var process: Process?

    /// `arguments` are added to redis-server's (ACL users, say); with them,
    /// QUIRE_TEST_REDIS_URL is not used.
    /// `port`: this one (a server started again where one was stopped);
    /// QUIRE_TEST_REDIS_URL is not used either.
    public init(arguments: [String] = [], port chosen: Int? = nil) throws {
        if arguments.isEmpty, chosen == nil, let url = ProcessInfo.processInfo.environment["QUIRE_TEST_REDIS_URL"], !url.isEmpty {
            self.url = url
            return
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw TestSupportError("redis-server is not installed (/usr/bin/redis-server); run tools/setup: these tests need a real Redis")
        }
        let port = try chosen ?? freeTCPPort()
        url = "redis://127.0.0.1:\(port)"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        p.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"] + arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if acceptsConnections(port: port) { return }
            usleep(50_000)
        }
        throw TestSupportError("redis-server did not start on port \(port)")
    }

    public func stop() {
        guard let p = process, p.isRunning else { return }
        p.terminate()
        p.waitUntilExit()
        process = nil
    }

    deinit { stop() }
}

/// One redis-server shared by the end-to-end test classes that sync over
/// Redis (each test uses its own account, so its own channels), started on
/// first use and stopped when the test process exits. Tests that kill and
/// restart Redis (the relay tests) run a server of their own.
public enum SharedTestRedis {
    private static let started: Result<TestRedisServer, TestSupportError> = {
        do {
            let server = try TestRedisServer()
            atexit { SharedTestRedis.stopAtExit() }
            return .success(server)
        } catch {
            return .failure(TestSupportError("no Redis: \(error)"))
        }
    }()

    /// The server's URL; throws (failing the calling test with the reason)
    /// when it could not start.
    public static func url() throws -> String { try started.get().url }

    private static func stopAtExit() { if case .success(let server) = started { server.stop() } }
}

