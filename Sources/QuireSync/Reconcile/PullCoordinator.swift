import QuireCore

struct PullKey: Hashable {
    let sibling: DeviceID
    let namespace: Namespace
}

/// The pulls this device runs: at most one per sibling and namespace, and
/// none from a sibling that holds what a running pull's sibling holds there
/// (it waits for that pull, so rows two siblings both hold cross once: a new
/// device of a three-device account would otherwise receive the whole
/// notebook twice; siblings that hold different writes are pulled at once),
/// the storm guard that decides whether a round of them may start, and what
/// happens when the last pull with a sibling ends (our digest goes back to
/// it if rows came, the namespaces asked for meanwhile are pulled again).
///
/// It keeps the bookkeeping; the engine reads the store, sends the requests
/// and acts on what these methods return.
struct PullCoordinator {
    private(set) var sessions: [PullKey: PullSession] = [:]
    /// A sibling's rounds of pulls, each guarded against a storm.
    private(set) var storms: [DeviceID: StormGuard] = [:]
    /// Namespaces to pull again from a sibling once its current pulls end.
    private var pullAgain: [DeviceID: Set<Namespace>] = [:]
    /// Per namespace, the siblings that differ from us in it the way a
    /// sibling whose pull of it runs does: pulled once no pull of it runs,
    /// if they still differ then.
    private var waiting: [Namespace: Set<DeviceID>] = [:]
    /// Siblings whose pulls received rows: our digest goes to each as soon
    /// as its pulls end.
    private var readvertise: Set<DeviceID> = []
    /// A pull that heard nothing for this long is retried once, then ends.
    let timeoutMs: UInt64
    private let configuration: SyncConfiguration

    init(configuration: SyncConfiguration) {
        self.configuration = configuration
        timeoutMs = configuration.sessionTimeoutMilliseconds
    }

    subscript(key: PullKey) -> PullSession? { sessions[key] }
    var isEmpty: Bool { sessions.isEmpty }
    func hasPulls(with sibling: DeviceID) -> Bool { sessions.keys.contains { $0.sibling == sibling } }
    func keys(with sibling: DeviceID) -> [PullKey] { sessions.keys.filter { $0.sibling == sibling } }

    /// Pulls that heard nothing for the timeout.
    func timedOut(nowMs: UInt64) -> [PullKey] {
        sessions.compactMap { nowMs &- $0.value.lastActivityMs >= timeoutMs ? $0.key : nil }
    }

    /// When the first pull times out, if one runs.
    var nextTimeoutMs: UInt64? { sessions.values.map { $0.lastActivityMs &+ timeoutMs }.min() }

    // MARK: Starting

    /// The namespaces to pull from `sibling` now. A pull already running
    /// from it is asked to go again when it ends; one running from another
    /// sibling that holds the same there (`holdsSame(ns, other)`: their last
    /// digests' roots match) makes this one wait for it.
    mutating func notRunning(_ namespaces: [Namespace], from sibling: DeviceID,
                             holdsSame: (Namespace, DeviceID) -> Bool) -> [Namespace] {
        var fresh: [Namespace] = []
        for ns in namespaces {
            let key = PullKey(sibling: sibling, namespace: ns)
            if sessions[key] != nil {
                sessions[key]!.pullAgain = true
            } else if sessions.keys.contains(where: { $0.namespace == ns && holdsSame(ns, $0.sibling) }) {
                waiting[ns, default: []].insert(sibling)
            } else {
                fresh.append(ns)
            }
        }
        return fresh
    }

    func isPulling(_ namespace: Namespace) -> Bool { sessions.keys.contains { $0.namespace == namespace } }

    /// The siblings waiting for the pull of `namespace` that just ended.
    private mutating func releaseWaiting(_ namespace: Namespace) -> [DeviceID] {
        guard !isPulling(namespace), let siblings = waiting.removeValue(forKey: namespace) else { return [] }
        return siblings.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    enum Admission { case admitted, backingOff, stormBegan }

    /// Whether a round of pulls from `sibling` may start now (`StormGuard`).
    mutating func admitRound(with sibling: DeviceID, nowMs: UInt64, ownDigest: [UInt8]) -> Admission {
        var storm = storms[sibling] ?? StormGuard(maxRounds: configuration.stormMaxRounds, windowMs: configuration.stormWindowMilliseconds,
                                                  backoffMs: configuration.stormBackoffMilliseconds)
        defer { storms[sibling] = storm }
        let before = storm.storms
        if storm.admitRound(nowMs: nowMs, ownDigest: ownDigest) { return .admitted }
        return storm.storms > before ? .stormBegan : .backingOff
    }

    mutating func begin(_ session: PullSession) {
        sessions[PullKey(sibling: session.sibling, namespace: session.namespace)] = session
    }

    /// Drops a pull whose first request could not be made (nothing of it
    /// went out, so nothing follows it but the siblings that waited for it).
    mutating func cancel(_ key: PullKey) -> [DeviceID] {
        sessions[key] = nil
        return releaseWaiting(key.namespace)
    }

    // MARK: Running

    /// A request of the pull is going out now; returns the pull as it asks.
    mutating func requesting(_ key: PullKey, items: [RequestItem], nowMs: UInt64) -> PullSession? {
        guard sessions[key] != nil else { return nil }
        sessions[key]!.requestsSent += 1
        sessions[key]!.lastActivityMs = nowMs
        sessions[key]!.lastItems = items
        sessions[key]!.answeredLast = false
        return sessions[key]
    }

    /// Chunks of an answer still arriving keep every pull with the sibling
    /// alive: a row near the size limit may take longer than the timeout to
    /// cross, and a retry would only send it all again.
    mutating func keepAlive(with sibling: DeviceID, nowMs: UInt64) {
        for key in sessions.keys where key.sibling == sibling { sessions[key]?.lastActivityMs = nowMs }
    }

    /// Rows sent ahead of the response proper arrived: the pull neither
    /// moves nor ends.
    mutating func rowsArrived(_ key: PullKey, withRows: Bool, nowMs: UInt64) {
        sessions[key]?.lastActivityMs = nowMs
        if withRows { sessions[key]?.receivedRows = true }
    }

    /// The response proper arrived; with follow-ups the pull takes its next step.
    mutating func answered(_ key: PullKey, by response: ReconcileResponse, hasFollowUps: Bool, nowMs: UInt64) {
        guard var session = sessions[key] else { return }
        session.lastActivityMs = nowMs
        session.answeredLast = true
        if !response.rows.isEmpty { session.receivedRows = true }
        if response.isTruncated { session.pullAgain = true }
        if hasFollowUps { session.step += 1 }
        sessions[key] = session
    }

    /// A silent pull is asked once more only if its last request went
    /// unanswered (an answer lost on the way, likeliest for large ones).
    func mayRetry(_ key: PullKey) -> Bool {
        guard let session = sessions[key] else { return false }
        return !session.answeredLast && !session.retried && !session.lastItems.isEmpty
    }

    /// Marks the one retry; returns the request to send again.
    mutating func retry(_ key: PullKey) -> [RequestItem] {
        guard sessions[key] != nil else { return [] }
        sessions[key]!.retried = true
        sessions[key]!.step += 1
        return sessions[key]!.lastItems
    }

    // MARK: Ending

    /// What ending a pull calls for once it was the last with its sibling.
    struct Ending {
        /// Send the sibling our digest (a pull from it received rows).
        var readvertise = false
        /// Namespaces to pull again as one round, if they still differ.
        var pullAgain: Set<Namespace> = []
        /// Siblings that waited for this pull: pull the namespace from
        /// each that still differs in it.
        var waited: [DeviceID] = []
    }

    /// Ends a pull (nil: it had already ended).
    mutating func end(_ key: PullKey) -> Ending? {
        guard let session = sessions.removeValue(forKey: key) else { return nil }
        var ending = Ending()
        if session.receivedRows { readvertise.insert(key.sibling) }
        if session.pullAgain { pullAgain[key.sibling, default: []].insert(key.namespace) }
        ending.waited = releaseWaiting(key.namespace)
        guard !hasPulls(with: key.sibling) else { return ending }
        ending.readvertise = readvertise.remove(key.sibling) != nil
        ending.pullAgain = pullAgain.removeValue(forKey: key.sibling) ?? []
        return ending
    }

    /// Forgets everything about a sibling no longer on the roster; returns
    /// the pulls that waited for its pulls (sibling and namespace).
    mutating func forget(_ sibling: DeviceID) -> [PullKey] {
        let ended = sessions.keys.filter { $0.sibling == sibling }
        for key in ended { sessions[key] = nil }
        storms[sibling] = nil
        pullAgain[sibling] = nil
        for ns in waiting.keys { waiting[ns]?.remove(sibling) }
        readvertise.remove(sibling)
        return ended.flatMap { key in releaseWaiting(key.namespace).map { PullKey(sibling: $0, namespace: key.namespace) } }
    }

    /// This device was revoked: no pull goes on.
    mutating func stopAll() {
        sessions.removeAll()
        pullAgain.removeAll()
        waiting.removeAll()
        readvertise.removeAll()
    }
}
