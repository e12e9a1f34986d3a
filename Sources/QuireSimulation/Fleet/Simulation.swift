import Foundation
import QuireCore
import QuireStore
import QuireSync

/// What one seed's run found.
public struct SimulationResult: Sendable {
    public let seed: UInt64
    public let options: WorkloadOptions
    /// Step indices that ran (nil: every step of the seed's history).
    public let keptSteps: [Int]?
    public let stepCount: Int
    public let deviceCount: Int
    public let traceHash: String
    public let traceLines: Int
    public let violations: [Violation]
    public let tally: InvariantTally
    public let faults: FaultCounts
    public let simulatedMs: UInt64
    public let deviceHours: Double
    public let writes: Int
    /// Steps the workload did not run because a switch is off (e.g. a delete
    /// that would make a three-way edit/delete history), or had nothing to act on.
    public let skippedSteps: Int
    /// The same, by why.
    public let skips: [String: Int]
    /// The trace, rendered (kept when the run failed or when asked).
    public let trace: String?
    /// The same without frames or faults: what a person reads first.
    public let operationsTrace: String?

    public var passed: Bool { violations.isEmpty }
    public var failedInvariants: [Invariant] { Array(Set(violations.map(\.invariant))).sorted() }

    /// The command that replays this run.
    public var replayCommand: String {
        var parts = ["tools/simulate", "--replay", String(seed)] + options.flags
        if let keptSteps { parts += ["--steps-kept", keptSteps.map(String.init).joined(separator: ",")] }
        return parts.joined(separator: " ")
    }
}

/// One seed, one history: builds the fleet, runs the steps, heals every
/// fault, lets the fleet settle, checks the invariants.
public final class Simulation {
    public let seed: UInt64
    public let options: WorkloadOptions
    public let plan: WorkloadGenerator.Plan
    let keptSteps: Set<Int>?
    let keepsTrace: Bool
    let framesTraced: Bool
    let scratch: String
    /// Simulated time the fleet gets to settle after the heal.
    public static let settleBudgetMs: UInt64 = 300_000

    var fleet: SimulatedFleet!
    let model = HistoryModel()
    /// The barrier's commits and the generations seen (invariants 2 and 6).
    let ledger = BarrierLedger()
    /// Copies required, batches running, bodies taken back (invariant 4).
    let offloads = OffloadLedger()
    var skipped = 0
    /// Lost devices a thief turns on again once the fleet settled.
    var thieves: [SimDevice] = []
    /// Lost devices and the writes they held, judged after the settle.
    var pendingLosses: [(held: [WriteRecord], device: SimDevice)] = []
    /// Why steps did nothing, by kind ("held back" is a switch at work).
    var skips: [String: Int] = [:]

    /// `keptSteps`: run only these steps of the seed's history (the
    /// shrinker's output). `scratch`: where device directories go (a
    /// memory-backed folder makes fsync free).
    public init(seed: UInt64, options: WorkloadOptions = WorkloadOptions(), keptSteps: Set<Int>? = nil,
                keepsTrace: Bool = false, framesTraced: Bool = true, scratch: String = Simulation.defaultScratch) {
        self.seed = seed
        self.options = options
        self.plan = WorkloadGenerator.plan(seed: seed, options: options)
        self.keptSteps = keptSteps
        self.keepsTrace = keepsTrace
        self.framesTraced = framesTraced
        self.scratch = scratch
    }

    public static var defaultScratch: String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory), isDirectory.boolValue,
           access("/dev/shm", W_OK) == 0 {
            return "/dev/shm"
        }
        return NSTemporaryDirectory()
    }

    /// Runs the history once (a `Simulation` is not reusable: make another).
    public func run() -> SimulationResult {
        precondition(fleet == nil, "a Simulation runs once")
        var template = Array("\(scratch)/quire-sim-XXXXXX".utf8CString)
        let base = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) }
        var configuration = SyncConfiguration()
        // The engine's own timers, unchanged: heartbeats, back-offs and
        // timeouts are part of what is under test. Only the status snapshot
        // (a file for other processes, and where replay floors persist) is
        // written less often: rendering it was a third of the run time.
        configuration.statusIntervalMilliseconds = 5_000
        // Holder audits only read and warn (they change no replica), and
        // their frames would reshuffle every kept history's network draws;
        // OffloadEngineTests drives them.
        configuration.auditsHolders = false
        configuration.maxResponseRowBytes = plan.maxResponseRowBytes
        // Answers stream ahead in batches of a quarter budget, except in
        // histories with the smallest key lists (both paths stay exercised
        // without a new draw, so every seed keeps its history).
        configuration.streamBatchRowBytes = max(4 << 10, plan.maxResponseRowBytes / 4)
        configuration.maxStreamedRowBytes = plan.keyListThreshold == 4 ? 0 : 4 * plan.maxResponseRowBytes
        configuration.keyListThreshold = plan.keyListThreshold
        // The real barrier, made to run in a short history: one tombstone is worth a round.
        configuration.barrierMinimumTombstones = 1
        fleet = SimulatedFleet(seed: seed, base: base ?? "\(scratch)/quire-sim-\(seed)", configuration: configuration,
                               maxFrameSize: plan.maxFrameSize)
        defer { fleet.tearDown() }
        let trace = fleet.trace
        let model = self.model
        fleet.network.rates = plan.rates
        fleet.network.tagOfSender = { model.stamp(of: $0) }
        fleet.network.onDelivered = { to, _, tag in model.delivered(to: to, tag: tag) }
        let names = { [weak fleet] (slot: Int) -> String in fleet.map { $0.devices.indices.contains(slot) ? $0.devices[slot].name : "slot \(slot)" } ?? "?" }
        fleet.network.onFault = { kind, from, to, detail in trace.record(names(from), "fault \(kind.rawValue) to \(names(to)): \(detail)") }
        var settled = false
        var checker = InvariantChecker(fleet: fleet, model: model, options: options)
        fleet.onLog = { [unowned self] device, line in
            if line.hasPrefix("barrier: generation ") { noteCommit(by: device) }
        }
        var heldAtCut: [WriteRecord] = []
        fleet.beforePowerCut = { [unowned self] device in heldAtCut = (try? writesHeld(by: device)) ?? [] }
        fleet.onPowerCut = { [unowned self] device in
            do { try losePower(device, held: heldAtCut) } catch { fleet.trace.record(device.name, "could not start again after the power cut: \(error)") }
        }
        do {
            trace.record(nil, "seed \(seed): \(plan.deviceCount) devices, \(plan.steps.count) steps, network \(plan.rates), frames up to \(plan.maxFrameSize) B, "
                         + "responses up to \(plan.maxResponseRowBytes) B of rows, key lists up to \(plan.keyListThreshold) rows, clock offsets "
                         + plan.clockOffsetsMs.prefix(plan.deviceCount).map { "\($0 / 1000) s" }.joined(separator: " "))
            for slot in 0..<plan.deviceCount { try fleet.addDevice(knowing: fleet.devices, clockOffsetMs: plan.clockOffsetsMs[slot]) }
            if let slot = plan.homebaseSlot {
                try fleet.makeHomebase(fleet.devices[slot])
                trace.record(fleet.devices[slot].name, "is the homebase (quire role homebase)")
            } else if options.offloads {
                trace.record(nil, "no homebase: offloads are refused")
            }
            for device in fleet.devices { try fleet.goOnline(device) }
            for (index, step) in plan.steps.enumerated() where keptSteps?.contains(index) ?? true {
                trace.phase = .step(index)
                fleet.network.reseed(SeedMix.mix(seed, 0x4E_45_54, UInt64(index)))
                try perform(step.operation, step: index)
                fleet.run(ms: step.thenRunMs)
                pollOffloads()
                fleet.cloud.observe()
                try noteEscapedRollbacks()
                try checker.checkNoResurrection(ledger: ledger, final: false)
                checker.checkGenerations(ledger: ledger, final: false)
                try checker.checkNoBodyLost(offloads, final: false)
                checker.takeOffloadProblems(offloads)
            }
            settled = try settle()
            try judgeLosses()
            for problem in try thievesReturn() { checker.fail(.convergence, problem) }
            pollOffloads()
            try checker.checkNoBodyLost(offloads, final: true)
            // Every body still offloaded comes back through a real recall
            // (which also makes rows byte-comparable for convergence).
            try recallEverything()
            // A barrier round may have started while the recalls ran: its
            // commit is still on the way to the devices that acked it. And
            // an offload waiting for copies may finish once a recall made
            // one: what it offloads is recalled in turn.
            if settled {
                quiesce()
                for _ in 0..<3 {
                    guard try recallEverything() else { break }
                    quiesce()
                }
            }
            checker.takeOffloadProblems(offloads)
            noteLostGenerations()
            try checker.checkNoResurrection(ledger: ledger, final: true)
            checker.checkGenerations(ledger: ledger, final: true)
            try checker.checkConvergence(settled: settled, settleBudgetMs: Simulation.settleBudgetMs)
            try noteEscapedRollbacks()
            try checker.checkNoLostWrite(bodiesTakenBack: offloads.takenBack, collectedAndLost: ledger.lostKeys)
            checker.checkNoSilentStuckDevice(settled: settled)
            checker.checkOneDotOneContent()
        } catch {
            checker.violations.append(Violation(.convergence, "the simulation stopped: \(error)"))
            trace.record(nil, "stopped: \(error)")
        }
        let endMs = fleet.elapsedMs
        let deviceHours = fleet.devices.reduce(0.0) { $0 + Double(endMs - $1.joinedAtMs) / 3_600_000 }
        let failed = !checker.violations.isEmpty
        return SimulationResult(
            seed: seed, options: options, keptSteps: keptSteps.map { $0.sorted() }, stepCount: keptSteps?.count ?? plan.steps.count,
            deviceCount: fleet.devices.count, traceHash: trace.hashHex, traceLines: trace.lineCount,
            violations: checker.violations, tally: checker.tally, faults: fleet.network.injected, simulatedMs: endMs,
            deviceHours: deviceHours, writes: model.writes.count, skippedSteps: skipped, skips: skips,
            trace: (failed || keepsTrace) ? trace.render(framesIncluded: framesTraced) : nil,
            operationsTrace: (failed || keepsTrace) ? trace.render(framesIncluded: false, faultsIncluded: false) : nil)
    }

    /// After the heal: whether the fleet lost what it committed (see
    /// `BarrierLedger.lostAbove`), said in the trace.
    private func noteLostGenerations() {
        let committed = ledger.committedGeneration
        let held = fleet.members.map { (try? $0.home.prefs.load().generation) ?? 0 }.max() ?? 0
        let anchored = ((try? fleet.cloud.folder.candidates()) ?? []).map(\.header.generation).max() ?? 0
        guard committed > held, committed > anchored else { return }
        ledger.lostAbove = held
        fleet.trace.record(nil, "the fleet lost generation \(committed): no device holds more than \(held), and the newest anchor left is at "
                     + "\(anchored); what rounds above \(held) collected may come back")
    }

    // MARK: Settling

    /// Runs until nothing is on the way and the fleet agrees again, after
    /// the heal's work (quiet when it already is).
    private func quiesce() {
        var elapsed: UInt64 = 0
        while !(fleet.isSettled() && fleet.network.framesInFlight == 0) && elapsed < Simulation.settleBudgetMs {
            elapsed += fleet.tick()
        }
        if elapsed > 0 { fleet.trace.record(nil, "quiet again after the recalls: \(elapsed) ms") }
    }

    /// Heals every fault, brings every device online, and runs until the
    /// fleet settles or the budget is spent.
    private func settle() throws -> Bool {
        fleet.trace.phase = .settle
        fleet.network.rates = .none
        fleet.network.partition = nil
        fleet.cloud.healAll()
        fleet.trace.record(nil, "heal: no more faults, no partition, the cloud folder reachable, every device on")
        for device in fleet.members { try fleet.powerOn(device, online: true) }
        try revokeAgainWhereVoided()
        var elapsed: UInt64 = 0
        var nextReport: UInt64 = 10_000
        while elapsed < Simulation.settleBudgetMs {
            for _ in 0..<5 { elapsed += fleet.tick() }
            try noteEscapedRollbacks()
            if fleet.isSettled() && fleet.network.framesInFlight == 0 {
                fleet.trace.record(nil, "settled after \(elapsed) ms")
                return true
            }
            if elapsed >= nextReport {
                nextReport += 10_000
                // A revocation voided meanwhile (its signer revoked by a
                // device that had not seen it) put a lost device back.
                try revokeAgainWhereVoided()
                let waiting = fleet.members.compactMap { d -> String? in
                    let siblings = d.engine?.unconvergedSiblings() ?? []
                    return siblings.isEmpty ? nil : "\(d.name) with \(siblings.joined(separator: ","))"
                }
                let inFlight = fleet.network.framesInFlight
                fleet.trace.record(nil, "not settled after \(elapsed) ms: "
                                   + (waiting.isEmpty ? (fleet.isSettled() ? "converged" : "digests differ") : "unconverged " + waiting.joined(separator: "; "))
                                   + (inFlight > 0 ? ", \(inFlight) frame(s) still on the way" : ""))
            }
        }
        fleet.trace.record(nil, "not settled after \(elapsed) ms")
        return false
    }
}
