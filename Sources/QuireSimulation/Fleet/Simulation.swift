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

    private var fleet: SimulatedFleet!
    private let model = HistoryModel()
    private var skipped = 0

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
        configuration.maxResponseRowBytes = plan.maxResponseRowBytes
        configuration.keyListThreshold = plan.keyListThreshold
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
        do {
            trace.record(nil, "seed \(seed): \(plan.deviceCount) devices, \(plan.steps.count) steps, network \(plan.rates), frames up to \(plan.maxFrameSize) B, "
                         + "responses up to \(plan.maxResponseRowBytes) B of rows, key lists up to \(plan.keyListThreshold) rows, clock offsets "
                         + plan.clockOffsetsMs.prefix(plan.deviceCount).map { "\($0 / 1000) s" }.joined(separator: " "))
            for slot in 0..<plan.deviceCount { try fleet.addDevice(knowing: fleet.devices, clockOffsetMs: plan.clockOffsetsMs[slot]) }
            for device in fleet.devices { try fleet.goOnline(device) }
            for (index, step) in plan.steps.enumerated() where keptSteps?.contains(index) ?? true {
                trace.phase = .step(index)
                fleet.network.reseed(SeedMix.mix(seed, 0x4E_45_54, UInt64(index)))
                try perform(step.operation, step: index)
                fleet.run(ms: step.thenRunMs)
            }
            settled = try settle()
            try checker.checkConvergence(settled: settled, settleBudgetMs: Simulation.settleBudgetMs)
            try checker.checkNoLostWrite()
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

    // MARK: Settling

    /// Heals every fault, brings every device online, and runs until the
    /// fleet settles or the budget is spent.
    private func settle() throws -> Bool {
        fleet.trace.phase = .settle
        fleet.network.rates = .none
        fleet.network.partition = nil
        fleet.trace.record(nil, "heal: no more faults, no partition, every device on")
        for device in fleet.devices { try fleet.powerOn(device, online: true) }
        var elapsed: UInt64 = 0
        var nextReport: UInt64 = 10_000
        while elapsed < Simulation.settleBudgetMs {
            for _ in 0..<5 { elapsed += fleet.tick() }
            if fleet.isSettled() && fleet.network.framesInFlight == 0 {
                fleet.trace.record(nil, "settled after \(elapsed) ms")
                return true
            }
            if elapsed >= nextReport {
                nextReport += 10_000
                let waiting = fleet.devices.compactMap { d -> String? in
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

    // MARK: Operations

    private func device(_ slot: Int) -> SimDevice { fleet.devices[slot % fleet.devices.count] }

    /// Why steps did nothing, by kind ("held back" is a switch at work).
    private var skips: [String: Int] = [:]

    private func skip(_ device: SimDevice?, _ why: String, kind: String = "nothing to act on") {
        skipped += 1
        skips[kind, default: 0] += 1
        fleet.trace.record(device?.name, "skipped: \(why)")
    }

    private func perform(_ operation: Operation, step: Int) throws {
        switch operation {
        case .write(let slot, let target, let pick):
            try write(device(slot), target, random: SeededRandom(seed: pick), step: step)
        case .slowProseEdit(let slot, let target, let edit, let pick, let openMs):
            try slowProseEdit(device(slot), target, edit, random: SeededRandom(seed: pick), openMs: openMs, step: step)
        case .delete(let slot, let namespace, let pick):
            try delete(device(slot), namespace, random: SeededRandom(seed: pick), step: step)
        case .deleteNamed(let slot, let target):
            let d = device(slot)
            switch target {
            case .setting(let i): try delete(d, RowRef(.settings, Setting.key(for: Self.settingNames[i % 3])), step: step)
            case .sagaDay(let i): try delete(d, RowRef(.saga, SagaEntry.key(for: Self.days[i % 3])), step: step)
            }
        case .goOffline(let slot):
            let d = device(slot)
            guard d.isOnline else { return skip(d, "already offline") }
            fleet.goOffline(d)
            fleet.trace.record(d.name, "goes offline")
        case .goOnline(let slot):
            let d = device(slot)
            guard !d.isOnline else { return skip(d, "already online") }
            try fleet.goOnline(d)
            fleet.trace.record(d.name, "comes online")
        case .restartEngine(let slot):
            let d = device(slot)
            guard d.isOnline else { return skip(d, "offline: no engine to restart") }
            fleet.goOffline(d)
            try fleet.goOnline(d)
            fleet.trace.record(d.name, "restarts its sync engine")
        case .reboot(let slot):
            let d = device(slot)
            let wasOnline = d.isOnline
            fleet.powerOff(d)
            try fleet.powerOn(d, online: wasOnline)
            fleet.trace.record(d.name, "reboots (replica closed and reopened)" + (wasOnline ? "" : ", stays offline"))
        case .backUp(let slot):
            let d = device(slot)
            let path = try fleet.backUp(d)
            d.backupCounters.append(try ownCounters(d))
            fleet.trace.record(d.name, "backed up as copy \(d.backups.count) (\(URL(fileURLWithPath: path).lastPathComponent))")
        case .restore(let slot, let pick):
            let d = device(slot)
            guard !d.backups.isEmpty else { return skip(d, "no backup to restore") }
            let index = d.backups.count - 1 - Int(pick % UInt64(d.backups.count))
            if !options.allowsRestoreByCopy {
                let now = try ownCounters(d), then = d.backupCounters[index]
                if let row = now.first(where: { $0.value > then[$0.key] ?? 0 })?.key {
                    return skip(d, "restoring copy \(index + 1) would roll back its own writes (\(row)) and re-mint them (switched off)",
                                kind: "held back: restore after own writes")
                }
            }
            if !options.allowsRestoreBehindSession {
                // The copy's sync-state.json holds an older session floor; if
                // the wall clock is not past the sessions started since, the
                // next session is older than what siblings saw, and they drop
                // every frame of it as a replay (found by this simulator).
                let since = d.engineStartWallSeconds.dropFirst(d.backupEngineStarts[index])
                if let newest = since.max(), d.clock.now().seconds <= newest {
                    return skip(d, "restoring copy \(index + 1) with the wall clock at or before a session started since (\(newest)) "
                                + "would start sessions siblings refuse as replays (switched off)", kind: "held back: restore behind a session")
                }
            }
            let held = try writesHeld(by: d)
            try fleet.restore(d, from: d.backups[index])
            fleet.trace.record(d.name, "restored by copying back backup copy \(index + 1)")
            try noteRolledBack(held, by: d)
        case .join(let inviter):
            guard fleet.devices.count < 6 else { return skip(nil, "the fleet is full") }
            let host = device(inviter)
            let joined = try fleet.addDevice(invitedBy: host, clockOffsetMs: plan.clockOffsetsMs[fleet.devices.count % plan.clockOffsetsMs.count])
            try fleet.goOnline(joined)
            fleet.trace.record(joined.name, "joins the account, invited by \(host.name)")
        case .partition(let mask):
            var sides: [Int: Int] = [:]
            for d in fleet.devices { sides[d.slot] = Int((mask >> UInt8(d.slot % 8)) & 1) }
            fleet.network.partition = sides
            let left = fleet.devices.filter { sides[$0.slot] == 0 }.map(\.name), right = fleet.devices.filter { sides[$0.slot] == 1 }.map(\.name)
            fleet.trace.record(nil, "partition: {\(left.joined(separator: ","))} | {\(right.joined(separator: ","))}")
        case .heal:
            guard fleet.network.partition != nil else { return skip(nil, "no partition to heal") }
            fleet.network.partition = nil
            fleet.trace.record(nil, "partition healed")
        case .sleep(let ms):
            fleet.sleepAll(ms: ms)
            fleet.trace.record(nil, "everyone slept \(ms / 60_000) min")
        case .clockStep(let slot, let delta):
            let d = device(slot)
            d.clock.step(by: delta)
            fleet.trace.record(d.name, "wall clock stepped \(delta >= 0 ? "+" : "")\(delta) ms (now off by \(d.clock.offset / 1000) s)")
        }
    }

    /// This device's own counter in every row it holds (tombstones too).
    private func ownCounters(_ d: SimDevice) throws -> [RowRef: UInt64] {
        guard let store = d.store else { return [:] }
        var out: [RowRef: UInt64] = [:]
        for ns in Namespace.allCases {
            for row in try store.rows(ns, from: [], to: nil) + store.tombstones(ns) {
                let counter = RowObservation.ownCounter(of: d.id, in: row)
                if counter > 0 { out[RowRef(ns, row.key)] = counter }
            }
        }
        return out
    }

    /// Writes whose dot the device's rows cover now.
    private func writesHeld(by d: SimDevice) throws -> [WriteRecord] {
        guard let store = d.store else { return [] }
        return try model.writes.filter { w in
            guard !model.rolledBack.contains(w.id) else { return false }
            return RowObservation.covers(try store.row(w.row.namespace, w.row.key), w.dot)
        }
    }

    /// After a restore: the writes the device held before and not after,
    /// that no other device holds either, are gone with the rollback (a
    /// person who restores an old copy before syncing loses what only that
    /// device had). Nothing owes them; they are named in the trace.
    private func noteRolledBack(_ heldBefore: [WriteRecord], by d: SimDevice) throws {
        var gone: [Int] = []
        for w in heldBefore {
            var holders = fleet.devices.filter { $0 !== d }.compactMap(\.store)
            if let mine = d.store { holders.insert(mine, at: 0) }
            let stillHeld = try holders.contains { RowObservation.covers(try $0.row(w.row.namespace, w.row.key), w.dot) }
            if !stillHeld { gone.append(w.id) }
        }
        guard !gone.isEmpty else { return }
        model.markRolledBack(gone)
        fleet.trace.record(d.name, "the restore took back \(gone.map { "#w\($0)" }.joined(separator: ", ")), held by no other device")
    }

    private func liveKeys(_ store: ReplicaStore, _ ns: Namespace) throws -> [RowKey] {
        try store.summaries(ns).map(\.key)
    }

    /// A live row of `ns` on this device, skewed toward the first few in key
    /// order, so that devices often pick the same row (concurrent edits of
    /// one row are what the merges are for).
    private func pickLive(_ store: ReplicaStore, _ ns: Namespace, _ random: SeededRandom) throws -> RowKey? {
        let keys = try liveKeys(store, ns)
        guard !keys.isEmpty else { return nil }
        if random.chance(0.6) { return keys[random.int(0..<min(2, keys.count))] }
        return keys[random.int(0..<keys.count)]
    }

    /// Whether a write of `ref` by `device` is held back by a switch; says so in the trace.
    private func isHeldBack(_ device: SimDevice, _ ref: RowRef, before: Row?, isDelete: Bool) -> Bool {
        let seen = model.seen(by: device.slot, row: ref, before: before)
        if !options.allowsTiedStamps, !isDelete, ContentValues.hasToken(ref.namespace) {
            // The store stamps a local edit max(now, what it replaces).
            let shown = RowObservation.shown(before)?.updatedAt?.seconds
            let stamp = max(device.clock.now().seconds, shown ?? Int64.min)
            if model.completesTiedStampEdits(row: ref, seen: seen, stamp: stamp) {
                skip(device, "edit of \(ref) would tie the stamp of a value it replaces while a concurrent edit exists (switched off)",
                     kind: "held back: tied stamps")
                return true
            }
        }
        guard !options.allowsThreeWayEditDelete else { return false }
        if model.completesThreeWayEditDelete(row: ref, seen: seen, isDelete: isDelete) {
            skip(device, "\(isDelete ? "delete" : "edit") of \(ref) would make a three-way edit/delete history (switched off)",
                 kind: "held back: three-way edit/delete")
            return true
        }
        return false
    }

    @discardableResult
    private func commit(_ device: SimDevice, _ ref: RowRef, before: Row?, after: Row, isDelete: Bool, token: String?,
                        paragraphs: [String], removed: [String] = [], step: Int?, what: String) -> WriteRecord? {
        let record = model.record(step: step, slot: device.slot, deviceName: device.name, deviceID: device.id, row: ref,
                                  before: before, after: after, isDelete: isDelete, token: token, paragraphs: paragraphs,
                                  removedParagraphs: removed, stamp: RowObservation.shown(after)?.updatedAt?.seconds)
        let names = Dictionary(uniqueKeysWithValues: fleet.devices.map { ($0.id, $0.name) })
        if let record {
            fleet.trace.record(device.name, "\(what) \(ref) → \(record.label) dot (\(device.name),\(record.dot.counter)) "
                               + "\(RowObservation.describeVersion(after, names: names)), had seen {\(record.seen.sorted().map { "#w\($0)" }.joined(separator: ","))}")
        } else {
            fleet.trace.record(device.name, "\(what) \(ref): no change")
        }
        return record
    }

    private func write(_ d: SimDevice, _ target: WriteTarget, random: SeededRandom, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        switch target {
        case .newNote:
            let paragraphs = (0..<random.int(1...3)).map { _ in ProseWriter.paragraph(token: model.freshToken("p"), random: random) }
            let title = model.freshToken("t")
            let note = Note(title: title, body: ProseWriter.text(paragraphs), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))
            let row = try store.put(.note(note))
            commit(d, RowRef(.notebook, row.key), before: nil, after: row, isDelete: false, token: title, paragraphs: paragraphs,
                   step: step, what: "new note \(title)")
        case .noteTitle:
            guard let key = try pickLive(store, .notebook, random) else { return try write(d, .newNote, random: random, step: step) }
            let ref = RowRef(.notebook, key)
            let before = try store.row(.notebook, key)
            guard case .note(var note)? = RowObservation.shown(before) else { return skip(d, "no note to retitle") }
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            note.title = model.freshToken("t")
            let row = try store.put(.note(note), key: key)
            commit(d, ref, before: before, after: row, isDelete: false, token: note.title,
                   paragraphs: ProseWriter.paragraphs(of: note.body), step: step, what: "retitles to \(note.title)")
        case .noteProse(let edit):
            guard let key = try pickLive(store, .notebook, random) else { return try write(d, .newNote, random: random, step: step) }
            try proseEdit(d, .note, key: key, edit: edit, random: random, openMs: 0, step: step)
        case .sagaProse(let day, let edit):
            try proseEdit(d, .saga(day: day), key: SagaEntry.key(for: Self.days[day % 3]), edit: edit, random: random, openMs: 0, step: step)
        case .setting(let index):
            let name = Self.settingNames[index % 3]
            let ref = RowRef(.settings, Setting.key(for: name))
            let before = try store.row(.settings, ref.key)
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            let value = model.freshToken()
            let row = try store.put(.setting(Setting(name: name, value: value, updatedAt: Timestamp(seconds: 0))))
            commit(d, ref, before: before, after: row, isDelete: false, token: value, paragraphs: [], step: step,
                   what: "sets \(name) = \(value)")
        case .newPlan:
            let token = model.freshToken()
            let row = try store.put(.plan(Plan(title: "plan \(token)", notes: token, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
            commit(d, RowRef(.plans, row.key), before: nil, after: row, isDelete: false, token: token, paragraphs: [], step: step,
                   what: "new plan \(token)")
        case .editPlan:
            guard let key = try pickLive(store, .plans, random) else { return try write(d, .newPlan, random: random, step: step) }
            let ref = RowRef(.plans, key)
            let before = try store.row(.plans, key)
            guard case .plan(var plan)? = RowObservation.shown(before) else { return skip(d, "no plan to edit") }
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            plan.notes = model.freshToken()
            if random.chance(0.3) { plan.isDone.toggle() }
            let row = try store.put(.plan(plan), key: key)
            commit(d, ref, before: before, after: row, isDelete: false, token: plan.notes, paragraphs: [], step: step,
                   what: "edits plan to \(plan.notes)")
        case .newContact:
            let token = model.freshToken()
            let contact = Contact(name: "contact \(token)", emails: ["\(token)@example.org"], note: token, updatedAt: Timestamp(seconds: 0))
            let row = try store.put(.contact(contact))
            commit(d, RowRef(.contacts, row.key), before: nil, after: row, isDelete: false, token: token, paragraphs: [], step: step,
                   what: "new contact \(token)")
        case .editContact:
            guard let key = try pickLive(store, .contacts, random) else { return try write(d, .newContact, random: random, step: step) }
            let ref = RowRef(.contacts, key)
            let before = try store.row(.contacts, key)
            guard case .contact(var contact)? = RowObservation.shown(before) else { return skip(d, "no contact to edit") }
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            contact.note = model.freshToken()
            if random.chance(0.3) { contact.phones.append("+1555\(random.int(1000...9999))") }
            let row = try store.put(.contact(contact), key: key)
            commit(d, ref, before: before, after: row, isDelete: false, token: contact.note, paragraphs: [], step: step,
                   what: "edits contact to \(contact.note ?? "")")
        }
    }

    static let days = ["2027-03-01", "2027-03-02", "2027-03-03"]
    static let settingNames = ["theme", "font", "language"]

    private func slowProseEdit(_ d: SimDevice, _ target: ProseTarget, _ edit: ProseEdit, random: SeededRandom, openMs: UInt64,
                               step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        switch target {
        case .note:
            guard let key = try pickLive(store, .notebook, random) else { return try write(d, .newNote, random: random, step: step) }
            try proseEdit(d, .note, key: key, edit: edit, random: random, openMs: openMs, step: step)
        case .saga(let day):
            try proseEdit(d, .saga(day: day), key: SagaEntry.key(for: Self.days[day % 3]), edit: edit, random: random,
                          openMs: openMs, step: step)
        }
    }

    /// Reads what the editor shows, lets `openMs` pass (sync runs), then
    /// saves the edit made on what was shown.
    private func proseEdit(_ d: SimDevice, _ target: ProseTarget, key: RowKey, edit: ProseEdit, random: SeededRandom, openMs: UInt64,
                           step: Int) throws {
        let ns: Namespace = (target == .note) ? .notebook : .saga
        let ref = RowRef(ns, key)
        guard let store = d.store else { return skip(d, "powered off") }
        let opened = RowObservation.shown(try store.row(ns, key))
        let shownParagraphs = ContentValues.prose(of: opened) ?? []
        if case .note = target, opened == nil { return skip(d, "no note to edit") }
        let (paragraphs, removed) = ProseWriter.apply(edit, to: shownParagraphs, random: random, fresh: { model.freshToken("p") })
        if openMs > 0 {
            fleet.trace.record(d.name, "opens \(ref) in an editor for \(openMs) ms")
            fleet.run(ms: openMs)
        }
        guard let store = d.store else { return skip(d, "powered off") }
        let before = try store.row(ns, key)
        if isHeldBack(d, ref, before: before, isDelete: false) { return }
        // What the editor read: an absent day reads as empty, never as "what
        // is stored at save time" (that would count paragraphs that landed
        // meanwhile as deleted by this edit).
        let shownText = ProseWriter.text(shownParagraphs)
        let row: Row
        var token: String? = nil
        switch target {
        case .note:
            guard case .note(var note)? = opened else { return skip(d, "no note to edit") }
            if case .note(let current)? = RowObservation.shown(before) { note = current }   // a save writes the file's title as it is now
            note.body = ProseWriter.text(paragraphs)
            token = note.title
            row = try store.saveProse(.note(note), key: key, shown: shownText)
        case .saga(let day):
            let entry = SagaEntry(date: Self.days[day % 3], text: ProseWriter.text(paragraphs), updatedAt: Timestamp(seconds: 0))
            row = try store.saveProse(.saga(entry), key: key, shown: shownText)
        }
        commit(d, ref, before: before, after: row, isDelete: false, token: token, paragraphs: paragraphs, removed: removed, step: step,
               what: "\(ProseWriter.effective(edit, on: shownParagraphs)) in \(ref) [\(paragraphs.map(InvariantChecker.tokenOf).joined(separator: " "))]")
    }

    private func delete(_ d: SimDevice, _ ns: Namespace, random: SeededRandom, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        guard let key = try pickLive(store, ns, random) else { return skip(d, "nothing live in \(ns.name) to delete") }
        try delete(d, RowRef(ns, key), step: step)
    }

    private func delete(_ d: SimDevice, _ ref: RowRef, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        let before = try store.row(ref.namespace, ref.key)
        guard RowObservation.isLive(before) else { return skip(d, "\(ref) is not live here") }
        if isHeldBack(d, ref, before: before, isDelete: true) { return }
        let row = try store.delete(ref.namespace, ref.key)
        commit(d, ref, before: before, after: row, isDelete: true, token: nil, paragraphs: [], step: step, what: "deletes")
    }
}
