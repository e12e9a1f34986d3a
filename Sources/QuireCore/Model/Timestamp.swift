/// A point in time in whole seconds since the Unix epoch. Leaves hash dates
/// at second granularity because a fractional timestamp that round-trips
/// through another device can come back a hair off and would diverge the
/// digest forever; storing whole seconds means nothing unhashed can drift.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let seconds: Int64

    public init(seconds: Int64) { self.seconds = seconds }

    /// Truncates toward negative infinity, so 1.9 s and 1.1 s are the same second.
    public init(secondsSinceEpoch value: Double) {
        self.seconds = Int64(value.rounded(.down))
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.seconds < rhs.seconds }
    public var description: String { String(seconds) }
}

/// The source of "now". Injected so a simulator can drive time.
public protocol Clock: Sendable {
    func now() -> Timestamp
    /// Monotonic milliseconds, for timers and debounces (never hashed).
    func monotonicMilliseconds() -> UInt64
}

/// The source of randomness for keys and nonces. Injected for the simulator.
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}
