import Foundation
import QuireCore
import QuireStore

/// Every file operation on the cloud folder, run on a thread of its own
/// and waited for only so long. The folder is often a network mount or a
/// sync service's folder, and one that hangs (a server gone, a FUSE
/// server stopped) would hold a `read` or `rename` for ever: the sync
/// engine, which reads the folder on its own thread, would stop syncing
/// over the relay too. Past the limit the operation fails with
/// `NotAnswering` (the callers' "cannot be read / written" paths: a
/// barrier round is abandoned, a recovery waits, status says why), and
/// while it is still stuck every later one fails at once instead of
/// queueing behind it. An operation whose caller gave up before it
/// started is skipped; the stuck one may still finish later (an anchor
/// landing after its round was abandoned is harmless: rounds name their
/// anchors).
public enum CloudIO {
    public struct NotAnswering: Error, CustomStringConvertible {
        public var seconds: Int
        public var description: String {
            "the cloud folder has not answered for \(seconds) s (a network mount or sync service that hangs?)"
        }
    }

    /// The limit, in seconds: `QUIRE_CLOUD_TIMEOUT_SECONDS` (at least 1), else 60.
    static let configuredLimitSeconds: Int = {
        if let text = ProcessInfo.processInfo.environment["QUIRE_CLOUD_TIMEOUT_SECONDS"], let n = Int(text) { return max(1, n) }
        return 60
    }()

    /// The limit now: the configured one, or less inside `waitingAtMost`.
    static var limitSeconds: Int { min(configuredLimitSeconds, gate.cap ?? .max) }

    /// Runs `body` with every folder operation waited for at most
    /// `seconds`: a command checking the anchor before it runs must not
    /// sit for a minute on a folder that hangs (a running sync may).
    public static func waitingAtMost<T>(seconds: Int, _ body: () throws -> T) rethrows -> T {
        let before = gate.cap
        gate.cap = max(1, seconds)
        defer { gate.cap = before }
        return try body()
    }

    static let gate = Gate()

    /// When the operation the folder has not answered began, while it has
    /// run past the limit (nil: the folder answers).
    public static var stuckSince: Timestamp? { gate.stuck(limit: limitSeconds)?.since }

    /// The worker and what it is doing now.
    final class Gate: @unchecked Sendable {
        let queue = DispatchQueue(label: "quire.cloud-folder")
        private let lock = NSLock()
        private var busySince: UInt64?
        /// The same moment on the wall clock, for the status.
        private var startedAt: Timestamp?
        private var capSeconds: Int?
        /// A lower limit for the operations of one caller (`waitingAtMost`).
        var cap: Int? {
            get { lock.withLock { capSeconds } }
            set { lock.withLock { capSeconds = newValue } }
        }

        func started() {
            lock.withLock {
                busySince = DispatchTime.now().uptimeNanoseconds
                startedAt = Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970)
            }
        }
        func finished() { lock.withLock { busySince = nil; startedAt = nil } }
        /// How long the running operation has run, and since when, once past the limit.
        func stuck(limit: Int) -> (seconds: Int, since: Timestamp)? {
            lock.withLock {
                guard let since = busySince, let startedAt else { return nil }
                let seconds = Int((DispatchTime.now().uptimeNanoseconds &- since) / 1_000_000_000)
                return seconds >= limit ? (seconds, startedAt) : nil
            }
        }
    }

    /// One operation's outcome, handed from the worker to the caller.
    final class Outcome<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var result: Result<T, any Error>?
        private var abandoned = false

        /// False when the caller gave up before the operation started.
        func begin() -> Bool { lock.withLock { !abandoned } }
        func set(_ r: Result<T, any Error>) { lock.withLock { result = r } }
        func abandon() { lock.withLock { abandoned = true } }
        var value: Result<T, any Error>? { lock.withLock { result } }
    }

    /// Runs `operation` on the folder's thread and waits for it, at most the limit.
    static func perform<T: Sendable>(_ operation: @escaping @Sendable () throws -> T) throws -> T {
        let limit = limitSeconds
        if let stuck = gate.stuck(limit: limit) { throw NotAnswering(seconds: stuck.seconds) }
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        let gate = self.gate
        gate.queue.async {
            guard outcome.begin() else { return }
            gate.started()
            let result = Result { try operation() }
            gate.finished()
            outcome.set(result)
            done.signal()
        }
        if done.wait(timeout: .now() + .seconds(limit)) == .timedOut {
            outcome.abandon()
            throw NotAnswering(seconds: limit)
        }
        guard let result = outcome.value else { throw NotAnswering(seconds: limit) }
        return try result.get()
    }

    /// A regular file's bytes (`AtomicFile.readRegular`).
    public static func read(_ path: String, upTo limit: Int = .max) throws -> [UInt8] {
        try perform { try AtomicFile.readRegular(path, upTo: limit) }
    }

    /// Writes and lands a file (`AtomicFile.write`).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
        try perform { try AtomicFile.write(bytes, to: path, mode: mode) }
    }

    public static func list(_ folder: String) throws -> [String] {
        try perform { try FileManager.default.contentsOfDirectory(atPath: folder) }
    }

    public static func isFolder(_ path: String) throws -> Bool {
        try perform {
            var isDir: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDir) && isDir.boolValue
        }
    }

    public static func exists(_ path: String) throws -> Bool {
        try perform { FileManager.default.fileExists(atPath: path) }
    }

    public static func remove(_ path: String) throws {
        try perform { _ = unlink(path) }
    }
}
