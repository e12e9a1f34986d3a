import Foundation

/// When the engine thread must next run with no frame and no commit to
/// wake it: the earliest timer that is due, and a coarse tick for the
/// work that keeps its own clocks (offload retries, barrier rounds, chunk
/// expiry, status). An idle engine wakes about once a second and reads
/// nothing from the store.
extension SyncEngine {
    /// While something is in flight, timers run at this granularity.
    static let busyTickMilliseconds: UInt64 = 100
    /// With nothing in flight.
    static let idleTickMilliseconds: UInt64 = 1_000

    func nextWakeMs() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        let now = clock.monotonicMilliseconds()
        var next = now + (isBusy ? Self.busyTickMilliseconds : Self.idleTickMilliseconds)
        next = min(next, lastPollMs &+ pollIntervalMs)
        if let due = advertisementDueMs() { next = min(next, due) }
        next = min(next, advertiser.nextHeartbeatMs)
        if let due = siblings.nextTimerMs { next = min(next, due) }
        if let timeout = pulls.nextTimeoutMs { next = min(next, timeout) }
        if let attempt = barrier.attemptAtMs { next = min(next, attempt) }
        if let awaited = barrier.awaitedList { next = min(next, awaited.askedAtMs + BarrierState.AwaitedList.retryMs) }
        if deps.cloud != nil { next = min(next, deviceLogDueMs) }
        // A timer already due runs now, but never in a tight loop.
        return max(next, now + 1)
    }

    var pollIntervalMs: UInt64 { min(configuration.pollMilliseconds, pollFallbackMs ?? .max) }

    /// Work whose timers run on the coarse tick rather than a deadline.
    var isBusy: Bool {
        !pulls.isEmpty || barrier.round != nil || phase == .settling || snapshotAssembly != nil
            || offloadBook.isBusy || link.isReassembling
    }

    /// When the pending change is advertised (`Advertiser.dueMs`).
    func advertisementDueMs() -> UInt64? { advertiser.dueMs(unansweredSinceMs: siblings.unansweredSinceMs) }

    /// Runs a step soon on the engine's thread (work started from another
    /// thread: an offload, a recall, a hold query).
    func wakeRunner() {
        inboxCondition.lock()
        inboxCondition.signal()
        inboxCondition.unlock()
    }
}
