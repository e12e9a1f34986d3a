import Foundation
import QuireCore
import QuireRelay
import QuireStore
import QuireSync

/// The anchor check a command runs before it reads or edits the replica,
/// not only a starting sync: right after `quire restore` (or any put-back
/// copy) the replica still holds rows the fleet deleted and collected, and
/// `ls` would list them, `put` would edit one, and that edit would count
/// as this device's unshared write at the next recovery, bringing the note
/// back on every device. Recovery follows the sync's own rules
/// (`SyncEngine.checkAnchor`): what no other device saw stays.
///
/// It costs one small read of the folder's anchor headers (no key) unless
/// this device is behind one of them; then it takes the sync lock and runs
/// the engine's check with no relay. A device whose sync runs is left to
/// that sync, which checks at its start and while it waits.
public enum AnchorCatchUp {
    /// What the last check that went further than the headers found, for
    /// `quire status` (`<home>/anchor-check.json`).
    public struct Record: Codable, Equatable, Sendable {
        /// Unix seconds.
        public var at: Int64
        public var fromGeneration: UInt64
        public var toGeneration: UInt64
        /// What a recovery did, in words (nil: none ran).
        public var recovered: String?
        /// Why this device is still behind the fleet, in words.
        public var behind: String?
        /// The anchor files as this check saw them (`headerState`): while
        /// they and the device are unchanged, a check that left the device
        /// behind would find the same, so the next command does not run it
        /// again (nil in records of an older quire: checked again).
        public var anchorHeaders: String?
    }

    public static func recordPath(in home: DeviceHome) -> String { home.path + "/anchor-check.json" }

    public static func load(from home: DeviceHome) -> Record? {
        guard let data = FileManager.default.contents(atPath: recordPath(in: home)) else { return nil }
        return try? JSONDecoder().decode(Record.self, from: data)
    }

    /// Runs the check if this device is behind an anchor header in its
    /// cloud folder (`holdingLock`: the caller, `quire restore`, holds the
    /// sync lock already). Returns the record written, nil when nothing
    /// was checked. Never throws: a command still runs when the folder
    /// cannot be read, and the sync says why later.
    @discardableResult
    public static func run(home: DeviceHome, store: ReplicaStore, identity: Identity, holdingLock: Bool = false,
                           trigger: String = "before a command used the replica") -> Record? {
        CloudIO.waitingAtMost(seconds: folderWaitSeconds) {
            check(home: home, store: store, identity: identity, holdingLock: holdingLock, trigger: trigger)
        }
    }

    /// How long a command waits for a folder that does not answer before
    /// it goes on unchecked (the sync, when it starts, says why).
    static let folderWaitSeconds = 3

    private static func check(home: DeviceHome, store: ReplicaStore, identity: Identity, holdingLock: Bool, trigger: String) -> Record? {
        guard let prefs = try? home.prefs.load(), let cloudPath = prefs.cloud else { return nil }
        // A replica put back alone is behind its prefs: the lower one counts.
        let local = min(prefs.generation, ((try? store.replicaGeneration()) ?? nil) ?? prefs.generation)
        let folder = CloudFolder(path: cloudPath, accountID: identity.userIDHash)
        let candidates = (try? folder.candidates()) ?? []
        let highest = candidates.map(\.header.generation).max() ?? 0
        guard highest > local else {
            // No longer behind: a wait said before is over.
            if load(from: home)?.behind != nil { unlink(recordPath(in: home)) }
            return nil
        }
        // An anchor this device could not recover from (forged, no commit
        // record) stays so until a file of it changes: the full check, up to
        // a second each, is not run again; the device still says it is behind.
        let headers = headerState(candidates)
        if let last = load(from: home), last.behind != nil, last.anchorHeaders == headers,
           last.fromGeneration == prefs.generation, last.toGeneration == prefs.generation {
            return last
        }
        var lock: DeviceLock?
        if !holdingLock {
            // A running sync (a mount, 'quire sync') does this itself.
            // Brief: a sync or mount starting meanwhile waits for it, not fails.
            guard let held = try? DeviceLock.acquire(path: home.syncLockPath, brief: true) else { return nil }
            lock = held
        }
        defer { lock?.release() }
        let log = LogFile(path: home.logPath)
        do {
            if let lowered = try store.settleGeneration(with: home.prefs) {
                log.write("anchor check: the replica has reached generation \(lowered.to) only, where this device had reached \(lowered.from): "
                          + "it was put back from an older copy")
            }
            let settled = try home.prefs.load()
            // No frame leaves: the check only reads the folder and the replica.
            let relay = MemoryRelay()
            defer { relay.close() }
            let deps = try SyncService.dependencies(home: home, store: store, identity: identity, prefs: settled, relay: relay,
                                                    relayDescription: "none (anchor check)",
                                                    log: { line in log.write("anchor check: " + line) })
            let result = SyncEngine(deps).checkAnchorBeforeUse(trigger: trigger)
            let after = (try? home.prefs.load().generation) ?? settled.generation
            let record = Record(at: SystemClock().now().seconds, fromGeneration: settled.generation, toGeneration: after,
                                recovered: result.recovered, behind: result.behind, anchorHeaders: headers)
            try AtomicFile.write(Array(try JSONEncoder().encode(record)), to: recordPath(in: home), mode: 0o600)
            return record
        } catch {
            log.write("anchor check: could not run: \(error)")
            return nil
        }
    }

    /// The anchor files of `candidates` as they are: name, header, size and
    /// modification time, so a rewritten anchor counts as changed even under
    /// the same header.
    static func headerState(_ candidates: [CloudFolder.Candidate]) -> String {
        candidates.sorted { $0.path < $1.path }.map { candidate in
            var st = stat()
            let file = stat(candidate.path, &st) == 0 ? "\(st.st_size)@\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)" : "gone"
            return "\(candidate.path)|\(Hex.encode(candidate.header.encoded()))|\(file)"
        }.joined(separator: "\n")
    }

    /// The record, if it still speaks of this device as it is (a later
    /// restore or recovery moved the generation: then it does not).
    public static func current(home: DeviceHome, generation: UInt64) -> Record? {
        guard let record = load(from: home), record.toGeneration == generation else { return nil }
        return record
    }
}
