import Foundation
import QuireCore
import QuireStore

/// Frames in and out: opening in the fixed order of checks, chunk
/// reassembly, dispatch by sub-kind, sealing and publishing, the roster.
extension SyncEngine {
    func handleFrame(_ bytes: [UInt8]) {
        metrics.framesIn += 1
        metrics.bytesIn += bytes.count
        // A revoked device no longer takes part in anything.
        guard phase != .revoked else { return }
        let inner: InnerFrame
        switch link.open(bytes, roster: roster) {
        case .failure(let drop):
            count(drop)
            // Its device is told why (rate-limited), or it would go on
            // believing its edits reach us.
            if drop == .revoked { answerRevokedFrame(bytes, nowMs: clock.monotonicMilliseconds()) }
            if drop != .misaddressed && drop != .unexpected {
                wedge.error(.siblings, "frames from siblings are refused (\(drop))", nowMs: clock.monotonicMilliseconds())
            }
            return
        case .success(let frame):
            inner = frame
        }
        // A sender's new session is written down before anything of it is
        // acted on: after a crash, frames of it are refused as replays.
        if inner.subKind != .introduce { persistReplayFloors() }
        let nowMs = clock.monotonicMilliseconds()
        if inner.subKind != .introduce { wedge.success(.siblings) }
        // An introduce comes in an anonymous box, which anyone who knows the
        // account hash can seal with any sender id: no sign of life, so it
        // neither moves "last seen" nor cancels retries to that sibling.
        if inner.subKind != .introduce {
            let now = clock.now()
            siblings.update(inner.sender) { $0.heard(at: now, nowMs: nowMs, bytes: bytes.count) }
            auditHoldsIfNewSession(of: inner.sender, nowMs: nowMs)
        }
        if inner.subKind == .chunk {
            guard let chunk = Chunk.decode(inner.payload) else { count(.badPayload); return }
            pulls.keepAlive(with: inner.sender, nowMs: nowMs)
            let (whole, expired) = link.reassemble(chunk, from: inner.sender, nowMs: nowMs)
            if expired > 0 { count(.chunkExpired, expired) }
            guard let message = whole else { return }
            dispatch(message, from: inner.sender, nowMs: nowMs)
        } else {
            dispatch(SyncMessage(subKind: inner.subKind, payload: inner.payload), from: inner.sender, nowMs: nowMs)
        }
    }

    /// Only reached by frames that opened with a roster key (or, for
    /// `introduce`, whose account matched): sub-kinds are parsed here.
    func dispatch(_ message: SyncMessage, from sender: DeviceID, nowMs: UInt64) {
        deps.trace?("in  \(message.subKind) \(message.payload.count) B from \(name(of: sender))")
        do {
            switch message.subKind {
            case .stateDigest:
                let m = try DigestMessage.decode(message.payload)
                siblings.update(sender) {
                    if let rows = m.rows { $0.rowCount = rows }
                    $0.holdsCollectable = m.holdsCollectable
                    $0.advertisedRound = m.round
                }
                if let seen = m.recipientSession { startSession(after: seen, toldBy: sender) }
                try handleDigest(m.digest, echo: m.echo, from: sender, nowMs: nowMs)
            case .reconcileRequest:
                try handleRequest(try ReconcileRequest.decode(message.payload), from: sender)
            case .reconcileResponse:
                let (response, rowBytes) = try ReconcileResponse.decodeCountingRows(message.payload)
                try handleResponse(response, rowBytes: rowBytes, from: sender, nowMs: nowMs)
            case .introduce:
                try handleIntroduce(try IntroduceMessage.decode(message.payload), from: sender, nowMs: nowMs)
            case .offloadPut, .offloadAck, .recallRequest, .recallResponse, .holdQuery, .holdAnswer, .holdRelease:
                try handleOffloadMessage(message, from: sender, nowMs: nowMs)
            case .gcPropose:
                try handlePropose(try BarrierPropose.decode(message.payload), from: sender, nowMs: nowMs)
            case .gcAck:
                try handleAck(try BarrierAck.decode(message.payload), from: sender, nowMs: nowMs)
            case .gcCommit:
                try handleCommit(try BarrierCommit.decode(message.payload), from: sender, nowMs: nowMs)
            case .gcCollected:
                try handleCollected(try BarrierCollected.decode(message.payload), from: sender)
            case .gcCollectedRequest:
                handleCollectedRequest(try BarrierCollectedRequest.decode(message.payload), from: sender)
            case .snapshotRequest:
                try handleSnapshotRequest(try SnapshotRequest.decode(message.payload), from: sender)
            case .snapshotResponse:
                try handleSnapshotResponse(try SnapshotResponse.decode(message.payload), from: sender)
            case .keyRequest:
                handleKeyRequest(try KeyRequest.decode(message.payload), from: sender)
            case .keyResponse:
                try handleKeyResponse(message.payload, from: sender)
            case .revocationNotice:
                try handleRevocationNotice(try RevocationNotice.decode(message.payload), from: sender, nowMs: nowMs)
            default:
                count(.unknownSubKind)
            }
        } catch let error as CBORError {
            count(.badPayload)
            report("undecodable \(message.subKind) from \(name(of: sender))", error)
        } catch {
            report("handling \(message.subKind) from \(name(of: sender))", error)
        }
    }

    func name(of device: DeviceID) -> String {
        roster[device].map { "'\($0.name)'" } ?? device.hex.prefix(12).description
    }

    // MARK: Sending

    /// Seals and publishes a message to one sibling (chunked if large).
    @discardableResult
    func send(_ kind: SubKind, _ payload: [UInt8], to device: DeviceID) -> Bool {
        guard phase != .revoked, let sibling = siblings[device] else { return false }
        deps.trace?("out \(kind) \(payload.count) B to \(name(of: device))")
        let frames = link.seal(SyncMessage(subKind: kind, payload: payload), to: device, boxKey: sibling.member.boxKey,
                               messageID: deps.random.bytes(8))
        var ok = true
        var sent = 0
        // No pacing here: flow control belongs to the relay (the local
        // relay waits for a listener that is briefly behind).
        for frame in frames {
            do {
                try deps.relay.publish(frame, to: sibling.channel)
                metrics.framesOut += 1
                metrics.bytesOut += frame.count
                sent += frame.count
            } catch {
                ok = false
                metrics.sendErrors += 1
                wedge.error(.siblings, "frames cannot be sent (the relay is unreachable?)", nowMs: clock.monotonicMilliseconds())
                report("cannot send to \(name(of: device))", error)
                relayFailed(error)
                break
            }
        }
        if ok && !frames.isEmpty { relayAnswered() }
        siblings.update(device) { $0.bytesOut += sent }
        return ok
    }

    /// The first failed send after a good one is said once (in the log and
    /// the status), and so is the next good one: an outage is two lines,
    /// however long it lasts and however often it comes back.
    func relayFailed(_ error: any Error) {
        guard metrics.relayUnreachableSince == nil else { return }
        metrics.relayUnreachableSince = clock.now()
        note("the relay is unreachable (\(error)): nothing reaches the other devices until it answers")
    }

    func relayAnswered() {
        guard let since = metrics.relayUnreachableSince else { return }
        metrics.relayUnreachableSince = nil
        note("the relay answers again (it did not since \(DateStamp.format(since)))")
    }

    // MARK: Roster

    /// Re-reads the verified roster; adds new siblings, forgets revoked ones.
    func reloadRoster() throws {
        let log = DeviceLog(rows: try store.rows(.devices, from: [], to: nil), accountKey: accountKey)
        let verdicts = log.verdicts()
        roster = log.roster(verdicts: verdicts)
        keySchedule = BackupKeySchedule(log: log, roster: roster, verdicts: verdicts)
        rosterRoot = try currentDigest().digest.roots[.devices]
        if let revocation = ownRevocation, phase != .revoked {
            // From here on nothing is sent or taken (`handleFrame`, `send`);
            // the store is left whole: what was written here stays here.
            phase = .revoked
            pulls.stopAll()
            note(revocation.words)
        }
        pickUpBackupKey()
        refreshBackupKeys(nowMs: clock.monotonicMilliseconds())
        let current = roster.siblings(of: me.deviceID)
        let ids = Set(current.map(\.deviceID))
        // A revocation counts nowhere once its signer is revoked by a device
        // that had not seen it (DeviceLog): the person must hear of it, or a
        // lost device stays on the roster unrevoked.
        for e in log.entries.values where e.statement.kind == .revoke && verdicts[e.id] == .void && ids.contains(e.statement.subject)
            && voidedRevocationsSaid.insert(e.id).inserted {
            let subject = e.statement.subject
            note("a revocation of device \(name(of: subject)) counts nowhere (the device that signed it was revoked by one that had "
                 + "not seen it): it is on the roster; if it is lost, revoke it with 'quire devices revoke \(roster[subject]?.name ?? subject.hex)'")
        }
        if let round = barrier.round, round.roster != ids {
            abandonRound("a device was added or revoked while the round was open")
            // The tombstones are still worth collecting, by the new roster:
            // try again after the debounce (still only if worth it).
            scheduleBarrier(nowMs: clock.monotonicMilliseconds())
        }
        let userIDHash = me.userIDHash
        for gone in siblings.follow(current, channel: { SyncChannel.name(userIDHash: userIDHash, device: $0) }) {
            if roster[gone]?.isRevoked == true {
                note("device \(name(of: gone)) was revoked: its frames are refused")
                // Told at once, while it may be listening; later, each of
                // its refused frames asks again.
                tellRevoked(gone, nowMs: clock.monotonicMilliseconds())
            }
            for key in pulls.forget(gone) { startWaitedPull(key, nowMs: clock.monotonicMilliseconds()) }
        }
    }

    /// Roster rows from a sibling must be well-formed statements of our
    /// account (`Roster.isWellFormed`), and may not drop a revocation a
    /// legacy row here carries: anything else is dropped and counted.
    func certifiedRows(_ rows: [Row]) -> [Row] {
        rows.filter { row in
            if row.namespace != .devices { return true }
            if Roster.isWellFormed(row, accountKey: accountKey),
               !Roster.wouldUnrevoke(row, over: try? store.row(.devices, row.key)) { return true }
            count(.uncertifiedRoster)
            return false
        }
    }
}
