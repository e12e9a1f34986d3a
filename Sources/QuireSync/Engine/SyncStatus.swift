import Foundation
import QuireCore
import QuireStore

/// A snapshot of the engine, written atomically to `<home>/sync-status.json`
/// so `quire status` and `quire devices` (other processes) can say in words
/// whether this device converges, and why not.
public struct SyncStatus: Codable, Equatable, Sendable {
    public struct Sibling: Codable, Equatable, Sendable {
        public var device: String
        public var name: String
        /// Unix seconds of the last authenticated frame from it.
        public var lastSeen: Int64?
        /// Unix seconds when our digests last matched.
        public var lastMatch: Int64?
        public var inSync: Bool
        /// Namespaces whose roots differed at its last digest.
        public var divergent: [String]
        /// Unix seconds until which the storm guard holds off pulls.
        public var stormBackoffUntil: Int64?
        public var storms: Int
        /// The digest wire version it speaks, when that is not ours.
        public var incompatibleVersion: Int?
        /// Its generation when it differs from ours (no content reconcile across the gap).
        public var generationGap: UInt64?
        public var rounds: Int
        public var bytesIn: Int
        public var bytesOut: Int
    }

    /// A row of this device that cannot sync: no message may carry it.
    public struct UnsyncableRow: Codable, Equatable, Sendable {
        public var namespace: String
        public var key: String
        /// Its title or name (empty if it has none).
        public var name: String
        /// Why, in words (`RowLimits.Violation`).
        public var reason: String
        /// Unix seconds when this engine first found it.
        public var since: Int64
    }

    /// A catch-up in progress (a new device, a long sleep): what came in
    /// since it began, and about how much remains.
    public struct CatchUp: Codable, Equatable, Sendable {
        public var rowsPulled: Int
        public var bytesPulled: Int
        public var seconds: Double
        /// The largest row count a sibling reports minus ours (nil: unknown).
        public var rowsRemaining: UInt64?

        public var bytesPerSecond: Double { seconds > 0 ? Double(bytesPulled) / seconds : 0 }

        /// One line, for a terminal or `quire status`.
        public var words: String {
            var line = "catching up: \(rowsPulled) row\(rowsPulled == 1 ? "" : "s") (\(Self.bytes(bytesPulled))) pulled in \(Int(seconds.rounded())) s"
            if seconds >= 1 { line += ", \(Self.bytes(Int(bytesPerSecond)))/s" }
            if let rowsRemaining { line += ", about \(rowsRemaining) to go" }
            return line
        }

        static func bytes(_ n: Int) -> String {
            n >= 1 << 20 ? String(format: "%.1f MB", Double(n) / 1_048_576) : n >= 1024 ? "\(n / 1024) KB" : "\(n) B"
        }
    }

    /// This device's own revocation, as its device log shows it once the
    /// statement reached it (from a sibling's `revoked_notice`, a
    /// reconcile, or the cloud folder's copies of the log).
    public struct Revocation: Codable, Equatable, Sendable {
        /// The device that revoked this one (hex id; nil: the account key).
        public var by: String?
        public var byName: String?
        /// Unix seconds the revocation was signed at, by its signer's clock.
        public var at: Int64?
        /// Not revoked by name: the admission it rests on counts for nothing
        /// (its admitter was revoked first, or its invite admitted another).
        public var admissionVoid: Bool

        public init(by: String?, byName: String?, at: Int64?, admissionVoid: Bool) {
            self.by = by; self.byName = byName; self.at = at; self.admissionVoid = admissionVoid
        }

        /// What happened, what it means and what to do, in one line (the
        /// log, `quire status`, the mount's `.quire/status`).
        public var words: String {
            let what: String
            if admissionVoid {
                what = "this device is NOT TRUSTED by the account: the admission it rests on counts for nothing (the device that "
                    + "admitted it was revoked first, or its invite admitted another device too)"
            } else {
                let who = byName.map { "'\($0)'" } ?? by.map { "device \($0.prefix(12))" } ?? "the account key"
                what = "this device was REVOKED by \(who)" + (at.map { " on \(DateStamp.format(Timestamp(seconds: $0)))" } ?? "")
            }
            return what + ": the other devices refuse its frames, so edits made here no longer reach them and theirs no longer "
                + "reach it; everything it holds stays here. To sync again, on a device that remains run 'quire invite', then join "
                + "with that invite in a new device directory ('quire --home NEW_DIR init --join INVITE'), and copy over what was "
                + "written here since (this device's files still show it)"
        }
    }

    public enum Phase: String, Codable, Sendable {
        /// Just started: the store may still be landing; nothing infers deletions.
        case settling
        case settled
        /// This device's certificate was revoked: it no longer syncs.
        case revoked
        case stopped
    }

    public var device: String
    public var pid: Int32
    public var updatedAt: Int64
    public var startedAt: Int64
    public var running: Bool
    public var phase: Phase
    public var relay: String
    public var generation: UInt64
    public var siblings: [Sibling]
    /// Frames dropped, by reason (`FrameDrop` raw values).
    public var dropped: [String: Int]
    public var framesIn: Int
    public var framesOut: Int
    public var bytesIn: Int
    public var bytesOut: Int
    public var rounds: Int
    public var rowsApplied: Int
    public var sendErrors: Int
    /// Since when frames cannot reach the relay (unix seconds; nil: they can).
    public var relayUnreachableSince: Int64? = nil
    /// The last few notable events, newest last, for `quire status`.
    public var events: [String]
    /// Rows of this device that cannot sync (too large to travel), and why.
    /// Optional so a snapshot written before it existed still reads.
    public var unsyncableRows: [UnsyncableRow]?
    /// The tombstone barrier's last outcome, in words.
    public var barrier: String? = nil
    /// Why this device cannot tell or reach the fleet's generation, in words.
    public var anchor: String? = nil
    /// Set when errors have persisted with no success (unix seconds since, reason).
    public var wedgedSince: Int64? = nil
    public var wedgedReason: String? = nil
    public var catchUp: CatchUp? = nil
    /// The cloud folder and the backup keys, in words: anchors refused (a
    /// key from before a revocation), keys this device lacks.
    public var cloudWarnings: [String]? = nil
    /// Why a device of the account refused to admit this joining device.
    public var admissionRefused: String? = nil
    /// Offloaded bodies a holder no longer holds (`SyncEngine.auditHolds`).
    public var offloadWarnings: [String]? = nil
    /// This device's revocation (nil: it is trusted, or has not learned it).
    public var revocation: Revocation? = nil
    /// Tombstones kept because a device of the roster is away, in words
    /// (a barrier needs every device's answer).
    public var barrierWaits: String? = nil
    /// The names of the devices the barrier waits for.
    public var barrierWaitsFor: [String]? = nil

    public static func path(in home: DeviceHome) -> String { home.syncStatusPath }

    public static func load(from home: DeviceHome) -> SyncStatus? {
        guard let data = FileManager.default.contents(atPath: path(in: home)) else { return nil }
        return try? JSONDecoder().decode(SyncStatus.self, from: data)
    }

    public func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(self)), to: path, mode: 0o600)
    }

    /// True if the process that wrote this snapshot still runs.
    public var isProcessAlive: Bool { running && pid > 0 && (kill(pid, 0) == 0 || errno == EPERM) }
}

/// What survives an engine restart: the floor of our own session stamps
/// (so a restarted sender is never mistaken for a replay of itself) and the
/// newest session seen per sibling (so old frames stay refused).
struct SyncPersistentState: Codable, Sendable {
    var ownSessionStart: UInt64 = 0
    var replayFloors: [String: UInt64] = [:]

    enum CodingKeys: String, CodingKey { case ownSessionStart, replayFloors }

    init() {}

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        ownSessionStart = try c.decodeIfPresent(UInt64.self, forKey: .ownSessionStart) ?? 0
        replayFloors = try c.decodeIfPresent([String: UInt64].self, forKey: .replayFloors) ?? [:]
    }

    static func load(path: String) -> SyncPersistentState {
        guard let data = FileManager.default.contents(atPath: path),
              let state = try? JSONDecoder().decode(SyncPersistentState.self, from: data) else { return SyncPersistentState() }
        return state
    }

    func save(path: String) throws {
        try AtomicFile.write(Array(try JSONEncoder().encode(self)), to: path, mode: 0o600)
    }
}
