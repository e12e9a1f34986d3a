import Foundation
import QuireCore
import QuireCrypto

/// The real clock. Tests and the simulator inject their own `Clock`.
public struct SystemClock: Clock {
    public init() {}
    public func now() -> Timestamp { Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970) }
    public func monotonicMilliseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}

/// libsodium's CSPRNG as a `RandomSource`.
public struct SystemRandom: RandomSource {
    public init() {}
    public func bytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }
}
