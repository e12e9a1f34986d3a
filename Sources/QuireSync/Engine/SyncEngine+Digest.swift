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
            invalidateDigest()
            if !unsyncable.isEmpty { revalidateUnsyncable() }
            let digest = try currentDigest()
            if digest.digest.roots[.devices] != rosterRoot { try reloadRoster() }
            if let mark = try store.outboxHighWater(), advertiser.hasUnadvertisedEdits(through: mark) { markDirty(nowMs: nowMs) }
            if siblings.values.contains(where: { $0.lastSentDigest != digest.bytes }) { markDirty(nowMs: nowMs) }
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
            invalidateDigest()
            let digest = try currentDigest()
            var allSent = true
            for (id, sibling) in siblings where force || sibling.lastSentDigest != digest.bytes {
                if !sendDigest(to: id) { allSent = false; continue }
                if !force && siblings[id]?.awaitingAnswerSinceMs == nil { siblings[id]?.awaitingAnswerSinceMs = nowMs }
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
                                    holdsCollectable: holdsCollectableTombstones())
        let ok = send(.stateDigest, message.encoded(), to: device)
        if ok {
            metrics.digestsSent += 1
            siblings[device]?.lastSentDigest = digest.bytes
            if var sibling = siblings[device], sibling.lastDigestBytes != digest.bytes, sibling.nextAdvertRetryMs == nil {
                sibling.nextAdvertRetryMs = clock.monotonicMilliseconds() + sibling.advertRetryBackoffMs
                siblings[device] = sibling
            }
        }
        return ok
    }

    /// Re-sends an unanswered advertisement on a doubling back-off (1 s up
    /// to the heartbeat): after the relay comes back, a pair whose digests
    /// were lost converges in about a second instead of a heartbeat.
    func retryUnansweredAdvertisements(nowMs: UInt64) {
        for (id, sibling) in siblings {
            guard let due = sibling.nextAdvertRetryMs, nowMs >= due else { continue }
            var s = sibling
            s.nextAdvertRetryMs = nil
            s.advertRetryBackoffMs = min(s.advertRetryBackoffMs * 2, configuration.heartbeatMilliseconds)
            siblings[id] = s
            sendDigest(to: id)
        }
    }

    /// The relay has no mailbox: re-advertise now and then so one lost frame
    /// cannot stall a pair, and re-introduce to siblings we never heard from.
    func heartbeat(nowMs: UInt64) {
        broadcast(force: true, nowMs: nowMs)
        for (id, sibling) in siblings where sibling.lastSeenMs == nil || nowMs &- sibling.lastSeenMs! > 2 * configuration.heartbeatMilliseconds {
            introduce(to: id)
        }
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
            siblings[sender] = sibling
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
            siblings[sender] = sibling
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
        siblings[sender] = sibling
        // A namespace whose roots agree is held whole by the sibling: our
        // writes in it are confirmed, and a later replacement of them is
        // a real one, not a sign that this device was rolled back.
        for ns in StateDigest.namespaces where !divergent.contains(ns) {
            if let root = theirs.roots[ns] { try store.confirmShipped(ns, root: root) }
        }
        endSettledPulls(with: sender, nowMs: nowMs)
        guard var sibling = siblings[sender] else { return }
        if sibling.inSync {
            // The one moment the fleet is known to agree about something.
            scheduleBarrier(nowMs: nowMs)
            let shouldReturn = (sibling.isReconciling || sibling.lastSentDigest == nil) && sibling.lastSentDigest != mine.bytes
            sibling.isReconciling = false
            siblings[sender] = sibling
            // Exactly once, so a one-directional puller learns the pair
            // converged, without settled devices ping-ponging forever.
            if shouldReturn { sendDigest(to: sender) }
            return
        }
        siblings[sender] = sibling
        // Both ends pull: make sure it holds our digest so it pulls from us.
        if sibling.lastSentDigest != mine.bytes { sendDigest(to: sender) }
        startPulls(from: sender, namespaces: divergent, nowMs: nowMs)
    }

    /// After our digest moved: which siblings now match us, and where the
    /// others differ.
    func refreshSyncFlags(_ mine: StateDigest) {
        let nowMs = clock.monotonicMilliseconds()
        for id in siblings.keys { endSettledPulls(with: id, nowMs: nowMs) }
        let now = clock.now()
        for id in Array(siblings.keys) { siblings[id]?.compare(with: mine, now: now) }
    }

    /// The quiet window: settled once the store matched a sibling with no
    /// pull running, or when there is nobody to match, or after the window.
    func updatePhase(nowMs: UInt64) {
        guard phase == .settling else { return }
        let matched = siblings.values.contains { $0.inSync } && pulls.isEmpty
        if siblings.isEmpty || matched || nowMs &- startedMs >= configuration.quietWindowMilliseconds {
            phase = .settled
        }
    }
}
