import Foundation
import QuireStore

/// A mount whose sync waits for a relay that does not answer (mounted
/// before the network or Redis is up): which relay, since when, the last
/// error. No engine runs yet, so no `sync-status.json` says so; this record
/// (`<home>/sync-relay-wait.json`) lets `quire status`, another process,
/// tell what the mount knows. It names the waiting process, so a record
/// left by a mount that was killed is ignored.
public struct RelayWait: Codable, Equatable, Sendable {
    /// The waiting process (the mount daemon).
    public var pid: Int32
    /// The relay as shown to people: a Redis password never appears.
    public var relay: String
    /// Unix seconds of the first attempt that failed.
    public var since: Int64
    /// Unix seconds of the latest attempt, and why it failed.
    public var lastTriedAt: Int64
    public var lastError: String

    /// The record of a waiting process that still runs, if any.
    public static func load(from home: DeviceHome) -> RelayWait? {
        guard let data = FileManager.default.contents(atPath: home.relayWaitPath),
              let wait = try? JSONDecoder().decode(RelayWait.self, from: data),
              wait.pid > 0, kill(wait.pid, 0) == 0 || errno == EPERM else { return nil }
        return wait
    }
}

/// What one waiting process writes: the first failure sets `since`, each
/// later one the last error; `clear` removes the record once sync starts
/// or the wait ends (only a record of this process: a second mount of the
/// same device may have written its own).
public final class RelayWaitRecord: @unchecked Sendable {
    private let home: DeviceHome
    private let lock = NSLock()
    private var since: Int64?

    public init(home: DeviceHome) { self.home = home }

    public func note(_ unreachable: RelayUnreachable, at now: Int64 = Int64(Date().timeIntervalSince1970)) {
        lock.lock(); defer { lock.unlock() }
        let first = since ?? now
        since = first
        let wait = RelayWait(pid: getpid(), relay: unreachable.relay, since: first, lastTriedAt: now, lastError: unreachable.reason)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(wait) else { return }
        // Status only: a record that could not be written costs words, not data.
        try? AtomicFile.write(Array(data), to: home.relayWaitPath, mode: 0o600)
    }

    public func clear() {
        lock.lock(); defer { lock.unlock() }
        guard since != nil else { return }
        since = nil
        if let data = FileManager.default.contents(atPath: home.relayWaitPath),
           let wait = try? JSONDecoder().decode(RelayWait.self, from: data), wait.pid != getpid() { return }
        unlink(home.relayWaitPath)
    }
}
