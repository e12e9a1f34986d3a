import QuireCore

/// Draws a history from a seed, before anything runs: the steps depend only
/// on the seed and the options, never on what the fleet did, so the same
/// seed always means the same history and the shrinker can drop steps.
public enum WorkloadGenerator {
    public struct Plan: Sendable {
        public var deviceCount: Int
        public var steps: [Step]
        public var rates: FaultRates
        public var maxFrameSize: Int
        /// Wall-clock skew of each device slot (joiners included), in ms.
        public var clockOffsetsMs: [Int64]
        /// Row bytes per reconcile response and the key-list threshold:
        /// small ones force pulls of many rounds and deep range splits.
        public var maxResponseRowBytes: Int
        public var keyListThreshold: Int
        /// The device slot that is the homebase (nil: the fleet has none, and offloads are refused).
        public var homebaseSlot: Int?
    }

    public static func plan(seed: UInt64, options: WorkloadOptions) -> Plan {
        let random = SeededRandom(seed: SeedMix.mix(seed, 0x504C_414E))   // "PLAN"
        let deviceCount = options.deviceCount ?? random.int(2...6)
        let stepCount = options.stepCount ?? random.int(20...50)
        var rates = FaultRates()
        if options.injectsFaults {
            // A quarter of the seeds run on a clean network, the rest on a
            // network from mildly to very lossy.
            if random.int(0..<4) != 0 {
                rates.drop = Double(random.int(0...15)) / 100
                rates.duplicate = Double(random.int(0...10)) / 100
                rates.reorder = Double(random.int(0...30)) / 100
                rates.delay = Double(random.int(0...5)) / 100
                rates.corrupt = Double(random.int(0...3)) / 100
            }
        }
        let maxFrameSize = random.pick([8 << 10, 16 << 10, 64 << 10])
        // Half the seeds run with every clock right; the others with each
        // device up to 10 minutes off, and clocks stepped now and then.
        let skewed = random.chance(0.5)
        let clockOffsetsMs: [Int64] = (0..<8).map { _ in skewed ? Int64(random.int(-600_000...600_000)) : 0 }
        // Small budgets only under their switch: with a row bigger than the
        // budget they livelock today (see WorkloadOptions).
        let budgetChoice = random.int(0..<4)
        let maxResponseRowBytes = options.allowsSmallResponseBudgets ? [2 << 20, 1 << 20, 64 << 10, 8 << 10][budgetChoice]
                                                                      : [2 << 20, 1 << 20, 2 << 20, 1 << 20][budgetChoice]
        let keyListThreshold = random.pick([16, 16, 4, 64])
        var steps: [Step] = []
        var slots = deviceCount
        let maxSlots = 6
        // A stream of its own, so switching these faults on leaves the rest of the history as it was.
        let faults = SeededRandom(seed: SeedMix.mix(seed, 0x434C_4F55))   // "CLOU"
        // Offload draws from its own stream too, for the same reason.
        let offload = SeededRandom(seed: SeedMix.mix(seed, 0x4F46_464C))   // "OFFL"
        // Most fleets have a homebase; the rest show that offloads are refused without one.
        let homebaseSlot: Int? = options.offloads && offload.chance(0.85) ? offload.int(0..<deviceCount) : nil
        // Views of the cloud folder that fall behind, when asked for.
        let lags = options.injectsCloudAndPowerFaults && options.cloudViewsLag ? SeededRandom(seed: SeedMix.mix(seed, 0x4C41_4753)) : nil   // "LAGS"
        // Revocations too.
        let revocations = SeededRandom(seed: SeedMix.mix(seed, 0x5245_564F))   // "REVO"
        while steps.count < stepCount {
            if options.allowsRevocation, slots >= 3, revocations.chance(0.05) {
                let victim = revocations.int(0..<slots)
                let revoker = (victim + 1 + revocations.int(0..<slots - 1)) % slots
                steps.append(Step(.revoke(revoker: revoker, victim: victim, thiefReturns: revocations.chance(0.5)),
                                  thenRunMs: UInt64(revocations.int(0...200)) * 100))
            }
            if options.injectsCloudAndPowerFaults, faults.chance(0.1) {
                steps.append(Step(cloudOrPowerFault(faults, slots: slots), thenRunMs: UInt64(faults.int(0...200)) * 100))
            }
            if let lags, lags.chance(0.08) {
                let device = lags.int(0..<slots)
                steps.append(Step(.cloud(lags.chance(0.5) ? .lagging(device: device) : .caughtUp(device: device)),
                                  thenRunMs: UInt64(lags.int(0...200)) * 100))
            }
            if options.offloads, offload.chance(0.2) {
                steps.append(Step(offloadOperation(offload, slots: slots, homebase: homebaseSlot, cloudAndPowerFaults: options.injectsCloudAndPowerFaults),
                                  thenRunMs: UInt64(offload.int(0...100)) * 100))
            }
            // The histories issue 10 describes, played on purpose (they also
            // arise by chance, but rarely): only when their switch is on.
            if options.allowsThreeWayEditDelete, slots >= 3, random.chance(0.08) {
                steps += threeWayEditDelete(random, slots: slots)
                continue
            }
            if options.allowsTiedStamps, slots >= 3, random.chance(0.06) {
                steps += tiedStampEdits(random, slots: slots)
                continue
            }
            if options.allowsSmallResponseBudgets, slots >= 2, random.chance(0.05) {
                steps += staleRowsOnBothSides(random, slots: slots)
                continue
            }
            if options.allowsRestoreByCopy, random.chance(0.05) {
                steps += editAfterRestore(random, slots: slots)
                continue
            }
            let device = random.int(0..<slots)
            let pick = random.next()
            var operation: Operation
            let roll = random.int(0..<100)
            switch roll {
            case 0..<48:
                operation = .write(device: device, target: writeTarget(random), pick: pick)
            case 48..<53:
                let target: ProseTarget = random.chance(0.5) ? .note : .saga(day: random.int(0..<3))
                operation = .slowProseEdit(device: device, target: target, edit: random.pick(ProseEdit.everyday), pick: pick,
                                           openMs: UInt64(random.int(300...8_000)))
            case 53..<63:
                operation = .delete(device: device, namespace: random.pick([.notebook, .notebook, .plans, .contacts, .settings, .saga]),
                                    pick: pick)
            case 63..<68: operation = .goOffline(device: device)
            case 68..<73: operation = .goOnline(device: device)
            case 73..<76: operation = .restartEngine(device: device)
            case 76..<79: operation = .reboot(device: device)
            case 79..<82: operation = .backUp(device: device)
            case 82..<86:
                // With the switch off, a restore still runs when the device
                // wrote nothing since that copy (no counter to re-mint).
                operation = .restore(device: device, pick: pick)
            case 86..<88:
                if options.allowsJoin && slots < maxSlots {
                    operation = .join(inviter: device)
                    slots += 1
                } else {
                    operation = .write(device: device, target: writeTarget(random), pick: pick)
                }
            case 88..<92:
                operation = options.injectsFaults ? .partition(mask: UInt8(truncatingIfNeeded: random.int(1..<(1 << slots) - 1)))
                                                  : .goOnline(device: device)
            case 92..<96: operation = .heal
            case 96..<98:
                operation = skewed ? .clockStep(device: device, deltaMs: Int64(random.int(-300_000...300_000)))
                                   : .sleep(ms: UInt64(random.int(10...600)) * 60_000)
            default: operation = .sleep(ms: UInt64(random.int(10...600)) * 60_000)
            }
            let wait: UInt64
            switch random.int(0..<10) {
            case 0..<6: wait = UInt64(random.int(0...2_000))
            case 6..<9: wait = UInt64(random.int(2_000...20_000))
            default: wait = UInt64(random.int(20_000...90_000))
            }
            steps.append(Step(operation, thenRunMs: wait / 100 * 100))
        }
        return Plan(deviceCount: deviceCount, steps: steps, rates: rates, maxFrameSize: maxFrameSize, clockOffsetsMs: clockOffsetsMs,
                    maxResponseRowBytes: maxResponseRowBytes, keyListThreshold: keyListThreshold, homebaseSlot: homebaseSlot)
    }

    static func offloadOperation(_ random: SeededRandom, slots: Int, homebase: Int?, cloudAndPowerFaults: Bool) -> Operation {
        var device = random.int(0..<slots)
        // A homebase never offloads (it would only be refused): another device does.
        if device == homebase, slots > 1 { device = (device + 1 + random.int(0..<(slots - 1))) % slots }
        switch random.int(0..<20) {
        case 0..<8: return .offload(device: device, pick: random.next(), count: random.int(1...3), copies: random.pick([1, 1, 2]))
        case 8..<10: return .recall(device: device, pick: random.next())
        case 10..<13: return .readOffloaded(device: device, pick: random.next())
        case 13..<18:
            let edit: OffloadedNoteEdit = random.pick([.prose(random.pick(ProseEdit.everyday)), .retitle, .retitle, .delete])
            return .editOffloaded(device: device, pick: random.next(), edit: edit)
        default:
            return cloudAndPowerFaults ? .holderPowerCut : .offload(device: device, pick: random.next(), count: 1, copies: 1)
        }
    }

    static func cloudOrPowerFault(_ random: SeededRandom, slots: Int) -> Operation {
        let device = random.int(0..<slots)
        switch random.int(0..<10) {
        case 0..<2: return .cloud(.unreachable(device: device))
        case 2..<4: return .cloud(.reachable(device: device))
        case 4: return .cloud(.conflictCopy(pick: random.next()))
        case 5: return .cloud(.olderPutBack(pick: random.next()))
        case 6: return .cloud(.dangling(device: device))
        default: return .powerLoss(device: device)
        }
    }

    /// Issue 10, #1: a value everywhere; A edits it offline; B edits it
    /// later; C, having received B's edit, deletes it; then A comes back.
    /// (Or its twin with two deletes, see below.)
    static func threeWayEditDelete(_ random: SeededRandom, slots: Int) -> [Step] {
        let a = random.int(0..<slots)
        var b = random.int(0..<(slots - 1)); if b >= a { b += 1 }
        var c = random.int(0..<slots)
        while c == a || c == b { c = random.int(0..<slots) }
        let useSaga = random.chance(0.3)
        let name = random.int(0..<3)
        let write: (Int) -> Operation = { device in
            useSaga ? .write(device: device, target: .sagaProse(day: name, .append), pick: random.next())
                    : .write(device: device, target: .setting(name: name), pick: random.next())
        }
        let delete: (Int) -> Operation = { device in .deleteNamed(device: device, target: useSaga ? .sagaDay(name) : .setting(name)) }
        if random.chance(0.5) {
            return [
                Step(write(a), thenRunMs: 5_000),
                Step(.goOffline(device: a), thenRunMs: 0),
                Step(write(a), thenRunMs: 1_000),
                Step(write(b), thenRunMs: 5_000),
                Step(delete(c), thenRunMs: UInt64(random.int(0...5_000))),
                Step(.goOnline(device: a), thenRunMs: 10_000),
            ]
        }
        // The other shape: B deletes offline; A edits, C sees A's edit and
        // deletes it; B comes back with a delete that never saw A's edit.
        return [
            Step(write(a), thenRunMs: 5_000),
            Step(.goOffline(device: b), thenRunMs: 0),
            Step(delete(b), thenRunMs: 1_000),
            Step(write(a), thenRunMs: 5_000),
            Step(delete(c), thenRunMs: UInt64(random.int(0...5_000))),
            Step(.goOnline(device: b), thenRunMs: 10_000),
        ]
    }

    /// Issue 10, #1 with no delete: C edits offline (u); A edits (s) and
    /// goes offline; B, having received s, edits it with the same stamp
    /// (B's clock is behind A's, or it is the same second) (r). A and C
    /// then meet alone: if s wins over u there, the join looks concurrent
    /// with r, and r can lose the tie to the very value it replaced.
    static func tiedStampEdits(_ random: SeededRandom, slots: Int) -> [Step] {
        let a = random.int(0..<slots)
        var b = random.int(0..<(slots - 1)); if b >= a { b += 1 }
        var c = random.int(0..<slots)
        while c == a || c == b { c = random.int(0..<slots) }
        let name = random.int(0..<3)
        let write: (Int) -> Operation = { .write(device: $0, target: .setting(name: name), pick: random.next()) }
        return [
            Step(.goOffline(device: c), thenRunMs: 0),
            Step(write(c), thenRunMs: 1_000),
            Step(write(a), thenRunMs: 4_000),
            Step(.goOffline(device: a), thenRunMs: 0),
            Step(write(b), thenRunMs: 4_000),
            Step(.partition(mask: UInt8(1) << UInt8(a) | UInt8(1) << UInt8(c)), thenRunMs: 0),
            Step(.goOnline(device: a), thenRunMs: 0),
            Step(.goOnline(device: c), thenRunMs: 6_000),
            Step(.heal, thenRunMs: 10_000),
        ]
    }

    /// The livelock of small response budgets: two journal days everywhere,
    /// one of them long; a partition; one side deletes the short day, the
    /// other edits the long one. Each side's answers then lead with a row
    /// the other supersedes, and (in one key order of the two days) what
    /// the other needs never fits behind it.
    static func staleRowsOnBothSides(_ random: SeededRandom, slots: Int) -> [Step] {
        let a = random.int(0..<slots)
        var b = random.int(0..<(slots - 1)); if b >= a { b += 1 }
        let long = random.int(0..<3)
        let short = (long + random.int(1...2)) % 3
        var mask = UInt8(1) << UInt8(a)
        for slot in 0..<slots where slot != a && slot != b && random.chance(0.5) { mask |= UInt8(1) << UInt8(slot) }
        return [
            Step(.write(device: a, target: .sagaProse(day: long, .appendLong), pick: random.next()), thenRunMs: 8_000),
            Step(.write(device: a, target: .sagaProse(day: short, .append), pick: random.next()), thenRunMs: 8_000),
            Step(.partition(mask: mask), thenRunMs: 0),
            Step(.deleteNamed(device: a, target: .sagaDay(short)), thenRunMs: 1_000),
            Step(.write(device: b, target: .sagaProse(day: long, .append), pick: random.next()), thenRunMs: 3_000),
            Step(.heal, thenRunMs: 20_000),
        ]
    }

    /// Issue 10, #2: a backup; an edit that syncs; the copy put back; an
    /// edit of the same row before the device hears from anyone.
    static func editAfterRestore(_ random: SeededRandom, slots: Int) -> [Step] {
        let a = random.int(0..<slots)
        let name = random.int(0..<3)
        let target: WriteTarget = random.chance(0.7) ? .setting(name: name) : .sagaProse(day: name, .append)
        var steps = [
            Step(.backUp(device: a), thenRunMs: 1_000),
            Step(.write(device: a, target: target, pick: random.next()), thenRunMs: 5_000),
        ]
        if slots > 1, random.chance(0.5) {
            // A sibling edits on top of it: its vector then dominates the
            // re-minted counter, which it drops without a merge.
            var b = random.int(0..<(slots - 1)); if b >= a { b += 1 }
            steps.append(Step(.write(device: b, target: target, pick: random.next()), thenRunMs: 5_000))
        }
        steps += [
            Step(.restore(device: a, pick: 0), thenRunMs: 0),
            Step(.write(device: a, target: target, pick: random.next()), thenRunMs: 10_000),
        ]
        return steps
    }

    private static func writeTarget(_ random: SeededRandom) -> WriteTarget {
        switch random.int(0..<20) {
        case 0..<3: return .newNote
        case 3..<5: return .noteTitle
        case 5..<10: return .noteProse(random.pick(ProseEdit.everyday))
        case 10..<13: return .sagaProse(day: random.int(0..<3), random.pick(ProseEdit.everyday))
        case 13..<16: return .setting(name: random.int(0..<3))
        case 16: return .newPlan
        case 17: return .editPlan
        case 18: return .newContact
        default: return .editContact
        }
    }
}
