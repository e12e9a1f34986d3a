/// Cuts a failing history down to a short one that still fails: drops
/// chunks of steps, then single steps (delta debugging, ddmin), keeping a
/// cut whenever the run still breaks the invariant the full history broke
/// first. Steps resolve their targets when they run, so a cut history still
/// means something; the network is reseeded per step, so the steps kept
/// see the faults they saw before as far as the frames allow.
public struct Shrinker {
    public let seed: UInt64
    public let options: WorkloadOptions
    public let scratch: String
    /// At most this many runs.
    public var budget = 400
    public var progress: (String) -> Void = { _ in }

    public init(seed: UInt64, options: WorkloadOptions, scratch: String = Simulation.defaultScratch) {
        self.seed = seed
        self.options = options
        self.scratch = scratch
    }

    /// The shortest failing run found (the original if nothing could be cut,
    /// nil if the seed does not fail at all).
    public func shrink(from original: SimulationResult? = nil) -> SimulationResult? {
        let first = original ?? Simulation(seed: seed, options: options, scratch: scratch).run()
        guard let target = first.violations.first?.invariant else { return nil }
        var best = first
        var kept = Array(0..<Simulation(seed: seed, options: options, scratch: scratch).plan.steps.count)
        var runs = 0
        func stillFails(_ steps: [Int]) -> SimulationResult? {
            runs += 1
            let result = Simulation(seed: seed, options: options, keptSteps: Set(steps), scratch: scratch).run()
            return result.violations.contains { $0.invariant == target } ? result : nil
        }
        var chunk = max(kept.count / 2, 1)
        while runs < budget {
            var cutSomething = false
            var start = 0
            while start < kept.count && runs < budget {
                let end = min(start + chunk, kept.count)
                let candidate = Array(kept[..<start] + kept[end...])
                if let result = stillFails(candidate) {
                    kept = candidate
                    best = result
                    cutSomething = true
                    progress("\(kept.count) steps still break \(target)")
                } else {
                    start = end
                }
            }
            if !cutSomething {
                if chunk == 1 { break }
                chunk = max(chunk / 2, 1)
            }
        }
        progress("shrunk to \(kept.count) steps in \(runs) runs")
        return best
    }
}
