import QuireCore
import QuireStore

/// The advertisement loop: when to tell siblings our digest, and what to
/// do with theirs.
extension SyncEngine {
    /// After a commit (by this process, or another one writing the same
    /// database): one cheap query unless something changed.
    func poll(nowMs: UInt64) {
        do {
            let seq = try store.changeSequence()
            guard seq != lastSeq else { return }
            lastSeq = seq
            if !unsyncable.isEmpty { invalidateDigest(); revalidateUnsyncable() }
            let digest = try freshDigest(seq: seq)
            if digest.digest.roots[.devices] != rosterRoot { try reloadRoster() }
            if let mark = try store.outboxHighWater(), advertiser.hasUnadvertisedEdits(through: mark) { markDirty(nowMs: nowMs) }
            if siblings.someLack(digest.bytes) { markDirty(nowMs: nowMs) }
            refreshSyncFlags(digest.digest)
        } catch {
            report("reading the replica", error)
        }
    }

    func markDirty(nowMs: UInt64) { advertiser.markDirty(nowMs: nowMs) }

    /// Sends our digest to every sibling whose last advertisement differs
    /// (all of them when `force`), then clears the outbox it covers.
    func broadcast(force: Bool, nowMs: UInt64) {
        advertiser.advertising()
        guard phase != .revoked else { return }
        do {
            // Read the outbox mark first: the digest computed after it covers every edit up to it.
            let mark = try store.outboxHighWater()
            let digest = try freshDigest()
            var allSent = true
            for id in siblings.ids(where: { force || $0.lastSentDigest != digest.bytes }) {
                if !sendDigest(to: id) { allSent = false; continue }
                if !force { siblings.update(id) { if $0.awaitingAnswerSinceMs == nil { $0.awaitingAnswerSinceMs = nowMs } } }
            }
            if let mark, advertiser.hasUnadvertisedEdits(through: mark), allSent, !siblings.isEmpty {
                try store.clearOutbox(through: mark)
                advertiser.outboxCleared(through: mark)
            }
        } catch {
            report("advertising", error)
        }
    }

    @discardableResult
    func sendDigest(to device: DeviceID) -> Bool {
        guard let digest = try? currentDigest() else { return false }
        let echo = DigestMessage.echo(of: siblings[device]?.lastDigestBytes)
        let message = DigestMessage(digest: digest.bytes, echo: echo, recipientSession: link.newestSession(of: device), rows: digest.rows,
                                    holdsCollectable: holdsCollectableTombstones(), round: roundOfGeneration(digest.digest.generation))
        let ok = send(.stateDigest, message.encoded(), to: device)
        if ok {
            metrics.digestsSent += 1
            let nowMs = clock.monotonicMilliseconds()
            siblings.update(device) { $0.sentDigest(digest.bytes, nowMs: nowMs) }
        }
        return ok
    }

    /// Re-sends an unanswered advertisement on a doubling back-off (1 s up
    /// to the heartbeat): after the relay comes back, a pair whose digests
    /// were lost converges in about a second instead of a heartbeat.
    func retryUnansweredAdvertisements(nowMs: UInt64) {
        for id in siblings.takeDueAdvertRetries(nowMs: nowMs, maxBackoffMs: configuration.heartbeatMilliseconds) {
            sendDigest(to: id)
        }
    }

    /// The relay has no mailbox: re-advertise now and then so one lost frame
    /// cannot stall a pair, and re-introduce to siblings we never heard from.
    func heartbeat(nowMs: UInt64) {
        broadcast(force: true, nowMs: nowMs)
        let silence = 2 * configuration.heartbeatMilliseconds
        for id in siblings.ids(where: { $0.lastSeenMs.map { nowMs &- $0 > silence } ?? true }) { introduce(to: id) }
        scheduleHeartbeat(nowMs: nowMs)
    }

    func scheduleHeartbeat(nowMs: UInt64) { advertiser.scheduleHeartbeat(nowMs: nowMs, random: deps.random.bytes(4)) }

    func handleDigest(_ bytes: [UInt8], echo: [UInt8], from sender: DeviceID, nowMs: UInt64) throws {
        guard var sibling = siblings[sender] else { return }
        let theirs: StateDigest
        do {
            theirs = try StateDigest(decoding: bytes)
        } catch DigestError.incompatibleVersion(let version, let ours) {
            // A false repair is worse than none: refuse, count, and say so.
            count(.incompatibleVersion)
            if sibling.incompatibleVersion != version {
                note("device '\(sibling.member.name)' runs an incompatible version of quire (digest wire version \(version), this build speaks \(ours)): not syncing with it until both run the same version")
            }
            sibling.incompatibleVersion = version
            siblings.save(sibling)
            return
        } catch {
            count(.badPayload)
            return
        }
        sibling.incompatibleVersion = nil
        sibling.hear(theirs, bytes: bytes)
        let mine = try currentDigest()
        sibling.compare(with: mine.digest, now: clock.now())
        if theirs.generation != mine.digest.generation {
            // Pulling across a barrier gap is the operation that resurrects
            // deleted rows; recovery is a later step. Refuse both ways.
            if sibling.generationGap != theirs.generation {
                note("device '\(sibling.member.name)' is at generation \(theirs.generation), this device at \(mine.digest.generation): content reconcile across the gap is refused")
            }
            sibling.generationGap = theirs.generation
            siblings.save(sibling)
            if theirs.generation > mine.digest.generation,
               lastAnchorCheckMs.map({ nowMs &- $0 >= 30_000 }) ?? true {
                lastAnchorCheckMs = nowMs
                checkAnchor(trigger: "device '\(sibling.member.name)' advertised generation \(theirs.generation)")
            }
            return
        }
        sibling.generationGap = nil
        // What it says it last heard from us; if that is not our digest, the
        // advertisement we sent was lost (or never sent): we owe it one.
        if echo != DigestMessage.echo(of: mine.bytes) { sibling.lastSentDigest = nil }
        let divergent = sibling.divergent
        siblings.save(sibling)
        // A namespace whose roots agree is held whole by the sibling: our
        // writes in it are confirmed, and a later replacement of them is
        // a real one, not a sign that this device was rolled back.
        for ns in StateDigest.namespaces where !divergent.contains(ns) {
            if let root = theirs.roots[ns] { try store.confirmShipped(ns, root: root, by: sender) }
        }
        endSettledPulls(with: sender, nowMs: nowMs)
        guard var sibling = siblings[sender] else { return }
        if sibling.inSync {
            // The one moment the fleet is known to agree about something.
            scheduleBarrier(nowMs: nowMs)
            let shouldReturn = (sibling.isReconciling || sibling.lastSentDigest == nil) && sibling.lastSentDigest != mine.bytes
            sibling.isReconciling = false
            siblings.save(sibling)
            // Exactly once, so a one-directional puller learns the pair
            // converged, without settled devices ping-ponging forever.
            if shouldReturn { sendDigest(to: sender) }
            return
        }
        siblings.save(sibling)
        // Both ends pull: make sure it holds our digest so it pulls from us.
        if sibling.lastSentDigest != mine.bytes { sendDigest(to: sender) }
        startPulls(from: sender, namespaces: divergent, nowMs: nowMs)
    }

    /// After our digest moved: which siblings now match us, and where the
    /// others differ.
    func refreshSyncFlags(_ mine: StateDigest) {
        let nowMs = clock.monotonicMilliseconds()
        for id in siblings.ids { endSettledPulls(with: id, nowMs: nowMs) }
        siblings.compareAll(with: mine, now: clock.now())
    }

    /// The quiet window: settled once the store matched a sibling with no
    /// pull running, or when there is nobody to match, or after the window.
    func updatePhase(nowMs: UInt64) {
        guard phase == .settling else { return }
        let matched = siblings.someInSync && pulls.isEmpty
        if siblings.isEmpty || matched || nowMs &- startedMs >= configuration.quietWindowMilliseconds {
            phase = .settled
        }
    }
}
