/// What the simulated network can do to a frame. Each injected fault is
/// counted by kind, so a soak can say what it actually exercised.
public enum FaultKind: String, CaseIterable, Sendable, Codable {
    /// The frame is lost.
    case drop
    /// A second copy arrives too.
    case duplicate
    /// It overtakes frames sent before it.
    case reorder
    /// It arrives 15 to 90 s late: longer than the 15 s heartbeat and the
    /// barrier timer, so a round can end while its frames are still on the way.
    case delay
    /// It is lost because sender and receiver are on different sides of a partition.
    case partition
    /// One to three of its bytes are flipped on the way.
    case corrupt
}

/// How often each fault strikes, per frame. A seed draws its own rates, so
/// some histories run on a clean network and some on a terrible one.
public struct FaultRates: Sendable, Equatable, CustomStringConvertible {
    public var drop = 0.0
    public var duplicate = 0.0
    public var reorder = 0.0
    public var delay = 0.0
    public var corrupt = 0.0
    /// Simulated milliseconds a delayed frame is held.
    public var delayRangeMs: ClosedRange<UInt64> = 15_001...90_000

    public init() {}

    public static let none = FaultRates()

    public var isClean: Bool { drop == 0 && duplicate == 0 && reorder == 0 && delay == 0 && corrupt == 0 }

    public var description: String {
        func pct(_ p: Double) -> String { "\(Int((p * 1000).rounded()) / 10).\(Int((p * 1000).rounded()) % 10)%" }
        return "drop \(pct(drop)), duplicate \(pct(duplicate)), reorder \(pct(reorder)), delay \(pct(delay)), corrupt \(pct(corrupt))"
    }
}

/// Faults injected so far, by kind.
public struct FaultCounts: Sendable, Equatable, Codable {
    public var counts: [String: Int] = [:]

    public init() {}

    public subscript(kind: FaultKind) -> Int {
        get { counts[kind.rawValue] ?? 0 }
        set { counts[kind.rawValue] = newValue }
    }

    public mutating func add(_ other: FaultCounts) {
        for (k, v) in other.counts { counts[k, default: 0] += v }
    }

    public var total: Int { counts.values.reduce(0, +) }
}
