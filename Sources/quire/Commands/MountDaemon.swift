import Foundation
import QuireCore
import QuireCrypto
import QuireFS
import QuireFuse
import QuireStore

/// The process that serves a mount: started in the foreground (`-f`), or
/// re-executed detached by `quire mount` (fork is unsafe once a Swift
/// process may have threads; a fresh process started with posix_spawn is
/// not), in a new session, with its output in the device's log.
enum MountDaemon {
    /// Set in the detached child: the pipe on which it reports "ok" or why
    /// it failed, so the parent's exit status tells the truth.
    static let notifyVariable = "QUIRE_MOUNT_NOTIFY_FD"

    static var isDaemonChild: Bool { ProcessInfo.processInfo.environment[notifyVariable] != nil }

    // MARK: Background start

    static func startInBackground(mountpoint: String, home: DeviceHome) throws {
        guard home.exists else { throw CommandFailure("no quire device at \(home.path); run 'quire init' (or pass --home)") }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw CommandFailure("cannot create a pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let arguments = [executable] + Array(CommandLine.arguments.dropFirst())
        var environment = ProcessInfo.processInfo.environment
        // The pipe becomes fd 3 in the child and every other descriptor is
        // closed: an inherited pipe (a caller's captured stdout) would keep
        // the caller waiting for an end of file until the daemon exits.
        environment[notifyVariable] = "3"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, home.logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 3)
        LibCExtras.closeFrom(&actions, 4)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(ends[1])
        defer { close(ends[0]) }
        guard spawned == 0 else { throw CommandFailure("cannot start the mount daemon: \(String(cString: strerror(spawned)))") }

        // Read the child's report until it closes the pipe.
        var report: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            report += chunk[..<count]
        }
        var mounted = false
        var failure: String? = nil
        for line in String(decoding: report, as: UTF8.self).split(separator: "\n") {
            if line == "ok" { mounted = true }
            else if line.hasPrefix("note: ") { Output.error(String(line.dropFirst(6))) }
            else if line.hasPrefix("error: ") { failure = String(line.dropFirst(7)) }
        }
        if let failure { throw CommandFailure(failure) }
        guard mounted else {
            throw CommandFailure("the mount daemon exited before mounting \(mountpoint); see \(home.logPath)")
        }
    }

    // MARK: Serving

    static func run(mountpoint: String, options: MountOptions, invocation: Invocation) throws {
        let notifier = Notifier()
        if isDaemonChild { _ = setsid() }   // leave the caller's session and terminal
        do {
            try serve(mountpoint: mountpoint, options: options, invocation: invocation, notifier: notifier)
        } catch let failure as CommandFailure {
            notifier.send("error: " + failure.message)
            throw failure
        } catch let failure as StoreError {
            notifier.send("error: " + failure.description)
            throw failure
        } catch {
            notifier.send("error: \(error)")
            throw error
        }
    }

    private static func serve(mountpoint: String, options: MountOptions, invocation: Invocation, notifier: Notifier) throws {
        let home = invocation.home
        try prepare(mountpoint, home: home, notifier: notifier)
        let (identity, store) = try invocation.open()
        let log = MountLog(path: home.logPath)
        let prefs = try? home.prefs.load()
        let configuration = QuireFileSystem.Configuration(
            scratchPath: home.scratchPath, mountpoint: mountpoint, log: log,
            status: { mount in MountStatusWords.make(home: home, identity: identity, store: store, mount: mount) },
            digest: { try MountStatusWords.digestText(home: home, store: store) },
            // Through this daemon's own engine, once its sync service runs.
            recall: { key, contentHash, timeout in
                try OffloadRuntime.shared.recall(key: key, contentHash: contentHash, timeout: timeout)
            },
            recallTimeout: options.recallTimeout ?? prefs?.recallTimeoutSeconds ?? 10)
        let fileSystem = try QuireFileSystem(store: store, configuration: configuration)
        fileSystem.preloadListings()

        var sessionOptions = FuseSession.Options()
        sessionOptions.fileSystemName = options.fileSystemName ?? home.path
        sessionOptions.subtype = "quire"
        sessionOptions.allowsOtherUsers = options.allowsOtherUsers
        sessionOptions.isReadOnly = options.isReadOnly
        sessionOptions.logsRequests = options.isDebug
        sessionOptions.extraOptions = options.passedThrough
        sessionOptions.usesReadDirectoryPlus = true
        sessionOptions.installsSignalHandlers = true
        sessionOptions.reportUnexpectedError = { operation, error in log.problem("\(operation) failed: \(error)") }
        let session: FuseSession
        do {
            session = try FuseSession(fileSystem: fileSystem, mountpoint: mountpoint, options: sessionOptions)
        } catch {
            throw CommandFailure(error.description)
        }
        let feed = ChangeFeed(fileSystem: fileSystem, session: session)
        feed.start()
        writePidFile(home: home, mountpoint: mountpoint)
        let context = MountContext(home: home, identity: identity, store: store, log: log, options: options)
        var stops: [@Sendable () -> Void] = []
        for service in MountBackgroundServices.all {
            do {
                if let stop = try service.start(context) { stops.append(stop) }
            } catch {
                log.problem("\(service.name) did not start while mounted: \(error)")
            }
        }
        // What the services changed before serving (a device put back from a
        // backup recovers from the anchor as sync starts) is in the folder
        // views before the first request: a collected row never shows.
        feed.poll()
        // Folder listings and a first rendering of .quire are made in the
        // background, not by whoever lists the folder first.
        Thread.detachNewThread { fileSystem.prepare() }
        notifier.send("ok")
        log.info("serving \(mountpoint) (pid \(getpid()))")
        let ending: FuseSession.Ending
        do { ending = try session.run() } catch { throw CommandFailure(error.description) }
        for stop in stops.reversed() { stop() }
        feed.stop()
        removePidFile(home: home, mountpoint: mountpoint)
        try? store.sync()
        if case .signal(let signal) = ending { log.info("unmounted \(mountpoint) on signal \(signal)") }
    }

    /// The mountpoint must be a directory with nothing of ours on it; a
    /// stale mount (daemon killed: "Transport endpoint is not connected")
    /// is removed and reported.
    private static func prepare(_ mountpoint: String, home: DeviceHome, notifier: Notifier) throws {
        if FuseMounts.isStale(mountpoint) {
            do { try FuseMounts.unmountLazily(mountpoint) } catch {
                throw CommandFailure("\(mountpoint) is a stale mount (its daemon is gone) and could not be removed: \(error); try 'fusermount3 -u -z \(mountpoint)'")
            }
            removePidFile(home: home, mountpoint: mountpoint)
            let note = "cleaned up a stale mount at \(mountpoint) left by a daemon that was killed; mounting again"
            MountLog(path: home.logPath).problem(note)
            notifier.note(note)
        } else if let entry = FuseMounts.entry(at: mountpoint) {
            throw CommandFailure("\(mountpoint) is already mounted (\(entry.type) from \(entry.source)); unmount it first")
        }
        var info = stat()
        guard stat(mountpoint, &info) == 0 else {
            throw CommandFailure("cannot mount at \(mountpoint): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw CommandFailure("cannot mount at \(mountpoint): not a directory") }
    }

    /// `path` as /proc/mounts shows it: absolute, the parent's symlinks
    /// resolved. The last component is not resolved: a stale mountpoint
    /// cannot be stat'ed.
    static func absolutePath(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var components = absolute.split(separator: "/").map(String.init).filter { $0 != "." }
        guard let last = components.popLast() else { return "/" }
        let parent = "/" + components.joined(separator: "/")
        let resolvedParent = realpath(parent, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? parent
        if last == ".." { return URL(fileURLWithPath: resolvedParent).deletingLastPathComponent().path }
        return (resolvedParent == "/" ? "" : resolvedParent) + "/" + last
    }

    // MARK: Pid files (so `quire unmount` can wait for the daemon)

    private static func pidFilePath(home: DeviceHome, mountpoint: String) -> String {
        let digest = SHA256.hash(Array(mountpoint.utf8))
        return home.path + "/mounts/" + Hex.encode(digest.prefix(8)) + ".pid"
    }

    private static func writePidFile(home: DeviceHome, mountpoint: String) {
        _ = mkdir(home.path + "/mounts", 0o700)
        try? "\(getpid())\n\(mountpoint)\n".write(toFile: pidFilePath(home: home, mountpoint: mountpoint), atomically: true, encoding: .utf8)
    }

    static func removePidFile(home: DeviceHome, mountpoint: String) {
        _ = unlink(pidFilePath(home: home, mountpoint: mountpoint))
    }

    /// The live daemon serving `mountpoint`, if its pid file names one.
    static func daemonProcess(home: DeviceHome, mountpoint: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: pidFilePath(home: home, mountpoint: mountpoint), encoding: .utf8),
              let first = text.split(separator: "\n").first, let pid = pid_t(first), isRunning(pid) else { return nil }
        return pid
    }

    /// Alive and not a zombie (a container's pid 1 may never reap it).
    static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    static func waitForExit(_ pid: pid_t, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if !isRunning(pid) { return true }
            usleep(20_000)
        }
        return !isRunning(pid)
    }
}

/// glibc extensions the Glibc module does not declare.
enum LibCExtras {
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+).
    static func closeFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(address, to: CloseFrom.self)(&actions, lowest)
    }
}

/// The daemon's half of the start-up pipe.
final class Notifier: @unchecked Sendable {
    private var descriptor: Int32?

    init() {
        descriptor = ProcessInfo.processInfo.environment[MountDaemon.notifyVariable].flatMap { Int32($0) }
    }

    func note(_ text: String) {
        if descriptor == nil { Output.error(text) } else { write("note: " + text) }
    }

    /// "ok" or "error: ..."; the pipe closes after either.
    func send(_ line: String) {
        write(line)
        if let descriptor { close(descriptor) }
        descriptor = nil
    }

    private func write(_ line: String) {
        guard let descriptor else { return }
        let bytes = Array((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }
}
