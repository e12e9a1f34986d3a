import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The tombstone barrier (seeds/convergence-barrier-and-cloud-anchor.txt):
/// unanimity of the whole roster on a fresh nonce and equal digests, the
/// anchor written and landed before any tombstone is dropped, and a
/// receiver that collects only for a round it acked. Never on a timer:
/// a round is scheduled only when a sibling's digest came back equal.
extension SyncEngine {
    /// The roster device whose signing key sorts lowest leads; the rest answer.
    var isBarrierLeader: Bool {
        guard let mine = roster[me.deviceID]?.signingKey else { return false }
        return roster.members.values.filter { !$0.isRevoked && $0.deviceID != me.deviceID }
            .allSatisfy { mine.lexicographicallyPrecedes($0.signingKey) }
    }

    func scheduleBarrier(nowMs: UInt64) {
        guard barrier.round == nil else { return }
        barrier.attemptAtMs = nowMs + configuration.barrierDebounceMilliseconds
    }

    func barrierTick(nowMs: UInt64) {
        barrier.expireAcked(nowMs: nowMs, keepMs: 2 * configuration.barrierTimeoutMilliseconds)
        askForAwaitedList(nowMs: nowMs)
        if let round = barrier.round, nowMs &- round.startedMs >= configuration.barrierTimeoutMilliseconds {
            let silent = round.roster.subtracting(round.acks.keys).map { name(of: $0) }.sorted()
            abandonRound("no answer from \(silent.joined(separator: ", ")) within \(configuration.barrierTimeoutMilliseconds / 1000) s")
        }
        guard let at = barrier.attemptAtMs, nowMs >= at else { return }
        barrier.attemptAtMs = nil
        startRoundIfWorthIt(nowMs: nowMs)
    }

    func startRoundIfWorthIt(nowMs: UInt64) {
        guard phase == .settled, barrier.round == nil, isBarrierLeader, deps.cloud != nil, deps.isAnchorEnabled() else { return }
        let siblingIDs = Set(roster.siblings(of: me.deviceID).map(\.deviceID))
        guard !siblingIDs.isEmpty else { return }    // a single-device account never collects
        do {
            let backlog = try store.tombstoneBacklog()
            let holders = roster.siblings(of: me.deviceID).filter { siblings[$0.deviceID]?.holdsCollectable ?? false }
            let rotating = anchorNeedsRotation()
            guard holdsCollectableTombstones() || !holders.isEmpty || rotating else { return }
            // An anchor under an older key would be refused by every device
            // that knows the revocation, and readable by the revoked one.
            guard anchorKeys.writing != nil else {
                barrier.lastOutcome = "this device leads the barrier but cannot write the anchor: \(anchorKeys.missingWords); every tombstone is kept"
                return
            }
            invalidateDigest()
            let digest = try currentDigest().bytes
            let nonce = deps.random.bytes(16)
            try store.noteBarrierRound(roster: Array(siblingIDs) + [me.deviceID])
            barrier.round = BarrierState.Round(nonce: nonce, roster: siblingIDs, digest: digest, startedMs: nowMs)
            note("barrier: proposing a collection of \(backlog.count) tombstones to \(siblingIDs.count) devices"
                 + (rotating ? " (and an anchor under the backup key of the last revocation)" : "")
                 + (holders.isEmpty ? "" : " (" + holders.map { "'\($0.name)'" }.joined(separator: ", ") + " hold\(holders.count == 1 ? "s" : "") tombstones worth it)"))
            let payload = BarrierPropose(nonce: nonce, digest: digest).encoded()
            for id in siblingIDs.sorted() { send(.gcPropose, payload, to: id) }
        } catch {
            report("barrier", error)
        }
    }

    /// This device holds tombstones worth a barrier: a count or an age
    /// threshold (a barrier writes the whole anchor, so not after every delete).
    func holdsCollectableTombstones() -> Bool {
        guard let backlog = try? store.tombstoneBacklog(), backlog.count > 0 else { return false }
        let oldEnough = backlog.oldest.map { clock.now().seconds - $0.seconds >= configuration.barrierMinimumTombstoneAgeSeconds } ?? false
        return backlog.count >= configuration.barrierMinimumTombstones || oldEnough
    }

    /// Tombstones in the graveyard's one encoding: equal sets, equal bytes.
    static func encoding(of tombstones: [CollectedTombstone]) -> [UInt8] {
        CBORWriter.encode(CollectedTombstone.encode(tombstones))
    }

    func abandonRound(_ why: String) {
        guard barrier.round != nil else { return }
        barrier.round = nil
        barrier.lastOutcome = "the last barrier round was abandoned at \(DateStamp.format(clock.now())): \(why); every tombstone is kept"
        note("barrier: round abandoned: \(why)")
    }

    // MARK: Answering

    func handlePropose(_ propose: BarrierPropose, from sender: DeviceID, nowMs: UInt64) throws {
        guard let leader = roster[sender], !leader.isRevoked,
              roster.members.values.filter({ !$0.isRevoked }).allSatisfy({ $0.deviceID == sender || leader.signingKey.lexicographicallyPrecedes($0.signingKey) })
        else {
            note("barrier: ignored a proposal from \(name(of: sender)), which is not the roster's leader")
            return
        }
        invalidateDigest()
        let mine = try currentDigest().bytes
        guard deps.isAnchorEnabled() else {
            barrier.lastOutcome = "this device has the cloud anchor off, so it never acks a barrier: tombstones are not collected "
                + "for the whole account ('quire config cloud-anchor on' turns it back on)"
            send(.gcAck, BarrierAck(nonce: propose.nonce, digest: mine, declined: true).encoded(), to: sender)
            return
        }
        let tombstones = try store.collectableTombstones()
        // Taking part: from here, holders outside this roster are recorded.
        try store.noteBarrierRound(roster: roster.members.values.filter { !$0.isRevoked }.map(\.deviceID))
        barrier.acked[propose.nonce] = (leader: sender, digest: mine, tombstones: Self.encoding(of: tombstones), atMs: nowMs)
        send(.gcAck, BarrierAck(nonce: propose.nonce, digest: mine, declined: false, tombstones: tombstones).encoded(), to: sender)
    }

    func handleAck(_ ack: BarrierAck, from sender: DeviceID, nowMs: UInt64) throws {
        switch barrier.record(ack, from: sender, name: name(of: sender)) {
        case .waiting: return
        case .failed(let why): abandonRound(why)
        case .unanimous: try commitRound(nowMs: nowMs)
        }
    }

    /// Every roster device acked the same digest: anchor first, then collect.
    func commitRound(nowMs: UInt64) throws {
        guard let round = barrier.round, let cloud = deps.cloud else { return }
        let generation = deps.generation() + 1
        // The leader's own digest, recomputed now, must still be the agreed one.
        invalidateDigest()
        guard try currentDigest().bytes == round.digest else { abandonRound("this device changed while the round was open"); return }
        var ownTombstones: [UInt8] = []
        var since = generation
        do {
            var rows: [Row] = []
            for ns in Namespace.allCases { rows += try store.rows(ns, from: [], to: nil) }
            // The graveyard grows with every collection: this device's own
            // (with the tombstones this round collects), joined with the
            // last anchor's, which a device that joined later never held.
            // Only an anchor under the current key set: an older one may be
            // a revoked device's, and its graveyard would delete on recovery.
            // And the tombstones every device acked, which this one may never
            // have held (digests leave tombstones out).
            let keys = anchorKeys
            let previous = (try? cloud.newest(keys: keys)) ?? nil
            try store.adoptGraveyard(previous?.1.graveyard ?? [])
            ownTombstones = Self.encoding(of: try store.collectableTombstones())
            let graveyard = CollectedTombstone.joined(try store.graveyardWithTombstones(), Array(round.tombstones.values.joined()))
            // The graveyard names every round this device's coverage or the
            // adopted anchor's does (`GraveyardCoverage`).
            since = min(AnchorSnapshot.graveyardSince(generation: generation, previous: previous?.1),
                        try store.graveyardCoverage()?.extended(to: generation).since ?? generation)
            let bytes = try AnchorFile.seal(AnchorSnapshot(generation: generation, rows: rows, graveyard: graveyard,
                                                           roster: Array(round.roster) + [me.deviceID], graveyardSince: since,
                                                           round: round.nonce),
                                            accountID: deps.identity.userIDHash, keys: keys, at: clock.now())
            // CRITICAL ORDER: the anchor lands before any commit or any drop.
            // A dangling anchor (round abandoned after this) is harmless; a
            // collection with no anchor would strand a restored device.
            try cloud.write(bytes)
            wedge.success(.cloud)
        } catch {
            abandonRound("the anchor could not be written (\(error))")
            wedge.error(.cloud, "the cloud folder cannot be written, so tombstones are never collected (\(error))", nowMs: nowMs)
            return
        }
        // A delete made during the upload has been through no barrier, nor
        // has a tombstone that arrived then (the anchor does not name it).
        invalidateDigest()
        guard try currentDigest().bytes == round.digest,
              Self.encoding(of: try store.collectableTombstones()) == ownTombstones else {
            abandonRound("this device changed while the anchor was written"); return
        }
        // What the anchor names, every device's graveyard names too (the
        // snapshots they serve carry it): the round's whole collection goes
        // just before the commit, unless it is too big for one message.
        let collected = CollectedTombstone.joined(try store.collectableTombstones(), Array(round.tombstones.values.joined()))
        let list = BarrierCollected(nonce: round.nonce, tombstones: collected).encoded()
        let payload = BarrierCommit(nonce: round.nonce, digest: round.digest, generation: generation).encoded()
        let listFits = list.count <= RowLimits.maxMessageBytes - (64 << 10)
        if listFits {
            // Kept to send again to a follower that asks; without it, that follower claims nothing for the round.
            do { try store.keepSentList(nonce: round.nonce, list: list, keep: BarrierState.sentListsKept) } catch {
                note("barrier: the list of this round could not be kept to send again (\(error))")
            }
        }
        for id in round.roster.sorted() {
            if listFits { send(.gcCollected, list, to: id) }
            send(.gcCommit, payload, to: id)
        }
        barrier.round = nil
        try collect(generation: generation, nonce: round.nonce, roster: Array(round.roster) + [me.deviceID], round: collected, since: since)
    }

    func handleCommit(_ commit: BarrierCommit, from sender: DeviceID, nowMs: UInt64) throws {
        func refuse(_ why: String) {
            count(.barrierRefused)
            note("barrier: refused a commit from \(name(of: sender)): \(why)")
        }
        guard let acked = barrier.acked[commit.nonce] else {
            return refuse(barrier.committed.contains(commit.nonce) ? "that round was already committed here (a replay)"
                                                                   : "this device did not ack that round")
        }
        guard acked.leader == sender else { return refuse("it did not lead that round") }
        invalidateDigest()
        guard try currentDigest().bytes == commit.digest, acked.digest == commit.digest else {
            barrier.acked[commit.nonce] = nil
            return refuse("this device's digest is no longer the agreed one; its tombstones wait for a later round")
        }
        guard commit.generation == deps.generation() + 1 else {
            return refuse("generation \(commit.generation) does not follow this device's \(deps.generation())")
        }
        // The anchor's graveyard names the tombstones this device acked; one
        // that reached it since (a delete of a row it never held) waits.
        guard Self.encoding(of: try store.collectableTombstones()) == acked.tombstones else {
            barrier.acked[commit.nonce] = nil
            return refuse("tombstones reached this device after it acked, which the anchor does not name; they wait for a later round")
        }
        barrier.acked[commit.nonce] = nil
        // What the round collected: the leader's list, or where it was lost
        // on the way, the anchor of that round (it landed before the commit).
        var round = barrier.collections.removeValue(forKey: commit.nonce)
        var since: UInt64?
        if round == nil, let anchor = roundAnchor(generation: commit.generation, nonce: commit.nonce) {
            round = admissibleGraveyard(anchor.graveyard)
            since = anchor.graveyardSince
        }
        var awaited: AwaitedList?
        if round == nil {
            // With neither, the round is committed claiming nothing, and the
            // list asked for again mends the claim when it comes.
            let claim = try store.graveyardCoverage()
            awaited = AwaitedList(nonce: commit.nonce, leader: sender, generation: commit.generation,
                                  previousSince: claim.flatMap { $0.through + 1 == commit.generation ? $0.since : nil })
            barrier.awaitedList = awaited.map { BarrierState.AwaitedList(round: $0, askedAtMs: nowMs, asks: 1) }
            send(.gcCollectedRequest, BarrierCollectedRequest(nonce: commit.nonce).encoded(), to: sender)
        }
        // The leader's roster is not in the commit; a settled roster is ours.
        try collect(generation: commit.generation, nonce: commit.nonce,
                    roster: roster.members.values.filter { !$0.isRevoked }.map(\.deviceID), round: round, since: since)
        // Kept so a restart asks again; the commit stands without it.
        if let awaited {
            do { try store.setAwaitedList(awaited) } catch { note("barrier: the round whose list is asked for could not be kept (\(error))") }
        }
    }

    /// The anchor of the round this device is committing, if the folder
    /// shows it and this device may open it.
    private func roundAnchor(generation: UInt64, nonce: [UInt8]) -> AnchorSnapshot? {
        guard let cloud = deps.cloud else { return nil }
        return (try? cloud.anchor(ofRound: nonce, generation: generation, keys: anchorKeys)) ?? nil
    }

    /// Kept for the commit of a round this device acked, from its leader
    /// only; or, for a round committed without it, buried now.
    func handleCollected(_ collected: BarrierCollected, from sender: DeviceID) throws {
        if let awaited = barrier.awaitedList, awaited.round.nonce == collected.nonce, awaited.round.leader == sender {
            barrier.awaitedList = nil
            let claim = try store.buryLateCollection(admissibleGraveyard(collected.tombstones), generation: awaited.round.generation,
                                                     previousSince: awaited.round.previousSince, currentGeneration: deps.generation())
            try? store.setAwaitedList(nil)
            note("barrier: the list of generation \(awaited.round.generation) came late; the graveyard names "
                 + (claim.map { "generations \($0.since) through \($0.through)" } ?? "that round, with no claim"))
            invalidateDigest()
            return
        }
        guard let acked = barrier.acked[collected.nonce], acked.leader == sender else { return }
        barrier.collections[collected.nonce] = admissibleGraveyard(collected.tombstones)
    }

    /// A follower asks again for the list of a round this device led.
    func handleCollectedRequest(_ request: BarrierCollectedRequest, from sender: DeviceID) {
        guard let kept = try? store.sentList(nonce: request.nonce) else { return }
        send(.gcCollected, kept, to: sender)
    }

    /// Asks again for a list that has not come, a few times, then gives up
    /// (an older leader, or one that restarted): the round stays unclaimed.
    func askForAwaitedList(nowMs: UInt64) {
        guard var awaited = barrier.awaitedList, nowMs &- awaited.askedAtMs >= BarrierState.AwaitedList.retryMs else { return }
        // Past the round, only a claim that restarted right after it can still be mended.
        let mendable = deps.generation() == awaited.round.generation || (try? store.graveyardCoverage())?.since == awaited.round.generation + 1
        guard awaited.asks < BarrierState.AwaitedList.maxAsks, mendable else {
            barrier.awaitedList = nil
            try? store.setAwaitedList(nil)
            return
        }
        awaited.asks += 1
        awaited.askedAtMs = nowMs
        barrier.awaitedList = awaited
        send(.gcCollectedRequest, BarrierCollectedRequest(nonce: awaited.round.nonce).encoded(), to: awaited.round.leader)
    }

    /// `round`: every tombstone the round collected (nil: not known);
    /// `since`: the leader's graveyard coverage start (`GraveyardCoverage`).
    private func collect(generation: UInt64, nonce: [UInt8], roster: [DeviceID], round: [CollectedTombstone]?, since: UInt64? = nil) throws {
        barrier.committed.insert(nonce)
        let dropped = try store.dropTombstonesForBarrier(roster: roster, generation: generation, round: round, since: since)
        try deps.setGeneration(generation)
        try noteRound(nonce, of: generation)
        // Start-up checks may now trust this generation's anchor (CommitRecord);
        // if the record cannot be written, a sibling's advertisement still can.
        try? deps.cloud?.recordCommit(generation, round: nonce, keys: anchorKeys)
        deps.cloud?.removeResealed(below: generation)
        // The round's anchor landed under the current key: what was said of older ones no longer holds.
        anchorWarnings.removeAll { !$0.hasPrefix("REFUSED") }
        // The whole roster agreed on this generation: nothing is awaited any more.
        if anchorState != nil {
            anchorState = nil
            wedge.success(.generation)
        }
        invalidateDigest()
        barrier.lastOutcome = "the last barrier committed at \(DateStamp.format(clock.now())): generation \(generation), \(dropped) tombstones collected"
        note("barrier: generation \(generation), \(dropped) tombstones collected")
        broadcast(force: true, nowMs: clock.monotonicMilliseconds())
    }
}
