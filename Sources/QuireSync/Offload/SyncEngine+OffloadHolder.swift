import Foundation
import QuireCore
import QuireStore

/// The holder's side of offload: keeping bodies for siblings (a homebase),
/// serving recalls, answering hold queries. Everything runs on the engine
/// thread under the engine lock, like the rest of dispatch.
extension SyncEngine {
    /// The roster says which devices are homebases (the certificate's role,
    /// signed by the account key, so every device agrees on it).
    var isHomebase: Bool { roster[me.deviceID]?.role == "homebase" }

    /// Homebases on the roster other than this device, in id order.
    var homebaseSiblings: [DeviceID] {
        roster.siblings(of: me.deviceID).filter { $0.role == "homebase" }.map(\.deviceID)
    }

    /// Routes the offload sub-kinds (called from `dispatch`).
    func handleOffloadMessage(_ message: SyncMessage, from sender: DeviceID, nowMs: UInt64) throws {
        switch message.subKind {
        case .offloadPut: try handlePut(try OffloadPut.decode(message.payload), from: sender)
        case .offloadAck: handleAck(try OffloadAck.decode(message.payload), from: sender, nowMs: nowMs)
        case .recallRequest: try handleRecallRequest(try RecallRequest.decode(message.payload), from: sender)
        case .recallResponse: handleRecallResponse(try RecallResponse.decode(message.payload), from: sender, nowMs: nowMs)
        case .holdQuery: try handleHoldQuery(try HoldQuery.decode(message.payload), from: sender)
        case .holdAnswer: handleHoldAnswer(try HoldAnswer.decode(message.payload), from: sender, nowMs: nowMs)
        case .holdRelease:
            let release = try HoldRelease.decode(message.payload)
            try store.releaseCopies(release.hashes, for: sender, epoch: release.epoch, dropKept: !isHomebase)
        default: count(.unknownSubKind)
        }
    }

    /// A body to keep. Checked here; committed (with every other put of this
    /// step) in `commitHeldBodies`, and only then acknowledged: an ack is a
    /// promise about landed bytes.
    private func handlePut(_ put: OffloadPut, from sender: DeviceID) throws {
        guard isHomebase else {
            send(.offloadAck, OffloadAck(opID: put.opID, contentHash: put.contentHash,
                                         refusal: "\(name(of: me.deviceID)) is not a homebase; it keeps no bodies for others").encoded(), to: sender)
            return
        }
        guard Note.bodyDigest(put.body) == put.contentHash else {
            note("refused a body from \(name(of: sender)): its bytes do not match its content hash")
            send(.offloadAck, OffloadAck(opID: put.opID, contentHash: put.contentHash,
                                         refusal: "the bytes received do not match the content hash").encoded(), to: sender)
            return
        }
        offloadBook.faults.beforeHold?()
        offloadBook.holdsToCommit.append((put, sender))
    }

    /// One transaction and one sync for every body received this step, then
    /// the acks. A failure acks nothing but refusals (the sender keeps its body).
    func commitHeldBodies() {
        let pending = offloadBook.holdsToCommit
        guard !pending.isEmpty else { return }
        offloadBook.holdsToCommit.removeAll()
        if offloadBook.faults.holdDelayMilliseconds > 0 { usleep(UInt32(offloadBook.faults.holdDelayMilliseconds * 1000)) }
        var refusal: String? = nil
        do {
            try store.holdBodies(pending.map { (body: $0.put.body, contentHash: $0.put.contentHash, owner: $0.from) })
        } catch {
            refusal = "the homebase could not store the body: \(error)"
            report("holding bodies", error)
        }
        for (put, sender) in pending {
            send(.offloadAck, OffloadAck(opID: put.opID, contentHash: put.contentHash, refusal: refusal).encoded(), to: sender)
        }
    }

    private func handleRecallRequest(_ request: RecallRequest, from sender: DeviceID) throws {
        guard var body = try store.servableBody(contentHash: request.contentHash, key: request.key) else {
            send(.recallResponse, RecallResponse(contentHash: request.contentHash, body: nil,
                                                 refusal: "\(name(of: me.deviceID)) does not hold this body").encoded(), to: sender)
            return
        }
        if offloadBook.faults.corruptsRecalls {
            if body.isEmpty { body = [0] } else { body[body.count / 2] ^= 0x5A }
        }
        send(.recallResponse, RecallResponse(contentHash: request.contentHash, body: body).encoded(), to: sender)
    }

    /// Answers with the hashes held here, each re-hashed from its bytes now
    /// (`servableBody` checks), so a damaged copy is not counted. A query
    /// that counts copies pins them first: this device will not offload
    /// them with fewer copies elsewhere than the asker required.
    private func handleHoldQuery(_ query: HoldQuery, from sender: DeviceID) throws {
        var held: [[UInt8]] = []
        for item in query.items where try store.servableBody(contentHash: item.contentHash, key: item.key) != nil {
            held.append(item.contentHash)
        }
        if let required = query.counting, !isHomebase {
            do { try store.pinCopies(held, for: sender, required: required, epoch: query.epoch) } catch {
                // Unpinned copies are not promised: none is counted.
                report("pinning counted copies", error)
                held = []
            }
        }
        send(.holdAnswer, HoldAnswer(queryID: query.queryID, held: held, isHomebase: isHomebase).encoded(), to: sender)
    }

    private func handleHoldAnswer(_ answer: HoldAnswer, from sender: DeviceID, nowMs: UInt64) {
        guard var query = offloadBook.queries[answer.queryID], query.target == sender, query.answer == nil else { return }
        query.answer = answer
        offloadBook.queries[answer.queryID] = query
        if let batchID = query.batch {
            offloadBook.queries[answer.queryID] = nil
            countResidentCopies(answer, from: sender, batch: batchID, nowMs: nowMs)
        } else if query.auditUntilMs != nil {
            offloadBook.queries[answer.queryID] = nil
            auditAnswered(query.items, held: Set(answer.held), by: sender)
        }
        signalOffloadProgress()
    }

    func signalOffloadProgress() {
        offloadBook.progress.lock()
        offloadBook.progress.broadcast()
        offloadBook.progress.unlock()
    }

    /// The engine-step part of offload: commit held bodies, then the timers
    /// of batches, recalls and queries.
    func offloadTick(nowMs: UInt64) {
        commitHeldBodies()
        advanceBatches(nowMs: nowMs)
        advanceRecalls(nowMs: nowMs)
        advanceQueries(nowMs: nowMs)
    }

    /// Resends verification queries that got no answer yet.
    private func advanceQueries(nowMs: UInt64) {
        for (id, query) in offloadBook.queries where query.answer == nil && (query.auditUntilMs ?? .max) <= nowMs {
            offloadBook.queries[id] = nil   // an audit of a holder that went away: the next session of it asks again
        }
        for (id, query) in offloadBook.queries where query.answer == nil && query.batch == nil && nowMs >= query.nextRetryMs {
            send(.holdQuery, HoldQuery(queryID: id, items: query.items).encoded(), to: query.target)
            // Computed first: an optional-chained assignment holds its write
            // access while evaluating the right-hand side.
            let next = nowMs + offloadBook.timing.retryMilliseconds
            offloadBook.queries[id]?.nextRetryMs = next
        }
    }

    /// Test-only faults (see `OffloadFaults`).
    public func setOffloadFaults(_ faults: OffloadFaults) {
        lock.lock(); defer { lock.unlock() }
        offloadBook.faults = faults
    }

    public func setOffloadTiming(_ timing: OffloadTiming) {
        lock.lock(); defer { lock.unlock() }
        offloadBook.timing = timing
    }
}
