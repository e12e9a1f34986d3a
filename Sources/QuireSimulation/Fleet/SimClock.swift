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
