import QuireDaemon

/// A service that runs while a mount is up.
struct MountBackgroundService: Sendable {
    let name: String
    /// Starts the service; returns how to stop it (nil: nothing to stop).
    let start: @Sendable (MountContext) throws -> (@Sendable () -> Void)?
}

/// Everything the mount daemon starts once the mount serves, and stops
/// (last first) after it ends. The daemon is the one service today:
/// syncing with siblings (edits made in the mount reach other devices, and
/// theirs show in the mount as they commit), recalls for reads in the
/// mount, and the control channel of 'quire offload/recall/fsck'.
enum MountBackgroundServices {
    static let all: [MountBackgroundService] = [
        MountBackgroundService(name: "sync") { context in
            guard context.options.startsSync else { return nil }
            let daemon = try Daemon.start(home: context.home, store: context.store, identity: context.identity) { context.log.info("daemon: " + $0) }
            context.daemon.set(daemon)
            return { context.daemon.set(nil); daemon.stop() }
        },
    ]
}
