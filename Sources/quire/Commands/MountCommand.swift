import Foundation
import QuireDaemon
import QuireCore
import QuireCrypto
import QuireFS
import QuireFuse
import QuireStore

/// `quire mount` and `quire unmount`.
enum MountCommands {
    static let mount = Command(
        name: "mount",
        summary: "show this device's notes as a folder (FUSE)",
        usage: """
            usage: quire mount DIR [-f] [-d] [-o OPTION[,OPTION...]]

            Mounts this device's replica at DIR: notebook/, plans/, contacts/,
            saga/, settings/, memory/ (read-only) and .quire/ (status, digest).
            Every change made there is an edit of the replica, synced like any
            other. Goes to the background once mounted (its messages go to the
            device's quire.log); unmount with 'quire unmount DIR' or
            'fusermount3 -u DIR'. DIR must be an empty folder (see -o nonempty).
            A stale mount left at DIR by a killed daemon is cleaned up first,
            and said so. While 'quire sync' runs for this
            device, the mount leaves syncing to it and takes over once it stops.

              -f, --foreground   stay in the foreground (Ctrl-C unmounts)
              -d, --debug        foreground, and print every FUSE request
              -o OPTIONS         comma-separated, like other FUSE filesystems:
                  allow_other        let other users in, as the permission bits
                                     allow (needs user_allow_other in
                                     /etc/fuse.conf unless root)
                  ro                 read-only mount
                  recall_timeout=S   seconds a read of an offloaded note waits
                                     for its holder (default: prefs, 10)
                  nosync             do not sync with siblings while mounted
                  nonempty           mount over a folder that holds files
                                     (hidden until unmount; refused without it)
                  fsname=NAME        first column of /proc/mounts (default: the
                                     device directory)
                  nosuid, nodev, noexec, noatime, auto_unmount, max_read=N, ...
                                     passed to the kernel / libfuse
                  defaults, noauto, user, _netdev, nofail, x-*  (fstab) ignored
            """,
        valued: ["o"],
        flags: ["f", "d", "foreground", "debug"]
    ) { args, inv in
        try args.expectPositional(1...1, "mount directory")
        var options = try MountOptions.parse(args.all("o"))
        if args.has("d") || args.has("debug") { options.isDebug = true }
        let foreground = args.has("f") || args.has("foreground") || options.isDebug
        let mountpoint = MountProcess.absolutePath(args.positional[0])
        if foreground || MountProcess.isDaemonChild {
            try MountDaemon.run(mountpoint: mountpoint, options: options, invocation: inv)
        } else {
            do {
                for note in try MountProcess.startInBackground(mountpoint: mountpoint, home: inv.home) { Output.error(note) }
            } catch {
                throw CommandFailure("\(error)")
            }
        }
    }

    static let unmount = Command(
        name: "unmount",
        summary: "unmount a folder mounted with 'quire mount'",
        usage: """
            usage: quire unmount DIR [--lazy]

            Unmounts DIR and waits until the daemon has committed everything and
            exited. Fails while files in DIR are open, unless --lazy (-z), which
            detaches now and finishes when the last file is closed. A stale
            mount (its daemon killed) is cleaned up. 'fusermount3 -u DIR' works too.
              --lazy, -z   detach even if busy
            """,
        flags: ["lazy", "z"]
    ) { args, inv in
        try args.expectPositional(1...1, "mount directory")
        let mountpoint = MountProcess.absolutePath(args.positional[0])
        let lazy = args.has("lazy") || args.has("z")
        let daemon = MountProcess.daemonProcess(home: inv.home, mountpoint: mountpoint)
        // Only a mount whose daemon is gone can be stale; asking one whose
        // daemon lives but is stuck (stopped, wedged) would hang here.
        if daemon == nil, FuseMounts.isStale(mountpoint) {
            do { try FuseMounts.unmountLazily(mountpoint) } catch {
                throw CommandFailure("\(mountpoint) is a stale mount and could not be removed: \(error)")
            }
            MountProcess.removePidFile(home: inv.home, mountpoint: mountpoint)
            Output.line("cleaned up a stale mount at \(mountpoint) (its daemon was gone)")
            return
        }
        guard let entry = FuseMounts.entry(at: mountpoint) else { throw CommandFailure("nothing is mounted at \(mountpoint)") }
        guard entry.type == "fuse.quire" else {
            throw CommandFailure("\(mountpoint) is a \(entry.type) mount, not a quire one; use umount")
        }
        // Busy for a moment is not busy: a file held open briefly (an
        // indexer, the daemon telling file watchers of a sibling's change).
        for attempt in 1... {
            do {
                try FuseMounts.unmount(mountpoint, lazily: lazy)
                break
            } catch {
                guard (error as? FuseError) == .busy else { throw CommandFailure("cannot unmount \(mountpoint): \(error)") }
                if attempt == 5 { throw CommandFailure("\(mountpoint) is busy: files in it are still open (close them, or use --lazy)") }
                usleep(100_000)
            }
        }
        // The daemon commits what is left and checkpoints before it exits.
        if let daemon, !lazy, !MountProcess.waitForExit(daemon, seconds: 30) {
            throw CommandFailure("unmounted \(mountpoint), but its daemon (pid \(daemon)) has not exited yet; see \(inv.home.logPath)")
        }
        Output.line("unmounted \(mountpoint)")
    }
}

/// What runs beside a mount while it is up. The mount daemon starts each
/// service once the mount is serving and stops them, last first, after it
/// ends. This is the one place the sync engine is started for a mount.
struct MountContext: Sendable {
    let home: DeviceHome
    let identity: Identity
    let store: ReplicaStore
    let log: MountLog
    let options: MountOptions
    /// The running daemon, once started: the mount's recalls go through it.
    let daemon: DaemonSlot
    /// A line `quire mount` prints when it returns.
    let note: @Sendable (String) -> Void
}

/// The mount's daemon, set once its services start (nil with -o nosync).
final class DaemonSlot: @unchecked Sendable {
    private let lock = NSLock()
    private var daemon: Daemon?

    func set(_ daemon: Daemon?) { lock.lock(); self.daemon = daemon; lock.unlock() }
    var current: Daemon? { lock.lock(); defer { lock.unlock() }; return daemon }
}
