import Foundation

/// What many seeds found together: what `tools/simulate` prints and CI keeps.
public struct SoakReport: Sendable, Codable {
    public struct Failure: Sendable, Codable {
        public var seed: UInt64
        public var invariants: [String]
        public var replay: String
        public var violations: [Violation]
        public var traceHash: String
    }

    public var firstSeed: UInt64 = 0
    /// The highest seed run (seeds between may be missing when a run with
    /// several workers was cut short by time).
    public var lastSeed: UInt64?
    public var seedsRun = 0
    public var seedsPassed = 0
    public var wallSeconds = 0.0
    public var simulatedHours = 0.0
    public var deviceHours = 0.0
    public var writes = 0
    public var stepsSkipped = 0
    public var skips: [String: Int] = [:]
    public var faults = FaultCounts()
    public var checks = InvariantTally()
    public var failures: [Failure] = []

    public init(firstSeed: UInt64) { self.firstSeed = firstSeed }

    public mutating func add(_ result: SimulationResult) {
        seedsRun += 1
        lastSeed = max(lastSeed ?? result.seed, result.seed)
        if result.passed { seedsPassed += 1 }
        simulatedHours += Double(result.simulatedMs) / 3_600_000
        deviceHours += result.deviceHours
        writes += result.writes
        stepsSkipped += result.skippedSteps
        for (k, v) in result.skips { skips[k, default: 0] += v }
        faults.add(result.faults)
        checks.add(result.tally)
        if !result.passed {
            failures.append(Failure(seed: result.seed, invariants: result.failedInvariants.map(\.description),
                                    replay: result.replayCommand, violations: result.violations, traceHash: result.traceHash))
        }
    }

    public mutating func add(_ other: SoakReport) {
        seedsRun += other.seedsRun
        if let last = other.lastSeed { lastSeed = max(lastSeed ?? last, last) }
        seedsPassed += other.seedsPassed
        simulatedHours += other.simulatedHours
        deviceHours += other.deviceHours
        writes += other.writes
        stepsSkipped += other.stepsSkipped
        for (k, v) in other.skips { skips[k, default: 0] += v }
        faults.add(other.faults)
        checks.add(other.checks)
        failures += other.failures
        failures.sort { $0.seed < $1.seed }
    }

    public var seedsPerMinute: Double { wallSeconds > 0 ? Double(seedsRun) * 60 / wallSeconds : 0 }

    /// The summary in words.
    public func render(failuresShown: Int = 5) -> String {
        var out: [String] = []
        out.append("seeds run: \(seedsRun) (from \(firstSeed)\(lastSeed.map { " to \($0)" } ?? "")), passed \(seedsPassed), failed \(seedsRun - seedsPassed)"
                   + String(format: " in %.1f s (%.0f seeds/minute)", wallSeconds, seedsPerMinute))
        out.append(String(format: "simulated: %.1f device-hours (%.1f h of fleet time), %d writes, %d steps skipped",
                          deviceHours, simulatedHours, writes, stepsSkipped)
                   + (skips.isEmpty ? "" : " (" + skips.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"))
        out.append("faults injected: " + FaultKind.allCases.map { "\($0.rawValue) \(faults[$0])" }.joined(separator: ", "))
        out.append("invariant checks passed: " + Invariant.allCases.map { "\($0) \(checks.passed[$0.description] ?? 0)" }.joined(separator: ", "))
        if !failures.isEmpty {
            out.append("invariant checks failed: " + Invariant.allCases.compactMap { i in checks.failed[i.description].map { "\(i) \($0)" } }.joined(separator: ", "))
            out.append("failing seeds: " + failures.map { "\($0.seed) [\($0.invariants.joined(separator: ", "))]" }.joined(separator: "; "))
            for failure in failures.prefix(failuresShown) {
                out.append("")
                out.append("seed \(failure.seed):")
                for v in failure.violations.prefix(4) { out.append(v.description) }
                out.append("  replay: \(failure.replay)")
            }
        }
        return out.joined(separator: "\n")
    }
}
