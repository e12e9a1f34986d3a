import Foundation
import QuireCore

/// The fleet's one clock, moved only by the simulator, in milliseconds.
/// Every device reads it: wall time (whole seconds) for stamps, monotonic
/// milliseconds for timers. It starts far from zero and never goes back.
public final class SimClock: Clock, @unchecked Sendable {
    private let lock = NSLock()
    private var ms: UInt64

    public init(startSeconds: UInt64 = 1_800_000_000) { ms = startSeconds * 1000 }

    public func now() -> Timestamp {
        lock.lock(); defer { lock.unlock() }
        return Timestamp(seconds: Int64(ms / 1000))
    }

    public func monotonicMilliseconds() -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        return ms
    }

    public func advance(ms delta: UInt64) {
        lock.lock(); ms += delta; lock.unlock()
    }
}

/// One device's view of the fleet clock: its wall clock is off by an
/// offset (set at start, and stepped now and then, as NTP does), its
/// monotonic clock is the fleet's. Stamps, session starts and "last seen"
/// come from the wall clock, so skew reaches every place that compares them.
public final class DeviceClock: Clock, @unchecked Sendable {
    private let lock = NSLock()
    private let fleet: SimClock
    private var offsetMs: Int64

    public init(fleet: SimClock, offsetMs: Int64) {
        self.fleet = fleet
        self.offsetMs = offsetMs
    }

    public var offset: Int64 { lock.lock(); defer { lock.unlock() }; return offsetMs }

    /// Steps the wall clock (forward or back) by `deltaMs`.
    public func step(by deltaMs: Int64) {
        lock.lock(); offsetMs += deltaMs; lock.unlock()
    }

    public func now() -> Timestamp {
        let wall = Int64(fleet.monotonicMilliseconds()) + offset
        return Timestamp(seconds: wall >= 0 ? wall / 1000 : (wall - 999) / 1000)
    }

    public func monotonicMilliseconds() -> UInt64 { fleet.monotonicMilliseconds() }
}
