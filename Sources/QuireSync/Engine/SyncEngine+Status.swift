import Foundation
import QuireCore
import QuireStore

/// The status snapshot other processes read.
extension SyncEngine {
    func makeStatus() -> SyncStatus {
        let nowMs = clock.monotonicMilliseconds()
        let now = clock.now()
        let siblingStatus = siblings.values.sorted { $0.member.name < $1.member.name }.map { s -> SyncStatus.Sibling in
            var backoff: Int64? = nil
            if let until = s.storm.backoffUntilMs, until > nowMs { backoff = now.seconds + Int64((until - nowMs + 999) / 1000) }
            return SyncStatus.Sibling(device: s.member.deviceID.hex, name: s.member.name, lastSeen: s.lastSeen?.seconds,
                                      lastMatch: s.lastMatch?.seconds, inSync: s.inSync, divergent: s.divergent.map(\.name),
                                      stormBackoffUntil: backoff, storms: s.storm.storms,
                                      incompatibleVersion: s.incompatibleVersion.map(Int.init), generationGap: s.generationGap,
                                      rounds: s.rounds, bytesIn: s.bytesIn, bytesOut: s.bytesOut)
        }
        var dropped: [String: Int] = [:]
        for (reason, n) in metrics.dropped { dropped[reason.rawValue] = n }
        let wedged = wedge.wedged(nowMs: nowMs, after: configuration.wedgedAfterMilliseconds)
        return SyncStatus(device: me.deviceID.hex, pid: getpid(), updatedAt: now.seconds, startedAt: startedAt.seconds,
                          running: isAttached, phase: phase, relay: deps.relayDescription,
                          generation: (try? currentDigest().digest.generation) ?? deps.generation(),
                          siblings: siblingStatus, dropped: dropped, framesIn: metrics.framesIn, framesOut: metrics.framesOut,
                          bytesIn: metrics.bytesIn, bytesOut: metrics.bytesOut, rounds: metrics.rounds,
                          rowsApplied: metrics.rowsApplied, sendErrors: metrics.sendErrors, events: events,
                          unsyncableRows: unsyncable.isEmpty ? nil : unsyncableStatus, barrier: barrier.lastOutcome, anchor: anchorState,
                          wedgedSince: wedged.map { now.seconds - Int64((nowMs &- $0.sinceMs) / 1000) },
                          wedgedReason: wedged?.reason)
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

    func persistReplayFloors() {
        guard let path = deps.statePath else { return }
        let floors = replay.floors
        guard floors != lastPersistedFloors else { return }
        var state = SyncPersistentState.load(path: path)
        state.replayFloors = Dictionary(uniqueKeysWithValues: floors.map { ($0.key.hex, $0.value) })
        state.ownSessionStart = max(state.ownSessionStart, sealer.sessionStart)
        do {
            try state.save(path: path)
            lastPersistedFloors = floors
        } catch {
            report("writing \(path)", error)
        }
    }
}
