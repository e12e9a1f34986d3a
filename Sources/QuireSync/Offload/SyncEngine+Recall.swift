import Foundation
import QuireCore
import QuireStore

/// Recall: ask the note's holders (then the homebases, then any sibling that
/// may hold it resident) one at a time; check every answer against the
/// content hash before storing it; a holder that refuses or sends wrong
/// bytes is reported and not asked again. And verification for fsck.
extension SyncEngine {
    /// Starts recalling the body with `contentHash` (for note `key`, if
    /// known). Callers asking for the same content share one recall.
    public func beginRecall(key: RowKey?, contentHash: [UInt8], timeoutMilliseconds: UInt64) {
        lock.lock(); defer { lock.unlock() }
        defer { wakeRunner() }   // its retries run on the engine's timers
        let nowMs = clock.monotonicMilliseconds()
        if var existing = offloadBook.recalls[contentHash] {
            if existing.result == nil { existing.deadlineMs = max(existing.deadlineMs, nowMs + timeoutMilliseconds) }
            offloadBook.recalls[contentHash] = existing
            if existing.result == nil { return }
        }
        var title = key?.hex ?? Hex.encode(contentHash.prefix(8))
        var recorded: [DeviceID] = []
        if let key {
            if case .note(let n)? = (try? store.row(.notebook, key))??.content { title = n.title }
            recorded = (try? store.offloadHolders(key)) ?? []
        }
        // Recorded holders first, then homebases, then anyone who may hold it.
        let onRoster = Set(roster.siblings(of: me.deviceID).map(\.deviceID))
        var candidates: [DeviceID] = []
        for id in recorded + homebaseSiblings + roster.siblings(of: me.deviceID).map(\.deviceID)
            where onRoster.contains(id) && !candidates.contains(id) { candidates.append(id) }
        // Holders a recall just found silent, and not heard from since, go
        // last; when they are all there is, they are given a moment only.
        let silent = candidates.filter { isStillSilent($0, nowMs: nowMs) }
        candidates = candidates.filter { !silent.contains($0) } + silent
        let wait = !candidates.isEmpty && silent.count == candidates.count
            ? min(timeoutMilliseconds, Self.silentHolderWaitMilliseconds) : timeoutMilliseconds
        var recall = PendingRecall(contentHash: contentHash, key: key, title: title, candidates: candidates, deadlineMs: nowMs + wait)
        recall.stillSilent = wait < timeoutMilliseconds
        if candidates.isEmpty {
            recall.result = .failure(OffloadError("cannot recall '\(title)': no other device of the account could hold its body"))
        }
        offloadBook.recalls[contentHash] = recall
        if recall.result == nil { askNextHolder(contentHash, nowMs: nowMs) }
    }

    /// The result of a recall once it is over (success: the body, now
    /// resident here), nil while it runs. Reading a finished result forgets it.
    public func recallResult(contentHash: [UInt8]) -> Result<[UInt8], OffloadError>? {
        lock.lock(); defer { lock.unlock() }
        guard let result = offloadBook.recalls[contentHash]?.result else { return nil }
        offloadBook.recalls[contentHash] = nil
        return result
    }

    /// Recalls and waits (from any thread but the engine's): the body,
    /// checked against `contentHash` and stored resident (no version bump).
    public func recall(key: RowKey?, contentHash: [UInt8], timeout: Double) throws(OffloadError) -> [UInt8] {
        if let key, case .note(let n)? = (try? store.row(.notebook, key))??.content, let body = n.body, n.contentHash == contentHash {
            return body   // already resident (another reader recalled it)
        }
        beginRecall(key: key, contentHash: contentHash, timeoutMilliseconds: UInt64(max(timeout, 0.05) * 1000))
        while true {
            if let result = peekRecall(contentHash, key: key) {
                lock.lock()
                offloadBook.recalls[contentHash] = nil
                lock.unlock()
                return try result.get()
            }
            guard isRunningForCallers else { throw OffloadError("cannot recall: sync is not running") }
            waitForOffloadProgress()
        }
    }

    /// Recalls many notes, a window at a time, and waits. `progress` sees
    /// each outcome as it happens (on the calling thread).
    public func recall(_ notes: [(key: RowKey, contentHash: [UInt8], title: String, size: Int)], timeout: Double, window: Int = 16,
                       progress: (OffloadOutcome) -> Void = { _ in }) -> [OffloadOutcome] {
        var queue = notes[...]
        var active: [(key: RowKey, contentHash: [UInt8], title: String, size: Int)] = []
        var outcomes: [OffloadOutcome] = []
        let timeoutMs = UInt64(max(timeout, 0.05) * 1000)
        while !queue.isEmpty || !active.isEmpty {
            while active.count < window, let next = queue.popFirst() {
                beginRecall(key: next.key, contentHash: next.contentHash, timeoutMilliseconds: timeoutMs)
                active.append(next)
            }
            var still: [(key: RowKey, contentHash: [UInt8], title: String, size: Int)] = []
            for item in active {
                guard let result = peekRecall(item.contentHash, key: item.key) else { still.append(item); continue }
                lock.lock()
                let finished = offloadBook.recalls.removeValue(forKey: item.contentHash)
                lock.unlock()
                let holder = finished?.answeredBy
                // A success after a refusal or wrong bytes still reports them.
                let problems = finished?.problems ?? []
                let outcome: OffloadOutcome
                switch result {
                case .success(let body):
                    outcome = OffloadOutcome(key: item.key, title: item.title, bytes: body.count, result: .done,
                                             reason: problems.isEmpty ? nil : problems.joined(separator: "; "), holders: holder.map { [$0] } ?? [])
                case .failure(let error):
                    outcome = OffloadOutcome(key: item.key, title: item.title, bytes: item.size, result: .failed, reason: error.description)
                }
                outcomes.append(outcome)
                progress(outcome)
            }
            active = still
            if !active.isEmpty {
                guard isRunningForCallers else {
                    for item in active + Array(queue) {
                        let o = OffloadOutcome(key: item.key, title: item.title, bytes: item.size, result: .failed, reason: "sync stopped")
                        outcomes.append(o)
                        progress(o)
                    }
                    return outcomes
                }
                waitForOffloadProgress()
            }
        }
        return outcomes
    }

    private func peekRecall(_ hash: [UInt8], key: RowKey?) -> Result<[UInt8], OffloadError>? {
        lock.lock(); defer { lock.unlock() }
        if let recall = offloadBook.recalls[hash] { return recall.result }
        // Another caller sharing this recall took the result: the body is resident now.
        if let body = try? store.servableBody(contentHash: hash, key: key) { return .success(body) }
        return .failure(OffloadError("the recall ended without a body"))
    }

    var isRunningForCallers: Bool {
        lock.lock(); defer { lock.unlock() }
        return isAttached
    }

    /// Sends the request to the next holder not excluded, round-robin.
    private func askNextHolder(_ hash: [UInt8], nowMs: UInt64) {
        guard var recall = offloadBook.recalls[hash], recall.result == nil else { return }
        let n = recall.candidates.count
        var chosen: DeviceID? = nil
        for step in 0..<n {
            let candidate = recall.candidates[(recall.next + step) % n]
            if !recall.excluded.contains(candidate) {
                chosen = candidate
                recall.next = (recall.next + step + 1) % n
                break
            }
        }
        guard let target = chosen else {
            recall.result = .failure(OffloadError(describeFailure(recall, timedOut: false)))
            offloadBook.recalls[hash] = recall
            note(describeFailure(recall, timedOut: false))
            return
        }
        if !recall.asked.contains(target) { recall.asked.append(target) }
        recall.nextAttemptMs = nowMs + offloadBook.timing.recallRetryMilliseconds
        offloadBook.recalls[hash] = recall
        send(.recallRequest, RecallRequest(contentHash: hash, key: recall.key).encoded(), to: target)
    }

    func handleRecallResponse(_ response: RecallResponse, from sender: DeviceID, nowMs: UInt64) {
        guard var recall = offloadBook.recalls[response.contentHash], recall.result == nil else { return }
        if let body = response.body {
            if Note.bodyDigest(body) == response.contentHash {
                do {
                    let holders = recall.key.flatMap { try? store.offloadHolders($0) } ?? []
                    try store.restoreBody(body, contentHash: response.contentHash, key: recall.key)
                    recall.result = .success(body)
                    recall.answeredBy = sender
                    offloadBook.missingBodies[response.contentHash] = nil   // resident again: nothing is missing
                    // Resident again: the copies the offload counted are no
                    // longer relied on (homebases pin nothing).
                    let homebases = Set(homebaseSiblings), others = holders.filter { !homebases.contains($0) && $0 != me.deviceID }
                    if !others.isEmpty {
                        let release = HoldRelease(hashes: [response.contentHash], epoch: offloadBook.nextEpoch(now: clock.now())).encoded()
                        for holder in others { send(.holdRelease, release, to: holder) }
                    }
                } catch {
                    recall.result = .failure(OffloadError("cannot store the recalled body of '\(recall.title)': \(error.message)"))
                }
                offloadBook.recalls[response.contentHash] = recall
                signalOffloadProgress()
                return
            }
            // Never stored: the bytes are not what the note committed to.
            let problem = "\(name(of: sender)) answered the recall of '\(recall.title)' with wrong bytes (they do not match the content hash): rejected"
            note(problem)
            recall.problems.append(problem)
        } else {
            recall.problems.append("\(name(of: sender)): \(response.refusal ?? "refused")")
        }
        recall.excluded.insert(sender)
        // Only holders a recall just found silent are left (a sibling said
        // it does not hold the body, the homebase is off): they get the
        // moment `beginRecall` gives them when they are all there is.
        let left = recall.candidates.filter { !recall.excluded.contains($0) }
        if !left.isEmpty, left.allSatisfy({ isStillSilent($0, nowMs: nowMs) }) {
            recall.deadlineMs = min(recall.deadlineMs, nowMs + Self.silentHolderWaitMilliseconds)
            recall.stillSilent = true
        }
        offloadBook.recalls[response.contentHash] = recall
        askNextHolder(response.contentHash, nowMs: nowMs)
        signalOffloadProgress()
    }

    func advanceRecalls(nowMs: UInt64) {
        for (hash, recall) in offloadBook.recalls where recall.result == nil {
            if nowMs >= recall.deadlineMs {
                var over = recall
                for holder in recall.asked where !recall.excluded.contains(holder) { offloadBook.silentHolders[holder] = nowMs }
                let text = describeFailure(recall, timedOut: true)
                over.result = .failure(OffloadError(text))
                offloadBook.recalls[hash] = over
                note(text)
                signalOffloadProgress()
            } else if nowMs >= recall.nextAttemptMs {
                askNextHolder(hash, nowMs: nowMs)
            }
        }
    }

    /// A holder a recall found silent within the last minute, with no
    /// frame from it since.
    private func isStillSilent(_ holder: DeviceID, nowMs: UInt64) -> Bool {
        guard let at = offloadBook.silentHolders[holder], nowMs &- at < Self.silentHolderMilliseconds else { return false }
        return (siblings[holder]?.lastSeenMs ?? 0) <= at
    }

    /// How long a recall that found a holder silent spares the next ones
    /// the wait (unless the holder is heard from meanwhile), and the wait
    /// they are given instead.
    static let silentHolderMilliseconds: UInt64 = 60_000
    static let silentHolderWaitMilliseconds: UInt64 = 1_000

    private func describeFailure(_ recall: PendingRecall, timedOut: Bool) -> String {
        let silent = recall.asked.filter { !recall.excluded.contains($0) }
        var parts: [String] = []
        if !silent.isEmpty {
            parts.append("holder " + silent.map { "\(name(of: $0)) (\($0.hex.prefix(12)))" }.joined(separator: ", ")
                         + (silent.count == 1 ? " is" : " are") + " unreachable: no answer"
                         + (timedOut ? " within the timeout" : ""))
        }
        if recall.stillSilent, !silent.isEmpty { parts[0] += " (nor to a recall shortly before: waited \(Self.silentHolderWaitMilliseconds / 1000) s only)" }
        parts += recall.problems
        if parts.isEmpty { parts.append("no holder answered") }
        return "cannot recall '\(recall.title)': " + parts.joined(separator: "; ")
    }

    // MARK: Verification (fsck)

    /// Asks each holder which of `items` it still holds, re-hashed on the
    /// holder. Returns, per holder, the hashes it confirmed, or nil when it
    /// did not answer within `timeout` seconds.
    public func verifyHolds(_ items: [DeviceID: [HoldQuery.Item]], timeout: Double) -> [DeviceID: Set<[UInt8]>?] {
        var ids: [[UInt8]] = []
        lock.lock()
        let nowMs = clock.monotonicMilliseconds()
        let deadline = nowMs + UInt64(max(timeout, 0.05) * 1000)
        for (holder, list) in items where holder != me.deviceID {
            for part in stride(from: 0, to: list.count, by: OffloadLimits.maxQueryItems) {
                let slice = Array(list[part..<min(list.count, part + OffloadLimits.maxQueryItems)])
                let id = deps.random.bytes(8)
                offloadBook.queries[id] = PendingQuery(target: holder, items: slice,
                                                       nextRetryMs: nowMs + offloadBook.timing.retryMilliseconds, batch: nil)
                ids.append(id)
                send(.holdQuery, HoldQuery(queryID: id, items: slice).encoded(), to: holder)
            }
        }
        lock.unlock()
        wakeRunner()
        while true {
            lock.lock()
            let pending = ids.filter { offloadBook.queries[$0]?.answer == nil }
            let expired = clock.monotonicMilliseconds() >= deadline || !isAttached
            if pending.isEmpty || expired {
                var result: [DeviceID: Set<[UInt8]>?] = [:]
                for holder in items.keys where holder != me.deviceID { result[holder] = Set<[UInt8]>() }
                for id in ids {
                    guard let q = offloadBook.queries.removeValue(forKey: id) else { continue }
                    if let answer = q.answer, case .some(.some(var held)) = result[q.target] {
                        held.formUnion(answer.held)
                        result[q.target] = .some(held)
                    } else {
                        result[q.target] = .some(nil)
                    }
                }
                lock.unlock()
                return result
            }
            lock.unlock()
            waitForOffloadProgress()
        }
    }
}
