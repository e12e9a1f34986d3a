import Foundation
import QuireCore
import QuireStore

/// The status snapshot other processes read.
extension SyncEngine {
    func makeStatus() -> SyncStatus {
        let nowMs = clock.monotonicMilliseconds()
        let now = clock.now()
        let siblingStatus = siblings.all.sorted { $0.member.name < $1.member.name }.map { s -> SyncStatus.Sibling in
            let storm = pulls.storms[s.member.deviceID]
            var backoff: Int64? = nil
            if let until = storm?.backoffUntilMs, until > nowMs { backoff = now.seconds + Int64((until - nowMs + 999) / 1000) }
            return SyncStatus.Sibling(device: s.member.deviceID.hex, name: s.member.name, lastSeen: s.lastSeen?.seconds,
                                      lastMatch: s.lastMatch?.seconds, inSync: s.inSync, divergent: s.divergent.map(\.name),
                                      stormBackoffUntil: backoff, storms: storm?.storms ?? 0,
                                      incompatibleVersion: s.incompatibleVersion.map(Int.init), generationGap: s.generationGap,
                                      rounds: s.rounds, bytesIn: s.bytesIn, bytesOut: s.bytesOut)
        }
        var dropped: [String: Int] = [:]
        for (reason, n) in metrics.dropped { dropped[reason.rawValue] = n }
        let wedged = wedge.wedged(nowMs: nowMs, after: configuration.wedgedAfterMilliseconds)
        var status = SyncStatus(device: me.deviceID.hex, pid: getpid(), updatedAt: now.seconds, startedAt: startedAt.seconds,
                          running: isAttached, phase: phase, relay: deps.relayDescription,
                          generation: (try? currentDigest().digest.generation) ?? deps.generation(),
                          siblings: siblingStatus, dropped: dropped, framesIn: metrics.framesIn, framesOut: metrics.framesOut,
                          bytesIn: metrics.bytesIn, bytesOut: metrics.bytesOut, rounds: metrics.rounds,
                          rowsApplied: metrics.rowsApplied, sendErrors: metrics.sendErrors,
                          relayUnreachableSince: metrics.relayUnreachableSince?.seconds, events: events,
                          unsyncableRows: unsyncable.isEmpty ? nil : unsyncableStatus, barrier: barrier.lastOutcome, anchor: anchorState,
                          wedgedSince: wedged.map { now.seconds - Int64((nowMs &- $0.sinceMs) / 1000) },
                          wedgedReason: wedged?.reason, catchUp: catchUpProgress(nowMs: nowMs), cloudWarnings: currentCloudWarnings,
                          admissionRefused: roster[me.deviceID]?.trust == .trusted ? nil : admissionRefusal,
                          offloadWarnings: missingBodyWarnings, revocation: ownRevocation)
        if let wait = barrierWait(now: now, nowMs: nowMs) {
            status.barrierWaits = wait.words
            status.barrierWaitsFor = wait.away
        }
        return status
    }

    /// Deletions this device keeps because a device of the roster is away
    /// (DESIGN rule 8: a device that cannot converge says so): a barrier
    /// needs every device's answer, so none can collect them until it
    /// answers or is revoked.
    func barrierWait(now: Timestamp, nowMs: UInt64) -> (words: String, away: [String])? {
        guard phase != .revoked, isAttached else { return nil }
        let limit = configuration.awayAfterMilliseconds
        var away: [(name: String, words: String)] = []
        for member in roster.siblings(of: me.deviceID).sorted(by: { $0.name < $1.name }) {
            let sibling = siblings[member.deviceID]
            guard nowMs &- (sibling?.lastSeenMs ?? startedMs) > limit else { continue }
            let since = sibling?.lastSeen.map { "away since \(DateStamp.format($0))" } ?? "not heard from since sync started"
            away.append((member.name, "'\(member.name)' (\(since))"))
        }
        // Only once someone is away: the count is a query of the replica.
        guard !away.isEmpty, let backlog = try? store.tombstoneBacklog(), backlog.count > 0 else { return nil }
        let n = backlog.count
        let words = "barrier: " + (n == 1 ? "1 deleted row is kept as a tombstone" : "\(n) deleted rows are kept as tombstones")
            + ": collecting \(n == 1 ? "it" : "them") needs an answer from every device, and " + away.map(\.words).joined(separator: ", ")
            + (away.count == 1 ? " is" : " are") + " not reachable; \(n == 1 ? "it waits" : "they wait") until "
            + (away.count == 1 ? "it answers" : "they answer") + " (a device that is lost: 'quire devices revoke NAME')"
        return (words, away.map(\.name))
    }

    /// Anchors refused and backup keys missing, for the status (nil: nothing to say).
    var currentCloudWarnings: [String]? {
        var out = anchorWarnings + keyProblems + deviceLogWarnings
        if deps.cloud != nil, let since = CloudIO.stuckSince {
            out.insert("has not answered since \(DateStamp.format(since)) (a network mount or sync service that hangs?): sync over "
                       + "the relay goes on; what needs the folder (the anchor, the barrier, the device log's copies) waits for it", at: 0)
        }
        if backupKeyIsReal, phase != .revoked, !keySchedule.missing(in: rotationKeys).isEmpty { out.append(anchorKeys.missingWords) }
        return out.isEmpty ? nil : out
    }

    /// Notes when a catch-up begins (a pull runs) and ends (nothing is
    /// pulled, and every sibling heard from matches or none was pulled from
    /// for `catchUpQuietMilliseconds`: a device away or out of sync with
    /// another does not keep a finished catch-up going for ever).
    func trackCatchUp(nowMs: UInt64) {
        if !pulls.isEmpty { lastPullMs = nowMs }
        if catchUpStart == nil, !pulls.isEmpty {
            catchUpStart = (ms: nowMs, rows: metrics.rowsApplied, bytes: metrics.bytesIn)
        } else if catchUpStart != nil, pulls.isEmpty,
                  siblings.all.allSatisfy({ $0.lastSeenMs == nil || $0.inSync }) || nowMs &- lastPullMs >= Self.catchUpQuietMilliseconds {
            catchUpStart = nil
        }
    }

    static let catchUpQuietMilliseconds: UInt64 = 5_000

    func catchUpProgress(nowMs: UInt64) -> SyncStatus.CatchUp? {
        guard let start = catchUpStart else { return nil }
        let theirs = siblings.all.compactMap(\.rowCount).max()
        let ours = advertiser.cachedDigest?.rows
        let remaining = theirs.flatMap { t in ours.map { t > $0 ? t - $0 : 0 } }
        return SyncStatus.CatchUp(rowsPulled: metrics.rowsApplied - start.rows, bytesPulled: metrics.bytesIn - start.bytes,
                                  seconds: Double(nowMs &- start.ms) / 1000, rowsRemaining: remaining)
    }

    /// The catch-up in progress, if any (for a progress line).
    public func catchUp() -> SyncStatus.CatchUp? {
        lock.lock(); defer { lock.unlock() }
        return catchUpProgress(nowMs: clock.monotonicMilliseconds())
    }

    /// Rewrites the snapshot when something in it changed (at most every
    /// status interval), and at least every 10 s so readers see it is alive.
    func writeStatus(force: Bool) {
        let nowMs = clock.monotonicMilliseconds()
        guard force || nowMs &- lastStatusWriteMs >= configuration.statusIntervalMilliseconds else { return }
        persistReplayFloors()
        guard let path = deps.statusPath else { lastStatusWriteMs = nowMs; return }
        let snapshot = makeStatus()
        if !force, var previous = lastWrittenStatus, nowMs &- lastStatusWriteMs < 10_000 {
            previous.updatedAt = snapshot.updatedAt
            if previous == snapshot { return }
        }
        lastStatusWriteMs = nowMs
        do {
            try snapshot.save(to: path)
            lastWrittenStatus = snapshot
        } catch {
            report("writing \(path)", error)
        }
    }

    /// Writes the replay floors down if they moved (`FrameLink.persistFloors`).
    func persistReplayFloors() {
        do { try link.persistFloors() } catch { report("writing \(deps.statePath ?? "")", error) }
    }
}
