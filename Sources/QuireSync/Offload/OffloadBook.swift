import Foundation
import QuireCore

/// What became of one note asked to be offloaded or recalled.
public struct OffloadOutcome: Equatable, Sendable {
    public enum Result: String, Sendable {
        /// Done: offloaded (body cleared here) or recalled (body resident again).
        case done
        /// Nothing to do (already offloaded, already resident, empty body).
        case skipped
        /// Not done; `reason` says why. For an offload the body stays resident.
        case failed
    }

    public var key: RowKey
    public var title: String
    public var bytes: Int
    public var result: Result
    public var reason: String?
    /// The devices that confirmed a copy (offload), or answered (recall).
    public var holders: [DeviceID]

    public init(key: RowKey, title: String, bytes: Int, result: Result, reason: String? = nil, holders: [DeviceID] = []) {
        self.key = key; self.title = title; self.bytes = bytes; self.result = result; self.reason = reason; self.holders = holders
    }
}

/// A recall or verification that could not be done, in one line naming the
/// note and the holders that were asked.
public struct OffloadError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Faults injected by tests only (the CLI reads them from QUIRE_TEST_*
/// variables, see OffloadRuntime): a holder that dies between receiving a
/// body and committing it, one that answers recalls with wrong bytes, one
/// that is slow to acknowledge.
public struct OffloadFaults: Sendable {
    /// Called after an offload_put arrived and before anything is committed
    /// (the CLI exits the process there).
    public var beforeHold: (@Sendable () -> Void)?
    /// Serve recalled bodies with one byte flipped.
    public var corruptsRecalls = false
    /// Wait this long before committing held bodies (so a test can edit a
    /// note while its offload is in flight).
    public var holdDelayMilliseconds: UInt64 = 0

    public init() {}
}

/// Timing of offload traffic; all in the engine's injected clock.
public struct OffloadTiming: Sendable {
    /// Resend a put (same op id) or a query that got no answer after this long.
    public var retryMilliseconds: UInt64 = 1_500
    /// Ask the next holder when the current one has not answered a recall.
    public var recallRetryMilliseconds: UInt64 = 700
    /// Notes in flight per offload batch, and their bytes.
    public var window = 16
    public var windowBytes = 16 << 20

    public init() {}
}

/// One note being offloaded: sent to the homebases, waiting for durable acks.
struct OffloadOperation {
    let opID: [UInt8]
    let key: RowKey
    let title: String
    let contentHash: [UInt8]
    let body: [UInt8]
    let homebases: [DeviceID]
    /// Copies required: the batch's, or more when a sibling's offload
    /// counted this device's copy among more (its pins, `ReplicaStore.copyPins`).
    let copies: Int
    var acked: [DeviceID] = []
    var refused: [DeviceID: String] = [:]
    /// Non-homebase siblings that said they hold this body resident.
    var residentElsewhere: [DeviceID] = []
    /// The epoch of the last count asked for (the pins it made).
    var pinEpoch: UInt64 = 0
    var nextRetryMs: UInt64
}

struct OffloadBatch {
    let copies: Int
    let timeoutMs: UInt64
    var queue: [RowKey]
    var active: [[UInt8]: OffloadOperation] = [:]
    var outcomes: [OffloadOutcome] = []
    var lastProgressMs: UInt64
    var activeBytes: Int { active.values.reduce(0) { $0 + $1.body.count } }
    var isFinished: Bool { queue.isEmpty && active.isEmpty }
}

/// One body being recalled. Several callers asking for the same content
/// share it.
struct PendingRecall {
    let contentHash: [UInt8]
    let key: RowKey?
    let title: String
    var candidates: [DeviceID]
    var next = 0
    /// Holders that refused or sent wrong bytes: not asked again.
    var excluded: Set<DeviceID> = []
    var asked: [DeviceID] = []
    var problems: [String] = []
    var deadlineMs: UInt64
    var nextAttemptMs: UInt64 = 0
    var result: Result<[UInt8], OffloadError>?
    var answeredBy: DeviceID?
    /// Every holder was silent to a recall shortly before: a short wait.
    var stillSilent = false
}

/// A hold query to one sibling.
struct PendingQuery {
    let target: DeviceID
    let items: [HoldQuery.Item]
    var answer: HoldAnswer?
    var nextRetryMs: UInt64
    /// Offload batch whose copies this query counts (nil: a verification).
    var batch: UInt64?
    /// An audit (`SyncEngine.auditHolds`): answered on the engine's thread,
    /// given up at this time if the holder stays silent.
    var auditUntilMs: UInt64? = nil
}

/// Per-engine offload state, guarded by the engine lock.
struct OffloadBook {
    var batches: [UInt64: OffloadBatch] = [:]
    var nextID: UInt64 = 1
    /// opID → the batch it belongs to.
    var batchOfOperation: [[UInt8]: UInt64] = [:]
    var recalls: [[UInt8]: PendingRecall] = [:]
    /// Holders a recall asked that never answered, and when it gave up: a
    /// recall soon after, with nothing heard from them since, fails at once
    /// (a search through many offloaded notes must not wait out each one).
    var silentHolders: [DeviceID: UInt64] = [:]
    var queries: [[UInt8]: PendingQuery] = [:]
    /// Per holder, the session of it whose holds were last audited.
    var auditedSessions: [DeviceID: SessionSeen] = [:]
    /// Audits sent by this engine (their query ids).
    var audits: UInt32 = 0
    /// Bodies this device offloaded that a holder it counted on answered
    /// it no longer holds, by content hash: what the status warns of until
    /// a later audit finds them held or they are no longer offloaded here.
    var missingBodies: [[UInt8]: (title: String, holder: DeviceID)] = [:]
    /// Verified bodies received by this holder, committed together at the
    /// end of the engine step, then acknowledged.
    var holdsToCommit: [(put: OffloadPut, from: DeviceID)] = []
    var faults = OffloadFaults()
    var timing = OffloadTiming()
    /// Woken whenever an offload, recall or query makes progress, for
    /// callers blocked on another thread.
    let progress = NSCondition()

    /// Something is in flight whose timers run on the engine's tick.
    var isBusy: Bool { !batches.isEmpty || !recalls.isEmpty || !queries.isEmpty || !holdsToCommit.isEmpty }

    /// The last pin epoch handed out (see `nextEpoch`).
    var lastEpoch: UInt64 = 0

    mutating func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// A pin epoch: the wall clock in ms (whole seconds × 1000), strictly
    /// increasing within this engine, so a release names exactly the
    /// counts made before it.
    mutating func nextEpoch(now: Timestamp) -> UInt64 {
        lastEpoch = max(lastEpoch + 1, UInt64(max(0, now.seconds)) * 1000)
        return lastEpoch
    }
}
