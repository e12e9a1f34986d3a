import Foundation
import QuireDaemon
import QuireFS

/// Starts the mount's daemon once what held it up is gone: the process
/// holding the device's sync lock lets go (tried every `interval` seconds),
/// or the relay answers (tried at growing intervals, up to
/// `relayInterval`, as a laptop that mounts before its network is up
/// meets it). Tries until it starts, the mount ends, or the start fails
/// for another reason (logged).
final class DaemonWaiter: @unchecked Sendable {
    static let interval: Double = 1
    static let relayInterval: Double = 30
    private let slot: DaemonSlot
    private let log: MountLog
    private let start: @Sendable () throws -> Daemon
    /// What `quire status` reads while the relay does not answer.
    private let relayWait: RelayWaitRecord
    /// Signalled when the thread ends.
    private let done = DispatchSemaphore(value: 0)
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var isStopped = false
    private var running: Daemon?
    private var started = false

    init(slot: DaemonSlot, log: MountLog, relayWait: RelayWaitRecord, start: @escaping @Sendable () throws -> Daemon) {
        self.slot = slot
        self.log = log
        self.relayWait = relayWait
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
        var wait = Self.interval
        var reason: String?
        while true {
            condition.lock()
            if !isStopped { _ = condition.wait(until: Date(timeIntervalSinceNow: wait)) }
            let stopped = isStopped
            condition.unlock()
            if stopped { relayWait.clear(); return }
            let daemon: Daemon
            do {
                daemon = try start()
            } catch is DeviceLockHeld {
                // The holder's own status says how sync goes now.
                relayWait.clear()
                wait = Self.interval
                reason = "the process that held it stopped"
                continue
            } catch let unreachable as RelayUnreachable {
                relayWait.note(unreachable)
                wait = min(wait * 2, Self.relayInterval)
                reason = "the relay answers"
                continue
            } catch {
                relayWait.clear()
                log.problem("sync did not start while mounted: \(error)")
                return
            }
            relayWait.clear()
            condition.lock()
            if isStopped {
                condition.unlock()
                daemon.stop()
                return
            }
            running = daemon
            slot.set(daemon)
            condition.unlock()
            log.info("sync started: \(reason ?? "the process that held it stopped")")
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
        relayWait.clear()
        if daemon != nil { slot.set(nil) }
        daemon?.stop()
    }
}
