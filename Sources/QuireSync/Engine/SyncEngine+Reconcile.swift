import QuireCore
import QuireStore

/// Pulls (this device asks) and answers (a sibling asks). Both ends pull
/// when they see each other's digest, so there is no leader: every merge is
/// commutative and idempotent, and cross-firing is safe.
extension SyncEngine {
    /// One round: a pull of each divergent namespace not already being
    /// pulled. A pull already running is asked to go again when it ends.
    func startPulls(from sender: DeviceID, namespaces: [Namespace], nowMs: UInt64) {
        guard phase != .revoked, let sibling = siblings[sender] else { return }
        let theirs = sibling.lastDigest
        let fresh = pulls.notRunning(namespaces.filter(configuration.pulledNamespaces.contains), from: sender) { ns, other in
            guard let root = theirs?.roots[ns], let digest = siblings[other]?.lastDigest else { return false }
            return digest.generation == theirs?.generation && digest.roots[ns] == root
        }
        guard !fresh.isEmpty else { return }
        let ownDigest = (try? currentDigest().bytes) ?? []
        switch pulls.admitRound(with: sender, nowMs: nowMs, ownDigest: ownDigest) {
        case .admitted:
            break
        case .backingOff:
            return
        case .stormBegan:
            let divergent = Set(sibling.divergent + namespaces).sorted()
            note("storm with '\(sibling.member.name)': more than \(configuration.stormMaxRounds) rounds in \(configuration.stormWindowMilliseconds / 1000) s; backing off \(configuration.stormBackoffMilliseconds / 1000) s. Still out of sync in: \(divergent.map(\.name).joined(separator: ", "))")
            return
        }
        siblings.update(sender) {
            $0.rounds += 1
            $0.isReconciling = true
        }
        metrics.rounds += 1
        for ns in fresh {
            let key = PullKey(sibling: sender, namespace: ns)
            let session = PullSession(namespace: ns, sibling: sender, id: deps.random.bytes(8), nowMs: nowMs)
            pulls.begin(session)
            do {
                let items = try store.withReadSnapshot { snapshot in
                    try Reconciler(threshold: configuration.keyListThreshold)
                        .initialItems(StoreRangeSource(snapshot: snapshot, namespace: ns), salt: session.id)
                }
                sendRequest(key, items: items, nowMs: nowMs)
            } catch {
                let waited = pulls.cancel(key)
                report("preparing a pull of \(ns)", error)
                for sibling in waited { startWaitedPull(PullKey(sibling: sibling, namespace: ns), nowMs: nowMs) }
            }
        }
    }

    func sendRequest(_ key: PullKey, items: [RequestItem], nowMs: UInt64) {
        guard let session = pulls.requesting(key, items: items, nowMs: nowMs) else { return }
        let generation = (try? currentDigest().digest.generation) ?? deps.generation()
        let request = ReconcileRequest(namespace: key.namespace, session: session.id, step: session.step,
                                       generation: generation, items: items)
        metrics.requestsSent += 1
        metrics.maxPullRequests = max(metrics.maxPullRequests, session.requestsSent)
        if !send(.reconcileRequest, request.encoded(), to: key.sibling) { finishPull(key, nowMs: nowMs) }
    }

    func handleRequest(_ request: ReconcileRequest, from sender: DeviceID) throws {
        let mine = try currentDigest()
        guard request.generation == mine.digest.generation else {
            count(.generationGap)
            return
        }
        siblings.update(sender) { $0.isReconciling = true }
        var known: [RowKey: [UInt8]] = [:]
        for (id, row) in unsyncable where id.namespace == request.namespace { if let leaf = row.leaf { known[id.key] = leaf } }
        var responder = ReconcileResponder(store: store, threshold: configuration.keyListThreshold,
                                           maxRowBytes: configuration.maxResponseRowBytes, knownUnsendable: known)
        responder.streamLimit = configuration.maxStreamedRowBytes
        responder.streamBatchBytes = configuration.streamBatchRowBytes
        responder.stream = { [self] batch in
            var batch = batch
            batch.generation = mine.digest.generation
            let (payload, rowBytes) = batch.encodedCountingRows()
            metrics.rowBytesOut += rowBytes
            guard send(.reconcileResponse, payload, to: sender) else { return false }
            metrics.responsesSent += 1
            metrics.rowsStreamed += batch.rows.count
            return true
        }
        let answer = try responder.answer(request)
        recordUnsendable(answer.unsendable, asked: request.namespace)
        // Rows too large for the response go first, each alone (chunked):
        // on an ordered relay they are merged before the response proper
        // ends the pull, so a pull that goes again does not ask for them.
        for var alone in answer.alone {
            alone.generation = mine.digest.generation
            let (payload, rowBytes) = alone.encodedCountingRows()
            metrics.rowBytesOut += rowBytes
            guard send(.reconcileResponse, payload, to: sender) else { return }
            metrics.responsesSent += 1
            metrics.rowsSentAlone += 1
        }
        // Nothing differs: send nothing at all.
        guard var response = answer.response else { return }
        response.generation = mine.digest.generation
        let (payload, rowBytes) = response.encodedCountingRows()
        metrics.rowBytesOut += rowBytes
        if send(.reconcileResponse, payload, to: sender) { metrics.responsesSent += 1 }
    }

    /// `rowBytes`: the encoded size of its rows as they arrived (`decodeCountingRows`).
    func handleResponse(_ response: ReconcileResponse, rowBytes: Int, from sender: DeviceID, nowMs: UInt64) throws {
        // Rows from across a barrier (a response that crossed a commit in
        // flight) are the ones that resurrect: refused like a request would be.
        if let theirs = response.generation, theirs != (try currentDigest().digest.generation) {
            count(.generationGap)
            return
        }
        let key = PullKey(sibling: sender, namespace: response.namespace)
        if response.undecodableRows > 0 { count(.badPayload, response.undecodableRows) }
        metrics.rowBytesIn += rowBytes
        let rows = certifiedRows(rowsWithinLimits(response.rows, from: sender))
        if !rows.isEmpty {
            let (applied, _) = try store.apply(rows, from: sender)
            deps.trace?("applied \(applied) of \(rows.count) rows from \(name(of: sender))")
            metrics.rowsApplied += applied
            if applied > 0 {
                invalidateDigest()
                markDirty(nowMs: nowMs)
                lastSeq = (try? store.changeSequence()) ?? lastSeq
                if !unsyncable.isEmpty { revalidateUnsyncable() }
                if response.namespace == .devices { try reloadRoster() }
                if let digest = try? currentDigest() { refreshSyncFlags(digest.digest) }
            }
        }
        guard let session = pulls[key], session.id == response.session else {
            // The answer to a pull that already ended: its rows are merged,
            // nothing more to ask. Tell the sibling where we stand.
            if !response.rows.isEmpty && !pulls.hasPulls(with: sender) { sendDigest(to: sender) }
            return
        }
        if response.isRowsOnly {
            // A large row sent alone: the response proper follows it.
            pulls.rowsArrived(key, withRows: !response.rows.isEmpty, nowMs: nowMs)
            return
        }
        let followUps = try store.withReadSnapshot { snapshot in
            try Reconciler(threshold: configuration.keyListThreshold)
                .followUps(response, StoreRangeSource(snapshot: snapshot, namespace: session.namespace), salt: session.id)
        }
        pulls.answered(key, by: response, hasFollowUps: !followUps.isEmpty, nowMs: nowMs)
        if followUps.isEmpty {
            finishPull(key, nowMs: nowMs)
        } else {
            sendRequest(key, items: followUps, nowMs: nowMs)
        }
    }

    /// A pull met silence. Silence usually means the responder had nothing
    /// to give, but on a lossy relay it may be a lost answer (large chunked
    /// responses are the likeliest to be shed): ask once more, then let go.
    func pullTimedOut(_ key: PullKey, nowMs: UInt64) {
        guard let session = pulls[key] else { return }
        deps.trace?("pull of \(key.namespace) from \(name(of: key.sibling)) timed out (answered last: \(session.answeredLast))")
        if pulls.mayRetry(key) && stillDiffers(key) {
            sendRequest(key, items: pulls.retry(key), nowMs: nowMs)
            return
        }
        finishPull(key, nowMs: nowMs)
    }

    /// True while the sibling's last digest and ours differ in the namespace.
    func stillDiffers(_ key: PullKey) -> Bool {
        guard let theirs = siblings[key.sibling]?.lastDigest, let mine = try? currentDigest() else { return false }
        return theirs.roots[key.namespace] != mine.digest.roots[key.namespace]
    }

    /// Pulls of namespaces whose roots now match the sibling's are moot: end
    /// them at once rather than waiting out a silent responder.
    func endSettledPulls(with sibling: DeviceID, nowMs: UInt64) {
        for key in pulls.keys(with: sibling) where !stillDiffers(key) { finishPull(key, nowMs: nowMs) }
    }

    /// Ends a pull. Once no pull with that sibling is left, a pull that
    /// received rows re-advertises to it immediately, targeted and even if
    /// nothing changed: the sibling may hold rows we lack or lack rows we
    /// hold, and only our digest tells it to pull. Waiting for the debounce
    /// here would cost a debounce per round for nothing.
    func finishPull(_ key: PullKey, nowMs: UInt64) {
        guard let ending = pulls.end(key) else { return }
        if ending.readvertise { sendDigest(to: key.sibling) }
        // Pull again as one round, once every pull with this sibling ended,
        // for the namespaces that still differ from its last digest.
        let again = ending.pullAgain
        if !again.isEmpty, let theirs = siblings[key.sibling]?.lastDigest, let mine = try? currentDigest(),
           theirs.generation == mine.digest.generation {
            let still = again.filter { theirs.roots[$0] != mine.digest.roots[$0] }.sorted()
            if !still.isEmpty { startPulls(from: key.sibling, namespaces: still, nowMs: nowMs) }
        }
        for sibling in ending.waited { startWaitedPull(PullKey(sibling: sibling, namespace: key.namespace), nowMs: nowMs) }
    }

    /// A sibling that waited for another's pull of the namespace: pulled
    /// now if its last digest still differs from ours there (what the other
    /// pull brought often settles it).
    func startWaitedPull(_ key: PullKey, nowMs: UInt64) {
        guard let theirs = siblings[key.sibling]?.lastDigest, let mine = try? currentDigest(),
              theirs.generation == mine.digest.generation, theirs.roots[key.namespace] != mine.digest.roots[key.namespace] else { return }
        startPulls(from: key.sibling, namespaces: [key.namespace], nowMs: nowMs)
    }
}
