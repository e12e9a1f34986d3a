import CFuse3
import Glibc
import Synchronization

/// Why a session could not start or ended badly.
public enum FuseSessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// libfuse rejected the arguments (an unknown `-o` option, say); it has
    /// printed the reason on stderr.
    case invalidOptions([String])
    /// Mounting failed: the mountpoint is missing, not a directory, a stale
    /// mount (see `FuseMounts.isStale`), or mounting is not permitted.
    case cannotMount(String)
    /// `run()` was called twice, or after the session ended.
    case notRunnable
    /// The request loop stopped on an error.
    case loopFailed(FuseError)

    public var description: String {
        switch self {
        case .invalidOptions(let arguments):
            return "libfuse rejected the mount options \(arguments.joined(separator: " ")) (see stderr)"
        case .cannotMount(let mountpoint):
            return "cannot mount at \(mountpoint): check it is an empty directory and not a stale mount (fusermount3 -u -z)"
        case .notRunnable:
            return "the FUSE session already ran or was stopped"
        case .loopFailed(let error):
            return "the FUSE request loop failed: \(error)"
        }
    }
}

/// One mounted filesystem: created (and mounted) by `init`, served by `run()`
/// on the calling thread until unmounted or stopped.
///
///     let session = try FuseSession(fileSystem: fs, mountpoint: "/mnt/quire")
///     try session.run()            // blocks; `session.stop()` from elsewhere ends it
///
/// Every method may be called from any thread.
public final class FuseSession: Sendable {
    public struct Options: Sendable {
        /// First column of /proc/mounts (`fsname=`).
        public var fileSystemName: String = "quire"
        /// The type shows as `fuse.<subtype>` in /proc/mounts (`subtype=`).
        public var subtype: String? = "quire"
        /// Let the kernel check permission bits against the attributes
        /// (`default_permissions`). Off, it checks none: it asks `access`
        /// for access(2) and chdir only, and the handlers refuse the rest.
        public var checksPermissions = true
        /// Let other users in (`allow_other`); non-root needs user_allow_other
        /// in /etc/fuse.conf.
        public var allowsOtherUsers = false
        /// Mount read-only (`ro`).
        public var isReadOnly = false
        /// libfuse prints every request on stderr (`debug`).
        public var logsRequests = false
        /// More `-o` options, passed through as written (e.g. "max_read=65536").
        public var extraOptions: [String] = []
        /// Upper bound of libfuse's worker threads.
        public var maximumThreads = 10
        /// Idle workers kept alive; nil keeps libfuse's default.
        public var maximumIdleThreads: Int?
        /// Serve readdirplus (`FuseFileSystem.readDirectoryPlus`) so `ls -l`
        /// needs no lookup per entry. Off: the kernel only sends readdir.
        public var usesReadDirectoryPlus = false
        /// Let SIGINT, SIGTERM and SIGHUP end `run()` (libfuse's handlers,
        /// process-wide, one session at a time). They only set a flag that
        /// the loop sees when the signal lands on the thread in `run()` — true
        /// for the main thread, since libfuse's workers block those signals.
        public var installsSignalHandlers = false
        /// Told about every error that was not a `FuseError` (replied as EIO).
        public var reportUnexpectedError: (@Sendable (_ operation: String, _ error: any Error) -> Void)?

        public init() {}

        /// The argument vector handed to libfuse (program name first).
        public var arguments: [String] {
            var options = ["fsname=\(fileSystemName)"]
            if let subtype { options.append("subtype=\(subtype)") }
            if checksPermissions { options.append("default_permissions") }
            if allowsOtherUsers { options.append("allow_other") }
            if isReadOnly { options.append("ro") }
            if logsRequests { options.append("debug") }
            options += extraOptions
            // fuse_opt splits on commas and honours backslash escapes.
            let escaped = options.map { option in
                option.map { $0 == "\\" || $0 == "," ? "\\\($0)" : String($0) }.joined()
            }
            return ["quire", "-o", escaped.joined(separator: ",")]
        }
    }

    /// How `run()` ended.
    public enum Ending: Hashable, Sendable {
        /// The mount went away (`fusermount3 -u`, `umount`, `stop()`).
        case unmounted
        /// A signal handler installed by `installsSignalHandlers` ended it.
        case signal(Int32)
    }

    public let mountpoint: String
    public let options: Options
    private let state: Mutex<State>

    private enum Phase { case mounted, running, stopping, finished }

    /// A fuse_session pointer; only touched under `state`'s lock.
    private struct Handle: @unchecked Sendable {
        let session: OpaquePointer
        var arguments: fuse_args
        let core: Unmanaged<SessionCore>
    }

    private struct State {
        var phase: Phase
        var handle: Handle?
        /// `stop()` already detached the mount, so teardown must not unmount
        /// again (the path may be free, or someone else's mount, by then).
        var isDetached = false
    }

    /// Creates the session and mounts it, so mount errors surface here and not
    /// inside `run()`. The kernel sends requests only once `run()` serves them.
    public init(fileSystem: any FuseFileSystem, mountpoint: String, options: Options = Options()) throws(FuseSessionError) {
        self.mountpoint = FuseMounts.absolutePath(mountpoint)
        self.options = options
        let arguments = options.arguments
        var cArguments = fuse_args(argc: 0, argv: nil, allocated: 0)
        for argument in arguments { _ = fuse_opt_add_arg(&cArguments, argument) }
        let core = Unmanaged.passRetained(
            SessionCore(fileSystem: fileSystem, reportUnexpectedError: options.reportUnexpectedError))
        var operations = makeOperations(usesReadDirectoryPlus: options.usesReadDirectoryPlus)
        guard let session = fuse_session_new(
            &cArguments, &operations, MemoryLayout<fuse_lowlevel_ops>.size, core.toOpaque())
        else {
            fuse_opt_free_args(&cArguments)
            core.release()
            throw .invalidOptions(arguments)
        }
        guard fuse_session_mount(session, self.mountpoint) == 0 else {
            fuse_session_destroy(session)
            fuse_opt_free_args(&cArguments)
            core.release()
            throw .cannotMount(self.mountpoint)
        }
        state = Mutex(State(phase: .mounted, handle: Handle(session: session, arguments: cArguments, core: core)))
    }

    deinit {
        let (handle, isDetached) = state.withLock { state in
            let handle = state.handle
            state.handle = nil
            return (handle, state.isDetached)
        }
        if let handle { Self.tearDown(handle, unmounting: !isDetached) }
    }

    /// Serves requests on libfuse's worker threads until the filesystem is
    /// unmounted or `stop()` is called; then unmounts (if still mounted) and
    /// calls `destroy`. Blocks the calling thread. Call once.
    @discardableResult
    public func run() throws(FuseSessionError) -> Ending {
        let handle = state.withLock { state -> Handle? in
            guard state.phase == .mounted || state.phase == .stopping, state.handle != nil else { return nil }
            if state.phase == .mounted { state.phase = .running }
            return state.handle
        }
        guard let handle else { throw .notRunnable }

        if options.installsSignalHandlers { _ = fuse_set_signal_handlers(handle.session) }
        let configuration = fuse_loop_cfg_create()
        fuse_loop_cfg_set_max_threads(configuration, UInt32(max(1, options.maximumThreads)))
        if let idle = options.maximumIdleThreads { fuse_loop_cfg_set_idle_threads(configuration, UInt32(max(0, idle))) }
        let result = fuse_session_loop_mt(handle.session, configuration)
        fuse_loop_cfg_destroy(configuration)
        if options.installsSignalHandlers { fuse_remove_signal_handlers(handle.session) }

        // Take the handle out under the lock, tear down outside it: `destroy`
        // runs user code, which may call back into this session.
        let (owned, isDetached) = state.withLock { state -> (Handle?, Bool) in
            state.phase = .finished
            let owned = state.handle
            state.handle = nil
            return (owned, state.isDetached)
        }
        if let owned { Self.tearDown(owned, unmounting: !isDetached) }

        if result < 0 { throw .loopFailed(FuseError(-result)) }
        return result > 0 ? .signal(result) : .unmounted
    }

    /// Ends `run()` from any thread: marks the session exited and lazily
    /// unmounts the mountpoint, which makes the kernel end the connection once
    /// no file in the mount is open any more. Safe to call more than once.
    ///
    /// Not safe from a signal handler (it may spawn fusermount3); use
    /// `Options.installsSignalHandlers` for signals.
    public func stop() {
        // Unmount ourselves rather than via fuse_session_unmount, which would
        // close the /dev/fuse descriptor under the workers' blocked reads.
        // The lock is held so teardown cannot race the unmount.
        state.withLock { state in
            guard let handle = state.handle, state.phase == .mounted || state.phase == .running else { return }
            state.phase = .stopping
            fuse_session_exit(handle.session)
            state.isDetached = (try? FuseMounts.unmountLazily(mountpoint)) != nil
        }
    }

    /// True between `init` and the end of teardown.
    public var isMounted: Bool { state.withLock { $0.handle != nil } }

    // MARK: Cache invalidation
    //
    // For changes made outside the mount (sync, another process writing the
    // store). Call from any thread, but never from inside a request handler
    // for a related inode (lookup/create/mkdir/unlink/rename/... in `parent`,
    // setattr/readdir/... of the inode) or while holding a lock such a handler
    // needs: the kernel waits for that request while the request waits for us.
    // A plain background thread or queue is always safe.

    /// Drops the kernel's cached `parent/name` entry (positive or negative)
    /// and the parent's attributes, so the next access looks the name up.
    /// Returns quietly if the kernel has nothing cached.
    public func invalidateEntry(parent: FuseInode, name: String) throws(FuseError) {
        try notify { session in
            name.withCString { fuse_lowlevel_notify_inval_entry(session, parent.rawValue, $0, name.utf8.count) }
        }
    }

    /// Like `invalidateEntry`, and also tells inotify watchers that `child`
    /// was deleted when the cached entry still points at it.
    public func notifyDelete(parent: FuseInode, child: FuseInode, name: String) throws(FuseError) {
        try notify { session in
            name.withCString {
                fuse_lowlevel_notify_delete(session, parent.rawValue, child.rawValue, $0, name.utf8.count)
            }
        }
    }

    /// Drops cached attributes of `inode` and cached data in
    /// `offset ..< offset + length` (length 0: to the end of the file).
    /// A negative offset drops attributes only. Returns quietly if the kernel
    /// has nothing cached for the inode.
    public func invalidateInode(_ inode: FuseInode, offset: Int64 = 0, length: Int64 = 0) throws(FuseError) {
        try notify { session in
            fuse_lowlevel_notify_inval_inode(session, inode.rawValue, off_t(offset), off_t(length))
        }
    }

    /// Whether the kernel holds a reference to `inode` (an entry a reply
    /// handed it, not yet forgotten): only then can it have the inode's
    /// names cached, or an inotify watch on it. The root while the session
    /// serves; nothing once it stopped.
    public func kernelHolds(_ inode: FuseInode) -> Bool {
        state.withLock { state in
            guard let handle = state.handle, state.phase == .running else { return false }
            return inode == .root || handle.core.takeUnretainedValue().lookups.count(of: inode.rawValue) > 0
        }
    }

    private func notify(_ body: (OpaquePointer) -> Int32) throws(FuseError) {
        let result = state.withLock { state -> Int32 in
            guard let handle = state.handle, state.phase == .running || state.phase == .mounted else { return -ENOTCONN }
            // Before INIT nothing can be cached, so there is nothing to drop.
            guard handle.core.takeUnretainedValue().isInitialized.load(ordering: .acquiring) else { return 0 }
            return body(handle.session)
        }
        // ENOENT: the kernel does not know the inode, so nothing is cached.
        if result < 0 && result != -ENOENT { throw FuseError(-result) }
    }

    private static func tearDown(_ handle: Handle, unmounting: Bool) {
        var handle = handle
        // fuse_session_unmount unmounts unless the kernel already dropped the
        // connection; fuse_session_destroy closes /dev/fuse and calls
        // `destroy` on the filesystem if `initialize` had run.
        if unmounting { fuse_session_unmount(handle.session) }
        fuse_session_destroy(handle.session)
        fuse_opt_free_args(&handle.arguments)
        handle.core.release()
    }
}
