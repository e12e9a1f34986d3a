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
            let start: @Sendable () throws -> Daemon = {
                try Daemon.start(home: context.home, store: context.store, identity: context.identity) { context.log.info("daemon: " + $0) }
            }
            do {
                let daemon = try start()
                context.daemon.set(daemon)
                return { context.daemon.set(nil); daemon.stop() }
            } catch let held as DeviceLockHeld {
                // `quire sync` (or a joining device's first sync) runs for
                // this device now: the mount takes over when it ends, rather
                // than never syncing until it is mounted again.
                context.log.problem("sync waits for \(held.holderText), which syncs this device now; it starts here once that one stops")
                let waiter = DaemonWaiter(slot: context.daemon, log: context.log, relayWait: RelayWaitRecord(home: context.home), start: start)
                waiter.begin()
                return { waiter.stop() }
            } catch let unreachable as RelayUnreachable {
                // Mounted before the network (or Redis) is up: the folder
                // works now, and sync starts when the relay answers.
                let words = "sync waits for the relay: \(unreachable); it starts once the relay answers, and the folder works meanwhile"
                context.log.problem(words)
                context.note(words)
                // `quire status` (another process) tells the same, from a record.
                let relayWait = RelayWaitRecord(home: context.home)
                relayWait.note(unreachable)
                let waiter = DaemonWaiter(slot: context.daemon, log: context.log, relayWait: relayWait, start: start)
                waiter.begin()
                return { waiter.stop() }
            }
        },
    ]
}
