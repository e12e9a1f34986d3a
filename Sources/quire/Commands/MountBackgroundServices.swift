import Foundation
import QuireDaemon
import QuireFS

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
                context.log.problem("sync waits for process \(held.holder), which syncs this device now; it starts here once that one stops")
                let waiter = DaemonWaiter(slot: context.daemon, log: context.log, start: start)
                waiter.begin()
                return { waiter.stop() }
            }
        },
    ]
}

/// Starts the mount's daemon once the process holding the device's sync
/// lock lets go: tries again every `interval` seconds until it starts, the
/// mount ends, or the start fails for another reason (logged).
final class DaemonWaiter: @unchecked Sendable {
    static let interval: Double = 1
    private let slot: DaemonSlot
    private let log: MountLog
    private let start: @Sendable () throws -> Daemon
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var isStopped = false
    private var running: Daemon?
    private var started = false
    private let done = DispatchSemaphore(value: 0)

    init(slot: DaemonSlot, log: MountLog, start: @escaping @Sendable () throws -> Daemon) {
        self.slot = slot
        self.log = log
        self.start = start
    }

    func begin() {
        let thread = Thread { [self] in
            run()
            done.signal()
        }
        thread.name = "quire-sync-waiter"
        condition.lock()
        started = true
        condition.unlock()
        thread.start()
    }

    private func run() {
        while true {
            condition.lock()
            if !isStopped { _ = condition.wait(until: Date(timeIntervalSinceNow: Self.interval)) }
            let stopped = isStopped
            condition.unlock()
            if stopped { return }
            let daemon: Daemon
            do { daemon = try start() } catch is DeviceLockHeld { continue } catch {
                log.problem("sync did not start while mounted: \(error)")
                return
            }
            condition.lock()
            if isStopped {
                condition.unlock()
                daemon.stop()
                return
            }
            running = daemon
            slot.set(daemon)
            condition.unlock()
            log.info("sync started: the process that held it stopped")
            return
        }
    }

    /// Ends the wait (and a start under way), or stops the daemon it started.
    func stop() {
        condition.lock()
        let wasStopped = isStopped, wasStarted = started
        isStopped = true
        let daemon = running
        running = nil
        condition.broadcast()
        condition.unlock()
        guard !wasStopped else { return }
        if wasStarted { done.wait() }
        if daemon != nil { slot.set(nil) }
        daemon?.stop()
    }
}
