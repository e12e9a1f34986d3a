import Foundation
import QuireTestSupport
import XCTest

/// A throwaway `redis-server` on a free port, with nothing persisted.
final class RedisServerProcess: @unchecked Sendable {
    let port: Int
    private var process: Process?

    var url: String { "redis://127.0.0.1:\(port)" }

    init(port: Int? = nil) throws {
        self.port = try port ?? freeTCPPort()
        try start()
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--daemonize", "no", "--loglevel", "warning"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw NSError(domain: "RedisServerProcess", code: 1,
                          userInfo: [NSLocalizedDescriptionKey: "cannot start /usr/bin/redis-server: \(error)"])
        }
        self.process = process
        // Ready when the port accepts a connection.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if acceptsConnections(port: port) { return }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        stop()
        throw NSError(domain: "RedisServerProcess", code: 2,
                      userInfo: [NSLocalizedDescriptionKey: "redis-server on port \(port) did not start"])
    }

    /// Kills the server abruptly (SIGKILL), as a crash or an outage would.
    func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    func stop() {
        guard let process else { return }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        self.process = nil
    }
}
