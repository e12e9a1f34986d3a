import QuireSync

/// A service that runs while a mount is up.
struct MountBackgroundService: Sendable {
    let name: String
    /// Starts the service; returns how to stop it (nil: nothing to stop).
    let start: @Sendable (MountContext) throws -> (@Sendable () -> Void)?
}

/// Everything the mount daemon starts once the mount serves, and stops
/// (last first) after it ends. Syncing with siblings is the one service
/// today: edits made in the mount reach other devices, and theirs show in
/// the mount within a second (through the store's change feed).
enum MountBackgroundServices {
    static let all: [MountBackgroundService] = [
        MountBackgroundService(name: "sync") { context in
            guard context.options.startsSync else { return nil }
            let sync = try SyncService.start(home: context.home, store: context.store, identity: context.identity)
            // Recalls for reads in the mount, and 'quire offload/recall/fsck' (OffloadRuntime).
            OffloadRuntime.shared.attach(sync.engine, home: context.home, store: context.store) { context.log.info("offload: " + $0) }
            return { OffloadRuntime.shared.detach(); sync.stop() }
        },
    ]
}
