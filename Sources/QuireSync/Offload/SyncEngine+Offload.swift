import Foundation
import QuireCore
import QuireStore

/// The offloading side: send each body to the homebases, count durable acks
/// (and resident copies other siblings report), and only then clear the
/// body with `markOffloaded`, the one mutator, which refuses if the note
/// changed meanwhile.
///
/// Usable two ways: `beginOffload` + `offloadProgress` (non-blocking, for a
/// simulator that drives `step()` and the clock itself), or `offload`,
/// which blocks the calling thread until the engine thread has settled
/// every note. Every deadline is measured on the engine's injected clock.
extension SyncEngine {
    /// Starts offloading `keys` with `copies` required copies (at least one
    /// of them durable on a homebase). Returns the batch to poll.
    public func beginOffload(_ keys: [RowKey], copies: Int, timeoutMilliseconds: UInt64) -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        defer { wakeRunner() }   // its retries run on the engine's timers
        let nowMs = clock.monotonicMilliseconds()
        let id = offloadBook.makeID()
        var batch = OffloadBatch(copies: max(1, copies), timeoutMs: timeoutMilliseconds, queue: keys, lastProgressMs: nowMs)
        var refusal: String? = nil
        if isHomebase {
            refusal = "this device is a homebase: it keeps every body resident and never offloads"
        } else if homebaseSiblings.isEmpty {
            refusal = "no homebase on the roster to hold the body (make one with 'quire role homebase' on a device with a big disk)"
        } else if phase == .revoked {
            refusal = "this device was revoked from the account"
        }
        if let refusal {
            batch.outcomes = keys.map { failedOutcome($0, refusal) }
            batch.queue = []
        }
        offloadBook.batches[id] = batch
        advanceBatches(nowMs: nowMs)
        return id
    }

    /// Outcomes so far, in the order notes finished, and whether the batch
    /// is over. A finished batch is forgotten once reported.
    public func offloadProgress(_ batch: UInt64) -> (outcomes: [OffloadOutcome], isFinished: Bool) {
        lock.lock(); defer { lock.unlock() }
        guard let b = offloadBook.batches[batch] else { return ([], true) }
        if b.isFinished { offloadBook.batches[batch] = nil }
        return (b.outcomes, b.isFinished)
    }

    /// Offloads and waits. `progress` sees each outcome as it happens (on
    /// the calling thread). Returns one outcome per key.
    public func offload(_ keys: [RowKey], copies: Int = 1, timeout: Double = 10,
                        progress: (OffloadOutcome) -> Void = { _ in }) -> [OffloadOutcome] {
        let id = beginOffload(keys, copies: copies, timeoutMilliseconds: UInt64(max(timeout, 0.1) * 1000))
        var reported = 0
        while true {
            let (outcomes, finished) = offloadProgress(id)
            for o in outcomes.dropFirst(reported) { progress(o) }
            reported = outcomes.count
            if finished { return outcomes }
            waitForOffloadProgress()
        }
    }

    /// Sleeps until the engine thread reports progress (or a short while:
    /// the real-time wait only paces the check, it decides nothing).
    func waitForOffloadProgress() {
        offloadBook.progress.lock()
        _ = offloadBook.progress.wait(until: Date(timeIntervalSinceNow: 0.05))
        offloadBook.progress.unlock()
    }

    // MARK: Engine side (under the lock)

    func handleAck(_ ack: OffloadAck, from sender: DeviceID, nowMs: UInt64) {
        guard let batchID = offloadBook.batchOfOperation[ack.opID], var batch = offloadBook.batches[batchID],
              var op = batch.active[ack.opID], op.contentHash == ack.contentHash, op.homebases.contains(sender) else { return }
        if let refusal = ack.refusal {
            op.refused[sender] = refusal
        } else if !op.acked.contains(sender) {
            op.acked.append(sender)
        }
        batch.active[ack.opID] = op
        batch.lastProgressMs = nowMs
        offloadBook.batches[batchID] = batch
        settle(batchID, opID: ack.opID, nowMs: nowMs)
        signalOffloadProgress()
    }

    func countResidentCopies(_ answer: HoldAnswer, from sender: DeviceID, batch batchID: UInt64, nowMs: UInt64) {
        guard var batch = offloadBook.batches[batchID] else { return }
        let held = Set(answer.held)
        var touched: [[UInt8]] = []
        for (opID, var op) in batch.active where held.contains(op.contentHash) && !op.homebases.contains(sender)
            && !op.residentElsewhere.contains(sender) {
            op.residentElsewhere.append(sender)
            batch.active[opID] = op
            touched.append(opID)
        }
        guard !touched.isEmpty else { return }
        batch.lastProgressMs = nowMs
        offloadBook.batches[batchID] = batch
        for opID in touched { settle(batchID, opID: opID, nowMs: nowMs) }
    }

    /// Finishes an operation once enough copies are confirmed, or once every
    /// homebase refused it.
    private func settle(_ batchID: UInt64, opID: [UInt8], nowMs: UInt64) {
        guard let batch = offloadBook.batches[batchID], let op = batch.active[opID] else { return }
        let holders: [DeviceID], required: Int
        do { (holders, required, _) = try counted(op) } catch {
            return finish(batchID, opID, OffloadOutcome(key: op.key, title: op.title, bytes: op.body.count, result: .failed,
                                                        reason: "cannot read which siblings counted this copy: \(error.message); nothing was cleared"), nowMs: nowMs)
        }
        let confirmed = holders.count
        var outcome: OffloadOutcome? = nil
        if !op.acked.isEmpty && confirmed >= required {
            do {
                try store.markOffloaded(op.key, contentHash: op.contentHash, holders: holders)
                outcome = OffloadOutcome(key: op.key, title: op.title, bytes: op.body.count, result: .done, holders: holders)
            } catch {
                // Edited while in flight (the new body stays), or a store
                // failure: either way nothing was cleared.
                outcome = OffloadOutcome(key: op.key, title: op.title, bytes: op.body.count, result: .failed,
                                         reason: error.message, holders: holders)
            }
        } else if op.acked.isEmpty && op.refused.count == op.homebases.count {
            let why = op.refused.sorted { $0.key < $1.key }.map { "\(name(of: $0.key)) refused: \($0.value)" }.joined(separator: "; ")
            outcome = OffloadOutcome(key: op.key, title: op.title, bytes: op.body.count, result: .failed,
                                     reason: why + "; the body stays resident")
        } else if !op.acked.isEmpty && op.acked.count + op.refused.count == op.homebases.count
                    && roster.siblings(of: me.deviceID).count == op.homebases.count {
            // Every homebase answered and no other device could add a copy.
            outcome = OffloadOutcome(key: op.key, title: op.title, bytes: op.body.count, result: .failed,
                                     reason: "only \(confirmed) of \(required) required copies can exist (the account has \(op.homebases.count) homebase(s) and no other device holds it); the body stays resident")
        }
        guard let outcome else { return }
        finish(batchID, opID, outcome, nowMs: nowMs)
    }

    /// The copies that count for `op` now, and how many it needs. The pins
    /// are read at each count: a sibling may have counted this copy since
    /// the operation began. A sibling that counted it (`relying`) is
    /// offloading its own copy on the strength of this one, so its copy
    /// does not count here: two devices each counting the other's copy
    /// would both drop.
    private func counted(_ op: OffloadOperation) throws(StoreError) -> (holders: [DeviceID], required: Int, relying: [DeviceID]) {
        let pins = try activePins(op.contentHash)
        let relying = pins.map(\.owner)
        let holders = op.acked + op.residentElsewhere.filter { !relying.contains($0) }
        return (holders, max(op.copies, pins.map(\.required).max() ?? 0), relying.filter(op.residentElsewhere.contains))
    }

    /// The pins on this device's copy made by devices still on the roster:
    /// a revoked device's offload relies on nothing here any more.
    private func activePins(_ contentHash: [UInt8]) throws(StoreError) -> [(owner: DeviceID, required: Int)] {
        try store.copyPins(contentHash: contentHash).filter { pin in roster[pin.owner].map { !$0.isRevoked } ?? false }
    }

    private func finish(_ batchID: UInt64, _ opID: [UInt8], _ outcome: OffloadOutcome, nowMs: UInt64) {
        guard var batch = offloadBook.batches[batchID] else { return }
        if outcome.result != .done, let op = batch.active[opID] { releasePins(of: op) }
        batch.active[opID] = nil
        batch.outcomes.append(outcome)
        batch.lastProgressMs = nowMs
        offloadBook.batchOfOperation[opID] = nil
        offloadBook.batches[batchID] = batch
        signalOffloadProgress()
    }

    /// Timers of every batch: time-outs, retries (same op id), and starting
    /// queued notes within the window.
    func advanceBatches(nowMs: UInt64) {
        for batchID in offloadBook.batches.keys.sorted() {
            guard var batch = offloadBook.batches[batchID], !batch.isFinished else { continue }
            if nowMs &- batch.lastProgressMs >= batch.timeoutMs && !batch.active.isEmpty {
                timeOut(&batch, nowMs: nowMs)
                offloadBook.batches[batchID] = batch
                signalOffloadProgress()
                continue
            }
            var short: [OffloadOperation] = []
            for (opID, var op) in batch.active where nowMs >= op.nextRetryMs {
                let put = OffloadPut(opID: op.opID, contentHash: op.contentHash, key: op.key, body: op.body).encoded()
                for h in op.homebases where !op.acked.contains(h) && op.refused[h] == nil { send(.offloadPut, put, to: h) }
                op.nextRetryMs = nowMs + offloadBook.timing.retryMilliseconds
                batch.active[opID] = op
                if op.copies > 1 { short.append(op) }
            }
            while !batch.queue.isEmpty && batch.active.count < offloadBook.timing.window
                    && (batch.active.isEmpty || batch.activeBytes < offloadBook.timing.windowBytes) {
                let key = batch.queue.removeFirst()
                switch prepareOperation(key, copies: batch.copies, nowMs: nowMs) {
                case .failure(let box):
                    batch.outcomes.append(box.outcome)
                case .success(let op):
                    offloadBook.batchOfOperation[op.opID] = batchID
                    batch.active[op.opID] = op
                    let put = OffloadPut(opID: op.opID, contentHash: op.contentHash, key: op.key, body: op.body).encoded()
                    for h in op.homebases { send(.offloadPut, put, to: h) }
                    if op.copies > 1 { short.append(op) }
                }
            }
            var epoch: UInt64 = 0
            if !short.isEmpty {
                epoch = offloadBook.nextEpoch(now: clock.now())
                for op in short { batch.active[op.opID]?.pinEpoch = epoch }
            }
            offloadBook.batches[batchID] = batch
            if !short.isEmpty { askForResidentCopies(short, batch: batchID, epoch: epoch, nowMs: nowMs) }
            signalOffloadProgress()
        }
    }

    /// An offload that cleared nothing no longer relies on the copies it
    /// counted: their devices may drop the pins (a lost release only keeps
    /// a pin, which asks for more copies, never fewer).
    func releasePins(of op: OffloadOperation) {
        guard op.pinEpoch > 0 else { return }
        let release = HoldRelease(hashes: [op.contentHash], epoch: op.pinEpoch).encoded()
        for sibling in op.residentElsewhere { send(.holdRelease, release, to: sibling) }
    }

    /// Asks every non-homebase sibling which of these bodies it holds
    /// resident; each "yes" counts as one more copy, and the sibling pins
    /// what it said yes to, at `epoch`.
    private func askForResidentCopies(_ ops: [OffloadOperation], batch: UInt64, epoch: UInt64, nowMs: UInt64) {
        let homebases = Set(homebaseSiblings)
        let items = ops.map { HoldQuery.Item(contentHash: $0.contentHash, key: $0.key) }
        let counting = ops.map(\.copies).max() ?? 1
        for sibling in roster.siblings(of: me.deviceID) where !homebases.contains(sibling.deviceID) {
            for part in stride(from: 0, to: items.count, by: OffloadLimits.maxQueryItems) {
                let slice = Array(items[part..<min(items.count, part + OffloadLimits.maxQueryItems)])
                let id = deps.random.bytes(8)
                offloadBook.queries[id] = PendingQuery(target: sibling.deviceID, items: slice, nextRetryMs: .max, batch: batch)
                send(.holdQuery, HoldQuery(queryID: id, items: slice, counting: counting, epoch: epoch).encoded(), to: sibling.deviceID)
            }
        }
        // Answers that never come are forgotten with the batch.
        offloadBook.queries = offloadBook.queries.filter { $0.value.batch == nil || offloadBook.batches[$0.value.batch!] != nil }
    }

    private func prepareOperation(_ key: RowKey, copies: Int, nowMs: UInt64) -> Result<OffloadOperation, OffloadOutcomeBox> {
        let row: Row?
        do { row = try store.row(.notebook, key) } catch {
            return .failure(OffloadOutcomeBox(failedOutcome(key, "cannot read the note: \(error.message)")))
        }
        guard let row, !row.isTombstone, case .note(let note)? = row.content else {
            return .failure(OffloadOutcomeBox(failedOutcome(key, "no such note (deleted?)")))
        }
        guard let body = note.body else {
            return .failure(OffloadOutcomeBox(OffloadOutcome(key: key, title: note.title, bytes: 0, result: .skipped, reason: "already offloaded")))
        }
        guard !body.isEmpty else {
            return .failure(OffloadOutcomeBox(OffloadOutcome(key: key, title: note.title, bytes: 0, result: .skipped, reason: "empty body: nothing to free")))
        }
        guard body.count <= OffloadLimits.maxBodyBytes else {
            return .failure(OffloadOutcomeBox(OffloadOutcome(key: key, title: note.title, bytes: body.count, result: .failed,
                                                             reason: "the body is larger than 64 MiB, the most one offload carries")))
        }
        // A sibling's offload that counted this copy among more copies than
        // this batch asks for is owed as many after this one goes.
        let pinned: Int
        do { pinned = try activePins(note.contentHash).map(\.required).max() ?? 0 } catch {
            return .failure(OffloadOutcomeBox(failedOutcome(key, "cannot read which siblings counted this copy: \(error.message)")))
        }
        return .success(OffloadOperation(opID: deps.random.bytes(16), key: key, title: note.title, contentHash: note.contentHash,
                                         body: body, homebases: homebaseSiblings, copies: max(copies, pinned),
                                         nextRetryMs: nowMs + offloadBook.timing.retryMilliseconds))
    }

    private func timeOut(_ batch: inout OffloadBatch, nowMs: UInt64) {
        let seconds = Double(batch.timeoutMs) / 1000
        let wait = seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
        var firstReason = ""
        for (opID, op) in batch.active.sorted(by: { $0.value.key < $1.value.key }) {
            let silent = op.homebases.filter { !op.acked.contains($0) && op.refused[$0] == nil }
            let reason: String
            if op.acked.isEmpty {
                reason = "no homebase confirmed a durable copy within \(wait): "
                    + silent.map { "\(name(of: $0)) did not answer" }.joined(separator: ", ")
                    + " (offline or unreachable?); nothing was cleared, the body stays resident"
            } else {
                let (holders, required, relying) = (try? counted(op)) ?? (op.acked + op.residentElsewhere, op.copies, [])
                reason = "only \(holders.count) of \(required) required copies confirmed within \(wait) "
                    + (required > batch.copies ? "(a sibling's offload counted this copy among \(required)) " : "")
                    + "(held by \(holders.map { name(of: $0) }.joined(separator: ", "))"
                    + (relying.isEmpty ? "" : "; not counted: \(relying.map { name(of: $0) }.joined(separator: ", ")), offloading its own copy on the strength of this one")
                    + "); nothing was cleared"
            }
            if firstReason.isEmpty { firstReason = reason }
            releasePins(of: op)
            batch.outcomes.append(OffloadOutcome(key: op.key, title: op.title, bytes: op.body.count, result: .failed, reason: reason,
                                                 holders: op.acked + op.residentElsewhere))
            offloadBook.batchOfOperation[opID] = nil
        }
        batch.active.removeAll()
        // No progress for a whole timeout: the rest would wait just as long.
        for key in batch.queue { batch.outcomes.append(failedOutcome(key, firstReason)) }
        batch.queue.removeAll()
        note("offload stopped: \(firstReason)")
    }

    func failedOutcome(_ key: RowKey, _ reason: String) -> OffloadOutcome {
        var title = key.hex
        if case .note(let n)? = (try? store.row(.notebook, key))??.content { title = n.title }
        return OffloadOutcome(key: key, title: title, bytes: 0, result: .failed, reason: reason)
    }
}

/// An outcome carried through `Result`'s failure side.
struct OffloadOutcomeBox: Error {
    let outcome: OffloadOutcome
    init(_ outcome: OffloadOutcome) { self.outcome = outcome }
}
