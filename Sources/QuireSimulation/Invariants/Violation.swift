/// The invariants of issue 11 this simulator checks. The numbers are the issue's.
public enum Invariant: Int, CaseIterable, Sendable, Codable, Comparable, CustomStringConvertible {
    /// Equal digests and byte-identical rows on every device once the fleet settled.
    case convergence = 1
    /// No key a committed barrier collected is live again (unless written again since).
    case noResurrection = 2
    /// Every value or paragraph committed and not superseded by a write
    /// that had seen it is present; nothing a delete saw is shown again.
    case noLostWrite = 3
    /// Every body a device shows as offloaded is held (verified by hash) by
    /// at least the copies that device required, and every recall returns
    /// bytes that match the note's content hash.
    case noBodyLost = 4
    /// Every device converges, or its status says why in words.
    case noSilentStuckDevice = 5
    /// Generations never move backward except through a restore, and every
    /// restore is detected (the device ends at the fleet's generation).
    case generations = 6
    /// No (actor, counter) pair is minted twice with different content.
    case oneDotOneContent = 7

    public static func < (a: Invariant, b: Invariant) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .convergence: "(1) convergence"
        case .noResurrection: "(2) no resurrection"
        case .noLostWrite: "(3) no lost write"
        case .noBodyLost: "(4) no body lost"
        case .noSilentStuckDevice: "(5) no silent stuck device"
        case .generations: "(6) generations"
        case .oneDotOneContent: "(7) one dot, one content"
        }
    }
}

/// One broken invariant, said so a person can act on it.
public struct Violation: Sendable, Codable, CustomStringConvertible {
    public let invariant: Invariant
    /// One line: what is wrong, on what.
    public let summary: String
    /// The evidence: per-device state, the writes involved.
    public let details: [String]

    public init(_ invariant: Invariant, _ summary: String, details: [String] = []) {
        self.invariant = invariant
        self.summary = summary
        self.details = details
    }

    public var description: String {
        ([" \(invariant): \(summary)"] + details.map { "     \($0)" }).joined(separator: "\n")
    }
}

/// Checks passed and failed per invariant.
public struct InvariantTally: Sendable, Codable, Equatable {
    public var passed: [String: Int] = [:]
    public var failed: [String: Int] = [:]

    public init() {}

    public mutating func pass(_ invariant: Invariant, _ n: Int = 1) { passed[invariant.description, default: 0] += n }
    public mutating func fail(_ invariant: Invariant, _ n: Int = 1) { failed[invariant.description, default: 0] += n }

    public mutating func add(_ other: InvariantTally) {
        for (k, v) in other.passed { passed[k, default: 0] += v }
        for (k, v) in other.failed { failed[k, default: 0] += v }
    }

    public var totalPassed: Int { passed.values.reduce(0, +) }
}
