import Foundation
import QuireCore
import QuireStore

/// The anchor check, further than the seed: at start-up too (a restored
/// device with no sibling online still notices), and whenever a sibling
/// advertises a higher generation.
extension SyncEngine {
    /// How often a device that waits behind the fleet with no sibling
    /// ahead heard looks at the folder again.
    static let anchorRecheckMilliseconds: UInt64 = 30_000

    /// A device that waits on the cloud folder (the committed round's
    /// anchor not there yet, as when a sync service is behind; no anchor
    /// it may use) looks again now and then: what it waits for may land
    /// with no sibling ever heard.
    func recheckAnchorWhileWaiting(nowMs: UInt64) {
        guard anchorState != nil, deps.cloud != nil, siblings.aheadOf(deps.generation()) == nil else {
            anchorRecheckAtMs = nil
            return
        }
        guard let due = anchorRecheckAtMs else {
            anchorRecheckAtMs = nowMs + Self.anchorRecheckMilliseconds
            return
        }
        guard nowMs >= due else { return }
        anchorRecheckAtMs = nowMs + Self.anchorRecheckMilliseconds
        checkAnchor(trigger: "looked again while waiting")
    }

    /// What the anchor check alone found (`checkAnchorBeforeUse`).
    public struct AnchorCheckResult: Sendable {
        /// What a recovery from the anchor did, in words (nil: none ran).
        public var recovered: String?
        /// Why this device is still behind the fleet, in words (nil: it is not).
        public var behind: String?
    }

    /// The start-up anchor check with no relay attached: a command about to
    /// read or edit the replica (after `quire restore`, or on a device put
    /// back by hand) runs it first, so rows the fleet collected are gone
    /// before anyone sees or edits them. An edit of such a row made before
    /// the check would count as this device's unshared write at the next
    /// recovery, and bring the note back on every device.
    public func checkAnchorBeforeUse(trigger: String) -> AnchorCheckResult {
        lock.lock()
        defer { lock.unlock() }
        do { try reloadRoster() } catch { report("anchor check", error) }
        let before = barrier.lastOutcome
        checkAnchor(trigger: trigger)
        return AnchorCheckResult(recovered: barrier.lastOutcome != before ? barrier.lastOutcome : nil, behind: anchorState)
    }

    /// Reads the anchor's generation and, if this device is behind it
    /// (rolled back), recovers from the anchor's snapshot: join it in,
    /// remove what the fleet collected, keep this device's unshared
    /// writes, mint a new incarnation, and only then advance the
    /// generation (a failed import leaves it alone).
    ///
    /// Only anchors sealed under every rotation this device knows count
    /// (`AnchorKeys`): an older one may be a revoked device's forgery, and
    /// is named in the status, never used. If an anchor names a rotation
    /// this device has not learned, its own log is behind (it was put back
    /// from an older backup), and no anchor is trusted until it is not.
    func checkAnchor(trigger: String) {
        defer {
            if let stuck = anchorState { wedge.error(.generation, stuck, nowMs: clock.monotonicMilliseconds()) } else { wedge.success(.generation) }
        }
        let local = deps.generation()
        // The sibling ahead of us, if any: the fallback when the anchor cannot
        // be read. The one heard from last: a sibling that advertised once and
        // went away (lost, revoked where this device has not learned it yet)
        // never answers, and a device behind would ask it for ever (the
        // simulator's seed 109 with --revocations).
        let ahead = siblings.aheadOf(local)
        guard let cloud = deps.cloud else {
            if let (id, sibling) = ahead {
                anchorState = "this device is behind the fleet (generation \(local), \(sibling.member.name) is at \(sibling.generationGap!)) "
                    + "and has no cloud folder; catching up from that sibling's snapshot ('quire config cloud DIR' names the folder)"
                requestSnapshot(from: id, theirGeneration: sibling.generationGap!)
            }
            return
        }
        // A revocation this device's log lost to a restore comes back first.
        exchangeDeviceLog(nowMs: clock.monotonicMilliseconds())
        let keys = anchorKeys
        let survey: CloudFolder.Survey
        do {
            survey = try cloud.survey(keys: keys)
            wedge.success(.cloud)
        } catch {
            wedge.error(.cloud, "the cloud anchor cannot be read (\(error)); a restore of this device cannot be detected until it can",
                        nowMs: clock.monotonicMilliseconds())
            if let (id, sibling) = ahead {
                anchorState = "this device is behind the fleet (generation \(local), \(sibling.member.name) is at \(sibling.generationGap!)) "
                    + "and cannot read the anchor (\(error)); catching up from that sibling's snapshot"
                requestSnapshot(from: id, theirGeneration: sibling.generationGap!)
            }
            return
        }
        anchorWarnings = cloudWarnings(survey: survey, local: local)
        for warning in anchorWarnings { noteOnce("cloud folder: " + warning) }
        guard survey.unknownRotations.isEmpty else {
            // The log is behind: a sibling's snapshot carries the log (and the rows).
            if let (id, sibling) = ahead {
                anchorState = "this device is behind the fleet (generation \(local), \(sibling.member.name) is at \(sibling.generationGap!)) "
                    + "and the anchor is sealed after a revocation it has not learned; catching up from that sibling's snapshot"
                requestSnapshot(from: id, theirGeneration: sibling.generationGap!)
            } else {
                anchorState = nil
            }
            return
        }
        switch AnchorDecision.decide(local: local, anchor: survey.newest?.header.generation) {
        case .noAnchor, .current:
            anchorState = nil
            // A sibling ahead of an anchor we can read: the anchor write of
            // that round did not reach this folder; its snapshot can.
            if let (id, sibling) = ahead { requestSnapshot(from: id, theirGeneration: sibling.generationGap!); return }
            // No anchor at all, yet the folder says the fleet committed past
            // this device: it waits for a sibling, and says so.
            if survey.newest == nil, let committed = cloud.committedGeneration(keys: keys), committed > local {
                anchorState = "behind the fleet: it committed generation \(committed), this device is at \(local), and the cloud folder "
                    + "holds no anchor it can use; waiting to hear from a device at generation \(committed)"
                noteOnce("anchor: " + anchorState!)
            }
        case .rolledBack(let target):
            // The anchor lands before its round commits: act on it only once
            // the round is known to have committed (CommitRecord).
            let record = cloud.committedRound(keys: keys)
            let fleetGeneration = max(ahead?.sibling.generationGap ?? 0, record?.generation ?? 0)
            // Committed past the newest anchor: that anchor is not the
            // fleet's (the folder was put back, or the newest write has not
            // reached it), and at its generation it may be one of a round
            // that never committed, whose committed twin was overwritten. A
            // sibling at the fleet's generation serves what it holds instead.
            if fleetGeneration > target {
                // Waiting is being stuck on the generation, and says so: if
                // every device was put back from before that generation, no
                // sibling will ever serve it.
                anchorState = ahead != nil ? nil
                    : "behind the fleet: it committed generation \(fleetGeneration), this device is at \(local), and the newest anchor "
                    + "in the cloud folder is at \(target), too old to recover from; waiting to hear from a device at generation "
                    + "\(fleetGeneration). If every device was put back from before it, the fleet's state at it is lost with its "
                    + "anchor, and rows deleted since may come back"
                noteOnce("anchor: the fleet committed generation \(fleetGeneration) but the newest anchor here is at \(target) (this device at \(local), "
                     + "\(trigger)): not recovering from an older anchor; " + (ahead == nil ? "waiting to hear from a sibling at generation \(fleetGeneration)"
                                                                                 : "catching up from a sibling at generation \(fleetGeneration)"))
                if let (id, sibling) = ahead { requestSnapshot(from: id, theirGeneration: sibling.generationGap!) }
                return
            }
            let isCommitted = fleetGeneration >= target
            guard isCommitted, var snapshot = survey.newest?.snapshot else {
                // Most likely the round did commit and its record has not
                // reached this folder (or was removed): this device holds
                // rows the fleet may have collected, and says so until a
                // sibling at that generation is heard (docs/anchor-format.md).
                // A record at an older generation is the common harmless
                // case (a round abandoned after its upload): no alarm then.
                anchorState = ahead != nil || record != nil ? nil
                    : "behind the fleet's anchor: the cloud folder holds an anchor at generation \(target), this device is at \(local), "
                    + "and no device is known to have committed it (the folder holds no commit record), so it is not recovered from; "
                    + "unless that round was abandoned after writing it, notes and rows the fleet deleted may still show here, and an "
                    + "edit of one brings it back on every device. Waiting to hear from a device at generation \(target)"
                noteOnce("anchor: the fleet's anchor is at generation \(target), this device at \(local) (\(trigger)), but no device is known to have "
                         + "committed that generation (a round abandoned after its upload, or its commit record missing?): not recovering from it")
                if let (id, sibling) = ahead { requestSnapshot(from: id, theirGeneration: sibling.generationGap!) }
                return
            }
            // A sibling at that generation, or the commit record, names the
            // round that committed it: only that round's anchor is the
            // fleet's. Another one at the same generation is of a round
            // abandoned after its upload, still shown by a sync service
            // that has not brought the committed one, or has put it beside
            // as a conflict copy (recovering from it would take every row
            // written since for a collected one, or bring back what the
            // committed round collected).
            let aheadAtTarget = ahead.flatMap { $0.sibling.generationGap == target ? $0 : nil }
            if let round = aheadAtTarget?.sibling.advertisedRound ?? (record?.generation == target ? record?.round : nil), snapshot.round != round {
                if let committed = (try? cloud.anchor(ofRound: round, generation: target, keys: keys)) ?? nil {
                    snapshot = committed
                } else if let (id, sibling) = aheadAtTarget {
                    anchorState = nil
                    note("anchor: the anchor at generation \(target) in the cloud folder is not of the round that committed it "
                         + "(a round abandoned after its upload, and the folder not yet showing the committed one): not recovering from it; "
                         + "catching up from \(sibling.member.name)'s snapshot")
                    requestSnapshot(from: id, theirGeneration: target)
                    return
                } else {
                    anchorState = "behind the fleet: it committed generation \(target), this device is at \(local), and the anchor at that "
                        + "generation in the cloud folder is not of the round that committed it (a round abandoned after its upload, and a "
                        + "sync service that has not brought the committed one yet); waiting for it, or to hear from a device at generation \(target)"
                    noteOnce("anchor: " + anchorState!)
                    return
                }
            }
            note("anchor: this device is at generation \(local) but the fleet's anchor is at \(target) (\(trigger)): it was put back from a backup; recovering")
            do {
                let report = try store.recover(from: admissibleSnapshotRows(snapshot.rows, from: "the cloud anchor"), graveyard: admissibleGraveyard(snapshot.graveyard),
                                               roster: snapshot.roster, graveyardIsComplete: snapshot.graveyardCovers(since: local),
                                               coverage: snapshot.coverage)
                try store.mintIncarnation(reason: "the cloud anchor is at generation \(target), this device was at \(local): it had been put back from a backup")
                try deps.setGeneration(target)
                try noteRound(snapshot.round, of: target)
                invalidateDigest()
                anchorState = nil
                barrier.lastOutcome = "recovered from the cloud anchor at \(DateStamp.format(clock.now())): generation \(local) → \(target), "
                    + "\(report.joined) rows brought forward, \(report.removed) rows the fleet had deleted removed, "
                    + "\(report.keptUnshared) rows kept for writes no other device had seen"
                note("anchor: " + barrier.lastOutcome!)
                broadcast(force: true, nowMs: clock.monotonicMilliseconds())
            } catch {
                anchorState = "behind the fleet (anchor at generation \(target), this device at \(local)) and recovery failed: \(error); "
                    + "nothing was changed and the generation stays; 'quire repair' or a retry at the next start"
                note("anchor: recovery failed: \(error)")
            }
        }
    }
}
