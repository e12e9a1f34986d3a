import Foundation
import QuireCore
import QuireRelay
import QuireStore
import QuireSync

/// Sync for one device directory, ready to run: the relay from prefs, the
/// device lock, the log file, the status snapshot. This is the one call the
/// CLI (`quire sync`) and the mount daemon use:
///
///     let sync = try SyncService.start(home: home, store: store, identity: identity)
///     ...
///     sync.stop()
///
/// Only one engine may run per device directory; a second `start` fails
/// with a clear error naming the process that holds it.
public final class SyncService: @unchecked Sendable {
    public let engine: SyncEngine
    public let relay: any Relay
    private let deviceLock: DeviceLock
    private let logFile: LogFile

    /// Starts syncing `home` in the background. `relaySpec` overrides prefs;
    /// `echo` also receives every log line (e.g. to print on stderr).
    public static func start(home: DeviceHome, store: ReplicaStore, identity: Identity, relaySpec: String? = nil,
                             configuration: SyncConfiguration = SyncConfiguration(),
                             echo: (@Sendable (String) -> Void)? = nil) throws -> SyncService {
        let lock = try DeviceLock.acquire(path: home.syncLockPath)
        do {
            let log = LogFile(path: home.logPath)
            // A replica put back alone from an older copy syncs from its own
            // generation, as a whole device put back would.
            if let lowered = try store.settleGeneration(with: home.prefs) {
                log.write("sync: the replica has reached generation \(lowered.to) only, where this device had reached \(lowered.from): "
                          + "it was put back from an older copy, and catches up from generation \(lowered.to)")
            }
            let prefs = try home.prefs.load()
            let spec = relaySpec ?? prefs.relay
            // What errors and status show: a Redis password stays in prefs.
            let shown = (try? RelaySpec(parsing: spec).description) ?? spec
            let relay: any Relay
            do { relay = try makeRelay(from: spec) } catch let error as RelayError where error.code == .unreachable {
                throw RelayUnreachable(relay: shown, reason: "\(error)")
            } catch {
                throw SyncServiceError("cannot open relay \(shown): \(error)")
            }
            var deps = try dependencies(home: home, store: store, identity: identity, prefs: prefs, relay: relay, relayDescription: shown,
                                        log: { line in log.write("sync: " + line); echo?(line) })
            deps.statusPath = SyncStatus.path(in: home)
            deps.statePath = home.syncStatePath
            deps.watchOtherProcesses = true
            var configuration = configuration
            // Drills and tests collect after a few tombstones, sooner.
            let env = ProcessInfo.processInfo.environment
            if let n = env["QUIRE_BARRIER_MIN_TOMBSTONES"].flatMap(Int.init) { configuration.barrierMinimumTombstones = n }
            if let ms = env["QUIRE_BARRIER_DEBOUNCE_MS"].flatMap(UInt64.init) { configuration.barrierDebounceMilliseconds = ms }
            if let ms = env["QUIRE_QUIET_WINDOW_MS"].flatMap(UInt64.init) { configuration.quietWindowMilliseconds = ms }
            if let ms = env["QUIRE_WEDGED_AFTER_MS"].flatMap(UInt64.init) { configuration.wedgedAfterMilliseconds = ms }
            if let s = env["QUIRE_SIBLING_AWAY_AFTER_SECONDS"].flatMap(UInt64.init) { configuration.awayAfterMilliseconds = max(s, 5) * 1000 }
            let engine = SyncEngine(deps, configuration: configuration)
            do { try engine.start() } catch let error as RelayError where error.code == .unreachable {
                relay.close()
                throw RelayUnreachable(relay: shown, reason: "\(error)")
            }
            log.write("sync: started on \(deps.relayDescription) as channel \(engine.channel)")
            return SyncService(engine: engine, relay: relay, lock: lock, log: log)
        } catch {
            lock.release()
            throw error
        }
    }

    /// What an engine of `home` is built from (the sync, and the anchor
    /// check a command runs before it uses the replica). No status or
    /// replay-state paths: only a running sync writes those.
    static func dependencies(home: DeviceHome, store: ReplicaStore, identity: Identity, prefs: Prefs, relay: any Relay,
                             relayDescription: String, log: @escaping @Sendable (String) -> Void) throws -> SyncEngine.Dependencies {
        let generation = GenerationReader(prefs: home.prefs, initial: prefs.generation)
        var deps = SyncEngine.Dependencies(
            store: store, identity: identity, relay: relay, clock: SystemClock(), random: SystemRandom(),
            generation: { generation.value() }, log: log, relayDescription: relayDescription)
        // A joining device sends its enrolment until a sibling admits it;
        // then it keeps the backup key sealed to it and drops the enrolment.
        deps.enrolment = FileManager.default.contents(atPath: home.enrolmentPath).map { Array($0) }
        let keysPath = home.keysPath, enrolmentPath = home.enrolmentPath
        deps.admitted = { key in
            _ = try identity.withBackupKey(key, savingIn: keysPath)
            unlink(enrolmentPath)
        }
        // Rotation keys: a damaged file is refused here with its name,
        // never replaced by an empty set (the log and siblings can give
        // the keys again once it is moved aside).
        deps.rotationKeys = try BackupKeyRing.load(keysPath: keysPath)
        deps.keepRotationKeys = { ring in try ring.save(keysPath: keysPath) }
        deps.cloud = prefs.cloud.map { CloudFolder(path: $0, accountID: identity.userIDHash) }
        let prefsFile = home.prefs
        deps.isAnchorEnabled = { (try? prefsFile.load().backupEnabled) ?? false }
        deps.setGeneration = { value in
            try store.recordGeneration(value)
            try prefsFile.setGeneration(value)
            generation.set(value)
        }
        return deps
    }

    private init(engine: SyncEngine, relay: any Relay, lock: DeviceLock, log: LogFile) {
        self.engine = engine
        self.relay = relay
        self.deviceLock = lock
        self.logFile = log
    }

    /// Stops the engine, closes the relay, releases the device lock.
    public func stop() {
        engine.stop()
        relay.close()
        logFile.write("sync: stopped")
        deviceLock.release()
    }
}

public struct SyncServiceError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The relay could not be reached when sync started (Redis down, or not
/// up yet on a machine that starts offline). A mount waits for it
/// (`DaemonWaiter`); `quire sync` says so and stops.
public struct RelayUnreachable: Error, CustomStringConvertible, Sendable {
    /// As shown to people (`RelaySpec.description`: no password).
    public let relay: String
    public let reason: String
    public var description: String { "cannot reach the relay \(relay): \(reason)" }
}

/// Another process runs the sync engine of this device directory.
public struct DeviceLockHeld: Error, CustomStringConvertible, Sendable {
    /// The holder's process id as it wrote it (nil: it wrote none that
    /// names a live process, even after waiting for it).
    public let holder: pid_t?
    /// "process 1234", or what is known when the pid is not.
    public var holderText: String { holder.map { "process \($0)" } ?? "another process, whose pid could not be read" }
    public var description: String { "sync is already running for this device (\(holderText)); stop it first or use that one" }
}

/// `flock` on `<home>/sync.lock`: one sync engine per device directory,
/// across processes (the daemon, the mount, `quire sync --once`).
public final class DeviceLock: @unchecked Sendable {
    private var fd: Int32

    private init(fd: Int32) { self.fd = fd }

    /// How long one that finds the lock held waits for the holder's pid.
    static let holderWaitSeconds = 1.0
    /// How long one that finds the lock held by a brief holder (a command's
    /// anchor check, `AnchorCatchUp`) waits for it to be done: a sync or a
    /// mount started meanwhile must not fail because `quire status` ran.
    static let briefHolderWaitSeconds = 15.0

    /// `brief`: held for a moment only (a command's anchor check), which
    /// another that wants the lock waits out instead of failing.
    public static func acquire(path: String, brief: Bool = false) throws -> DeviceLock {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SyncServiceError("cannot open \(path): \(String(cString: strerror(errno)))") }
        // A holder writes its pid just after it takes the lock, so one that
        // won by microseconds (two mounts started at once) has written
        // nothing yet, or the file still names the holder before it: read
        // again until it names a live process, or the lock comes free.
        let started = Date()
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = liveHolder(fd)
            let waited = Date().timeIntervalSince(started)
            let waitsOn = holder.map { $0.isBrief && waited < briefHolderWaitSeconds } ?? (waited < holderWaitSeconds)
            if !waitsOn {
                close(fd)
                throw DeviceLockHeld(holder: holder?.pid)
            }
            usleep(10_000)
        }
        _ = ftruncate(fd, 0)
        let pid = Array("\(getpid())\(brief ? " " + briefMark : "")\n".utf8)
        _ = pwrite(fd, pid, pid.count, 0)
        return DeviceLock(fd: fd)
    }

    /// Written after a brief holder's pid.
    private static let briefMark = "brief"

    /// The pid the file names, if that process lives and is not this one
    /// (which may have held the lock before, and holds it no more), and
    /// whether it holds the lock briefly.
    private static func liveHolder(_ fd: Int32) -> (pid: pid_t, isBrief: Bool)? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = pread(fd, &buffer, 31, 0)
        guard n > 0 else { return nil }
        let words = String(decoding: buffer[0..<n], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard let first = words.first, let pid = pid_t(first),
              pid > 0, pid != getpid(), kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return (pid, words.dropFirst().first == Substring(briefMark))
    }

    public func release() {
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        close(fd)
        fd = -1
    }

    deinit { release() }
}

/// Appends lines to `<home>/quire.log`.
final class LogFile: @unchecked Sendable {
    private let path: String
    private let lock = NSLock()

    init(path: String) { self.path = path }

    /// Past this size the log is moved to `quire.log.1` (replacing the one
    /// before) and started afresh: whatever writes to it, it stays bounded.
    static let rotateBytes = 4 << 20

    func write(_ line: String) {
        lock.lock(); defer { lock.unlock() }
        var st = stat()
        if stat(path, &st) == 0, Int(st.st_size) > Self.rotateBytes { rename(path, path + ".1") }
        let stamp = DateStamp.format(SystemClock().now())
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array("\(stamp) \(line)\n".utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}

/// The generation from prefs, re-read at most every two seconds (only a
/// barrier moves it, and the barrier runs in this process anyway).
final class GenerationReader: @unchecked Sendable {
    private let prefs: PrefsFile
    private let lock = NSLock()
    private var cached: UInt64
    private var readAt = Date()

    init(prefs: PrefsFile, initial: UInt64) {
        self.prefs = prefs
        self.cached = initial
    }

    /// A generation this process just recorded (a barrier commit).
    func set(_ value: UInt64) {
        lock.lock(); defer { lock.unlock() }
        cached = value
        readAt = Date()
    }

    func value() -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        if Date().timeIntervalSince(readAt) > 2, let p = try? prefs.load() {
            cached = p.generation
            readAt = Date()
        }
        return cached
    }
}
