import CSystem
import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The mount daemon as a process: started in the foreground (`-f`), or
/// re-executed detached by `quire mount` (fork is unsafe once a Swift
/// process may have threads; a fresh process started with posix_spawn is
/// not), in a new session, with its output in the device's log; and its
/// pid file, so `quire unmount` can wait for it. What it serves is
/// assembled by the `quire` target (MountDaemon).
public enum MountProcess {
    /// Set in the detached child: the pipe on which it reports "ok" or why
    /// it failed, so the parent's exit status tells the truth.
    public static let notifyVariable = "QUIRE_MOUNT_NOTIFY_FD"

    public static var isDaemonChild: Bool { ProcessInfo.processInfo.environment[notifyVariable] != nil }

    // MARK: Background start

    /// Re-executes this command detached; returns the notes the child
    /// reported on its way to mounting, or throws why it failed.
    public static func startInBackground(mountpoint: String, home: DeviceHome) throws(DaemonError) -> [String] {
        // An interrupted restore says how to finish it, not "no device".
        do { try home.refuseInterruptedRestore() } catch { throw DaemonError("\(error)") }
        guard home.exists else { throw DaemonError("no quire device at \(home.path); run 'quire init' (or pass --home)") }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw DaemonError("cannot create a pipe: \(String(cString: strerror(errno)))") }
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
        guard spawned == 0 else { throw DaemonError("cannot start the mount daemon: \(String(cString: strerror(spawned)))") }

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
        var notes: [String] = []
        var failure: String? = nil
        for line in String(decoding: report, as: UTF8.self).split(separator: "\n") {
            if line == "ok" { mounted = true }
            else if line.hasPrefix("note: ") { notes.append(String(line.dropFirst(6))) }
            else if line.hasPrefix("error: ") { failure = String(line.dropFirst(7)) }
        }
        if let failure { throw DaemonError(failure) }
        guard mounted else {
            throw DaemonError("the mount daemon exited before mounting \(mountpoint); see \(home.logPath)")
        }
        return notes
    }

    /// `path` as /proc/mounts shows it: absolute, the parent's symlinks
    /// resolved. The last component is not resolved: a stale mountpoint
    /// cannot be stat'ed.
    public static func absolutePath(_ path: String) -> String {
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
        return home.mountsPath + "/" + Hex.encode(digest.prefix(8)) + ".pid"
    }

    public static func writePidFile(home: DeviceHome, mountpoint: String) {
        _ = mkdir(home.mountsPath, 0o700)
        try? "\(getpid())\n\(mountpoint)\n".write(toFile: pidFilePath(home: home, mountpoint: mountpoint), atomically: true, encoding: .utf8)
    }

    public static func removePidFile(home: DeviceHome, mountpoint: String) {
        _ = unlink(pidFilePath(home: home, mountpoint: mountpoint))
    }

    /// The live daemon serving `mountpoint`, if its pid file names one.
    public static func daemonProcess(home: DeviceHome, mountpoint: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: pidFilePath(home: home, mountpoint: mountpoint), encoding: .utf8),
              let first = text.split(separator: "\n").first, let pid = pid_t(first), isRunning(pid) else { return nil }
        return pid
    }

    /// Alive and not a zombie (a container's pid 1 may never reap it).
    public static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    public static func waitForExit(_ pid: pid_t, seconds: Double) -> Bool {
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

extension MountProcess {
    /// A mount holds whole files in memory while they are open (a working
    /// copy is the file's text), and glibc's malloc raises its mmap
    /// threshold after each such buffer is freed: the next ones came from
    /// the heap and stayed there, so a daemon that served many 15 MB
    /// attachments kept hundreds of megabytes it no longer used. A fixed
    /// threshold keeps buffers of 1 MiB and more as their own mappings,
    /// given back to the system when freed.
    public static func returnLargeBuffersWhenFreed() {
        _ = csystem_fix_mmap_threshold(1 << 20)
    }
}

/// The daemon's half of the start-up pipe.
public final class Notifier: @unchecked Sendable {
    private var descriptor: Int32?

    public init() {
        descriptor = ProcessInfo.processInfo.environment[MountProcess.notifyVariable].flatMap { Int32($0) }
    }

    /// Where a foreground mount prints what a daemon sends up the pipe.
    public var printer: @Sendable (String) -> Void = { try? FileHandle.standardError.write(contentsOf: Data(($0 + "\n").utf8)) }

    public func note(_ text: String) {
        if descriptor == nil { printer(text) } else { write("note: " + text) }
    }

    /// "ok" or "error: ..."; the pipe closes after either.
    public func send(_ line: String) {
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
