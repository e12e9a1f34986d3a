import Foundation
import QuireCore
import QuireCrypto
import QuireFS
import QuireFuse
import QuireStore
import QuireSync
import QuireDaemon

/// What a mount daemon serves: the filesystem over the device's store, its
/// change feed, and the background daemon (sync, recalls, control
/// channel). The process itself (detaching, the start-up pipe, pid files)
/// is `MountProcess`.
enum MountDaemon {
    static func run(mountpoint: String, options: MountOptions, invocation: Invocation) throws {
        let notifier = Notifier()
        if MountProcess.isDaemonChild { _ = setsid() }   // leave the caller's session and terminal
        MountProcess.returnLargeBuffersWhenFreed()
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
        try prepare(mountpoint, home: home, allowsNonEmpty: options.allowsNonEmpty, notifier: notifier)
        let (identity, store) = try invocation.open()
        let log = MountLog(path: home.logPath)
        let prefs = try? home.prefs.load()
        let daemon = DaemonSlot()
        let configuration = QuireFileSystem.Configuration(
            scratchPath: home.scratchPath, mountpoint: mountpoint, log: log,
            status: { mount in MountStatusWords.make(home: home, identity: identity, store: store, mount: mount) },
            digest: { try MountStatusWords.digestText(home: home, store: store) },
            // Through this daemon's own engine, once its sync service runs.
            recall: { key, contentHash, timeout in
                guard let running = daemon.current else {
                    throw OffloadError("cannot recall: sync is not running in this mount (mounted with -o nosync, or waiting for another process that syncs this device: use 'quire recall' meanwhile)")
                }
                return try running.recall(key: key, contentHash: contentHash, timeout: timeout)
            },
            recallTimeout: options.recallTimeout ?? prefs?.recallTimeoutSeconds ?? 10)
        let fileSystem = try QuireFileSystem(store: store, configuration: configuration)
        fileSystem.preloadListings()

        var sessionOptions = FuseSession.Options()
        sessionOptions.fileSystemName = options.fileSystemName ?? home.path
        sessionOptions.subtype = "quire"
        sessionOptions.allowsOtherUsers = options.allowsOtherUsers
        // Only with other users let in does the kernel check permission
        // bits: a mount only its owner reaches refuses what quire refuses
        // (read-only namespaces, kept texts) in its own handlers, for root
        // too, and `access` answers from the same bits. Checking them costs
        // a getattr of the folder after every create and rename.
        sessionOptions.checksPermissions = options.allowsOtherUsers
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
        MountProcess.writePidFile(home: home, mountpoint: mountpoint)
        let context = MountContext(home: home, identity: identity, store: store, log: log, options: options, daemon: daemon,
                                   note: { notifier.note($0) })
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
        MountProcess.removePidFile(home: home, mountpoint: mountpoint)
        // The WAL folded into the database file: a copy of the file alone
        // (a backup tool that skips *-wal, a WAL deleted as a temp file)
        // then holds every row. Busy (another process reading), it waits
        // for the next stop; the fsync below makes what is committed durable.
        try? store.compact()
        try? store.sync()
        if case .signal(let signal) = ending { log.info("unmounted \(mountpoint) on signal \(signal)") }
    }

    /// The mountpoint must be an empty directory with nothing of ours on it
    /// (files in it would be hidden while mounted: refused unless `-o
    /// nonempty`); a stale mount (daemon killed: "Transport endpoint is not
    /// connected") is removed and reported.
    private static func prepare(_ mountpoint: String, home: DeviceHome, allowsNonEmpty: Bool, notifier: Notifier) throws {
        if FuseMounts.isStale(mountpoint) {
            do { try FuseMounts.unmountLazily(mountpoint) } catch {
                throw CommandFailure("\(mountpoint) is a stale mount (its daemon is gone) and could not be removed: \(error); try 'fusermount3 -u -z \(mountpoint)'")
            }
            MountProcess.removePidFile(home: home, mountpoint: mountpoint)
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
        if !allowsNonEmpty {
            let entries: [String]
            do { entries = try FileManager.default.contentsOfDirectory(atPath: mountpoint) } catch {
                throw CommandFailure("cannot mount at \(mountpoint): it cannot be listed (\(error.localizedDescription))")
            }
            if let first = entries.sorted().first {
                let more = entries.count > 1 ? " and \(entries.count - 1) more" : ""
                throw CommandFailure("\(mountpoint) is not empty (it holds '\(first)'\(more)): mounted over, they would be hidden "
                                     + "until unmount; choose an empty folder, or pass -o nonempty to mount over them anyway")
            }
        }
    }

}
