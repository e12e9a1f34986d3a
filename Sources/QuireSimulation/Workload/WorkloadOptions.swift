/// What histories a run may contain. The switches that are off by default
/// turn on the histories issue 10 found the old row model getting wrong
/// (rows as heads with dots now survive them; `--everything` runs them all,
/// and CI's long run does).
public struct WorkloadOptions: Sendable, Equatable {
    /// Devices at the start (2...6); nil: the seed chooses.
    public var deviceCount: Int?
    /// Steps in a history; nil: the seed chooses (20...50).
    public var stepCount: Int?
    /// Put a device directory back from a copy taken earlier even when the
    /// device wrote since that copy (issue 10, #2: it re-mints counters its
    /// siblings already saw). Off, such a restore is held back.
    public var allowsRestoreByCopy = false
    /// With `allowsRestoreByCopy`: the copy goes back as new files (`cp -a`
    /// over a deleted directory), which the replica tells from its own file
    /// and answers with a new incarnation at open; no dot may then be minted
    /// twice (the in-place copy, a VM snapshot, is exempt from that check).
    public var copiesBackAsNewFiles = false
    /// Let a delete that saw one of two concurrent edits meet the other
    /// (issue 10, #1: the outcome depends on which devices meet first).
    public var allowsThreeWayEditDelete = false
    /// Let an edit carry the same stamp as the value it replaces while a
    /// third, concurrent write (edit or delete) exists (issue 10, #1's
    /// cause: the replaced value can win the tie). Skewed clocks make this
    /// common.
    public var allowsTiedStamps = false
    /// Let a seed shrink the engines' response budget to 64 or 8 KiB, below
    /// the size of a long note: two siblings can then livelock, each
    /// resending a row the other already supersedes (found by this
    /// simulator; not one of issue 10's six).
    public var allowsSmallResponseBudgets = false
    /// Let a journal day or a note be written again on a device that holds
    /// it deleted. This simulator found a sibling that never saw the delete
    /// "restoring" the old paragraphs from its shadow as a fresh edit, which
    /// beat later deletes too (seed 500979 with --everything); a row written
    /// again now deletes the text its delete took (`DeletedProse`).
    public var allowsRecreatingDeletedProse = false
    /// Faults of the cloud folder (a device loses it, conflict copies, an
    /// older anchor put back, an anchor for a round that never committed)
    /// and power losses, drawn from a stream of their own.
    public var injectsCloudAndPowerFaults = false
    /// With `injectsCloudAndPowerFaults`: a device's view of the cloud folder
    /// also falls behind, as a file-sync service's does. It reads the folder
    /// as it was; what it writes reaches the others only when it catches up,
    /// as a conflict copy where both sides changed a file. Its own stream
    /// of draws, so histories without it are unchanged.
    public var cloudViewsLag = false
    /// A homebase (when the seed draws one), offloads, recalls and reads of
    /// offloaded notes (invariant 4).
    public var offloads = true
    /// Demand that a body keep every copy its offload required, resident
    /// copies on other devices included. The engine counts a sibling that
    /// holds the note resident as a copy, and that sibling pins its copy
    /// (`copy_pins`); before the pins, it could offload the note itself, or
    /// a delete there followed by a concurrent edit brought the note back as
    /// a pointer (found by this simulator: seeds 927 and 1073 with
    /// --everything). Off, (4) demands one held copy re-hashed on its
    /// holder, and checks every recall.
    public var requiresCountedCopiesKept = false
    /// Let a device be lost and revoked by another (`Revoking`, the code of
    /// `quire devices revoke`), from a stream of its own: what only it held
    /// goes with it, the fleet goes on without it, and, when the thief turns
    /// it on again, nothing it writes after its revocation may reach a
    /// device of the roster.
    public var allowsRevocation = false
    /// Let a device join mid-history.
    public var allowsJoin = true
    /// Inject network faults (drop, duplicate, reorder, delay, partition, corrupt).
    public var injectsFaults = true
    /// A deliberately wrong oracle, to test the simulator itself (traces,
    /// replay commands, the shrinker): the write of this step is recorded
    /// with a token the replica never received, so it must show as lost.
    public var phantomWriteStep: Int?
    /// Demand that every unsuperseded concurrent write survive as a head,
    /// even on a row model that keeps one value per row (see RowObservation).
    public var requiresHeads = RowObservation.keepsConcurrentHeads

    public init() {}

    /// Every history, including the ones known to fail today.
    public static var everything: WorkloadOptions {
        var o = WorkloadOptions()
        o.allowsRestoreByCopy = true
        o.allowsThreeWayEditDelete = true
        o.allowsTiedStamps = true
        o.allowsSmallResponseBudgets = true
        o.allowsRecreatingDeletedProse = true
        o.injectsCloudAndPowerFaults = true
        o.requiresCountedCopiesKept = true
        return o
    }

    /// The switches as command-line flags, for the replay command.
    public var flags: [String] {
        var out: [String] = []
        if let deviceCount { out += ["--devices", String(deviceCount)] }
        if let stepCount { out += ["--steps", String(stepCount)] }
        if allowsRestoreByCopy { out.append("--restore-by-copy") }
        if copiesBackAsNewFiles { out.append("--copy-back-as-new-files") }
        if allowsThreeWayEditDelete { out.append("--three-way-edit-delete") }
        if allowsTiedStamps { out.append("--tied-stamps") }
        if allowsSmallResponseBudgets { out.append("--small-response-budgets") }
        if allowsRecreatingDeletedProse { out.append("--recreate-deleted-prose") }
        if injectsCloudAndPowerFaults { out.append("--cloud-and-power-faults") }
        if cloudViewsLag { out.append("--lagging-cloud") }
        if allowsRevocation { out.append("--revocations") }
        if let phantomWriteStep { out += ["--phantom-write", String(phantomWriteStep)] }
        if !offloads { out.append("--no-offload") }
        if requiresCountedCopiesKept { out.append("--counted-copies-kept") }
        if !allowsJoin { out.append("--no-join") }
        if !injectsFaults { out.append("--no-faults") }
        if requiresHeads != RowObservation.keepsConcurrentHeads { out.append(requiresHeads ? "--require-heads" : "--no-require-heads") }
        return out
    }
}

extension WorkloadOptions {
    /// These options with a fixed device and step count (nil keeps the seed's choice).
    public func merging(deviceCount: Int?, stepCount: Int?) -> WorkloadOptions {
        var o = self
        o.deviceCount = deviceCount ?? o.deviceCount
        o.stepCount = stepCount ?? o.stepCount
        return o
    }
}
