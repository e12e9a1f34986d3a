import Foundation
import QuireCore
import QuireStore
import QuireSync

/// What runs in the background for one device directory: the sync engine
/// (with its device lock, log and status), and the control channel through
/// which other commands reach it. `quire sync` and the mount daemon both
/// start it here:
///
///     let daemon = try Daemon.start(home: home, store: store, identity: identity)
///     ...
///     daemon.stop()
public final class Daemon: @unchecked Sendable {
    public let sync: SyncService
    private let runtime: OffloadRuntime
    public var engine: SyncEngine { sync.engine }

    private init(sync: SyncService, runtime: OffloadRuntime) {
        self.sync = sync
        self.runtime = runtime
    }

    /// Starts syncing and serves the control channel. `relaySpec` overrides
    /// prefs; `echo` also receives every sync log line; `log` gets the
    /// daemon's own notes (a control channel that could not be opened).
    public static func start(home: DeviceHome, store: ReplicaStore, identity: Identity, relaySpec: String? = nil,
                             echo: (@Sendable (String) -> Void)? = nil,
                             log: @escaping @Sendable (String) -> Void) throws -> Daemon {
        // A peer that goes away while we write to it (Redis stopped in the
        // middle of a catch-up) is an error on that socket, which the relay
        // handles and reports, never the end of the daemon.
        signal(SIGPIPE, SIG_IGN)
        let sync = try SyncService.start(home: home, store: store, identity: identity, relaySpec: relaySpec, echo: echo)
        let runtime = OffloadRuntime(engine: sync.engine, home: home, store: store, log: log)
        return Daemon(sync: sync, runtime: runtime)
    }

    /// A body for the mount's reads, through this daemon's engine.
    public func recall(key: RowKey, contentHash: [UInt8], timeout: Double) throws(OffloadError) -> [UInt8] {
        try engine.recall(key: key, contentHash: contentHash, timeout: timeout)
    }

    /// Closes the control channel, then stops the engine and releases the lock.
    public func stop() {
        runtime.stop()
        sync.stop()
    }
}
