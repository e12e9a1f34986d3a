import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon

/// The sync part of `quire status`, read from the snapshot the running sync
/// (daemon or mount) writes, and the record of a mount that waits for its
/// relay (`RelayWait`): in words, whether each sibling is in sync, and
/// everything that stops convergence.
extension StatusReport {
    func addingSync(home: DeviceHome) -> StatusReport {
        var report = self
        let (json, lines) = SyncStatusSection.describe(home: home, now: SystemClock().now().seconds)
        report.json["sync"] = json
        report.text += "\n" + lines.joined(separator: "\n")
        return report
    }
}

enum SyncStatusSection {
    /// What a refused joining device says (in `quire status` and `init --join`).
    static func refusedText(_ why: String) -> String {
        "NOT ADMITTED: a device of the account refused this device: \(why); join again with the new invite in a new device directory (--home)"
    }

    /// Seconds without a snapshot after which a running engine is called
    /// silent (QUIRE_SYNC_SILENT_AFTER_SECONDS, more than 10, for tests).
    static let silentAfterSeconds: Int64 = ProcessInfo.processInfo.environment["QUIRE_SYNC_SILENT_AFTER_SECONDS"]
        .flatMap(Int64.init).map { max($0, 11) } ?? 60

    /// Seconds without a word from a sibling after which it is called away,
    /// as the engine does (`SyncConfiguration.awayAfterMilliseconds`: two
    /// heartbeats missed; QUIRE_SIBLING_AWAY_AFTER_SECONDS, 5 or more, for tests).
    static let awayAfterSeconds: Int64 = ProcessInfo.processInfo.environment["QUIRE_SIBLING_AWAY_AFTER_SECONDS"]
        .flatMap(Int64.init).map { max($0, 5) } ?? Int64(SyncConfiguration().awayAfterMilliseconds / 1000)

    /// Seconds after which a running engine's snapshot (rewritten every
    /// 10 s) is called unwritten when the disk is full.
    static let unwrittenAfterSeconds: Int64 = 15

    static func isDiskFull(_ home: DeviceHome) -> Bool {
        let disk = try? FileManager.default.attributesOfFileSystem(forPath: home.path)
        return ((disk?[.systemFreeSize] as? NSNumber)?.int64Value).map { $0 < StatusReport.fullDisk } ?? false
    }

    static func describe(home: DeviceHome, now: Int64) -> (json: [String: Any], lines: [String]) {
        let snapshot = SyncStatus.load(from: home)
        // A mount waiting for its relay runs no engine, so only its record
        // says why sync does not run; an engine running meanwhile (another
        // process took the lock) speaks for itself.
        let relayWait = snapshot?.isProcessAlive == true ? nil : RelayWait.load(from: home)
        guard let s = snapshot else {
            if let relayWait { return (["running": false, "waitingForRelay": waitJSON(relayWait)], [waitText(relayWait, now: now)]) }
            return (["running": false], ["sync: has not run on this device yet ('quire sync' or 'quire mount' runs it)"])
        }
        var lines: [String] = []
        let alive = s.isProcessAlive
        if let relayWait { lines.append(waitText(relayWait, now: now)) }
        // A running engine writes its snapshot at least every 10 seconds;
        // one silent for a minute is blocked (a cloud folder on a network
        // mount that does not answer, a disk that hangs) or killed without
        // its process going away.
        let silentFor = now - s.updatedAt
        // On a full disk the engine runs but cannot replace its snapshot: an
        // older one would show siblings "in sync" as they were then, as now.
        let unwritten = alive && silentFor >= Self.unwrittenAfterSeconds && isDiskFull(home)
        if unwritten {
            lines.append("sync: running (process \(s.pid)) on \(s.relay), but the disk is FULL: it could not write what it knows since "
                         + "\(DateText.format(s.updatedAt, time: true)) (\(Ago.text(silentFor))); what follows is from then")
        } else if alive, silentFor >= Self.silentAfterSeconds {
            lines.append("sync: process \(s.pid) runs but has said NOTHING since \(DateText.format(s.updatedAt, time: true)) (\(Ago.text(silentFor))): "
                         + "it may be blocked on a folder or disk "
                         + "that does not answer (a cloud folder on a network mount?); what follows is from then. If it stays so, stop it "
                         + "('kill \(s.pid)') and start sync again")
        } else if alive {
            lines.append("sync: running (process \(s.pid)) on \(s.relay), \(phaseText(s.phase))")
        } else {
            lines.append("sync: not running (last ran on \(s.relay) until \(Ago.text(now - s.updatedAt))); what follows is from then")
        }
        if alive, let since = s.relayUnreachableSince {
            lines.append("RELAY UNREACHABLE since \(DateText.format(since, time: true)) (\(Ago.text(now - since))): edits made here, and on the "
                         + "other devices, wait until it answers; sync goes on by itself then")
        }
        if let revocation = s.revocation {
            lines.append(revocation.words)
        } else if s.phase == .revoked {
            lines.append("this device was REVOKED from the account: it no longer syncs")
        }
        if let why = s.admissionRefused {
            lines.append(refusedText(why))
        }
        if s.siblings.isEmpty { lines.append("no sibling devices on the roster yet ('quire invite' adds one)") }
        for sib in s.siblings {
            lines.append("  " + (s.phase == .revoked ? revokedSiblingText(sib, now: now) : siblingText(sib, now: now)))
        }
        if alive, let catchUp = s.catchUp, catchUp.seconds >= 1 { lines.append(catchUp.words) }
        let stuck = s.unsyncableRows ?? []
        if !stuck.isEmpty {
            lines.append("\(stuck.count) \(stuck.count == 1 ? "row" : "rows") CANNOT SYNC (too large to travel; every other row still syncs; "
                         + "shorten or split it here to let it go):")
            for row in stuck.prefix(20) { lines.append("  " + unsyncableText(row)) }
            if stuck.count > 20 { lines.append("  … and \(stuck.count - 20) more (quire status --json lists them all)") }
        }
        let dropped = s.dropped.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        if !dropped.isEmpty {
            let words = dropped.map { "\($0.value) \(FrameDrop(rawValue: $0.key)?.description ?? $0.key)" }
            lines.append("dropped frames: " + words.joined(separator: ", "))
        }
        if s.sendErrors > 0 { lines.append("\(s.sendErrors) frames could not be sent since sync started (the relay unreachable)") }
        // A stopped run's barrier and anchor words hold only while nothing
        // moved this device's generation since (a restore, a recovery by
        // the anchor check a command runs): a "recovered from the cloud
        // anchor" line must not outlive the state it speaks of.
        let generation = (try? home.prefs.load().generation) ?? s.generation
        let checkedSince = (AnchorCatchUp.load(from: home)?.at ?? 0) > s.updatedAt
        let stale = !alive && (s.generation != generation || checkedSince)
        if stale {
            lines.append("(what the last run said of the barrier, the anchor and its recent events no longer holds: this device's generation "
                         + (s.generation != generation ? "went from \(s.generation) to \(generation) since" : "was checked against the anchor since") + ")")
        } else {
            if let barrier = s.barrier { lines.append(barrier) }
            if let waits = s.barrierWaits { lines.append(waits) }
            // A running sync's wait is said at the top of `quire status`.
            if !alive, let anchor = s.anchor { lines.append("STUCK: " + anchor) }
        }
        for warning in s.cloudWarnings ?? [] { lines.append("cloud folder: " + warning) }
        for warning in s.offloadWarnings ?? [] { lines.append("OFFLOADED BODIES MISSING: " + warning) }
        if let since = s.wedgedSince, let reason = s.wedgedReason {
            lines.append("WEDGED since \(DateText.format(since, time: true)): \(reason); nothing has succeeded since. "
                         + "'quire repair' backs this device up first, then offers the ways back")
        }
        // A stale run's events speak of the state before (a recovery it made, say).
        if !stale { for event in s.events.suffix(3) { lines.append("  recent: \(event)") } }
        let current = stale ? nil : s
        var json: [String: Any] = ["barrier": current?.barrier as Any, "barrierWaits": current?.barrierWaits as Any,
                                   "barrierWaitsFor": current?.barrierWaitsFor ?? [], "anchor": current?.anchor as Any,
                                   "cloudWarnings": s.cloudWarnings ?? [], "offloadWarnings": s.offloadWarnings ?? [],
                                   "wedged": s.wedgedReason.map { ["since": s.wedgedSince ?? 0, "reason": $0] as [String: Any] } as Any, "running": alive, "phase": s.phase.rawValue, "relay": s.relay, "pid": s.pid,
                                   "updatedAt": s.updatedAt, "silent": alive && silentFor >= Self.silentAfterSeconds, "unwrittenOnFullDisk": unwritten, "rounds": s.rounds, "rowsApplied": s.rowsApplied,
                                   "dropped": s.dropped, "sendErrors": s.sendErrors, "relayUnreachableSince": s.relayUnreachableSince as Any,
                                   "admissionRefused": s.admissionRefused as Any,
                                   "revocation": s.revocation.map(revocationJSON) as Any]
        if let relayWait { json["waitingForRelay"] = waitJSON(relayWait) }
        if alive, let c = s.catchUp {
            json["catchUp"] = ["rowsPulled": c.rowsPulled, "bytesPulled": c.bytesPulled, "seconds": c.seconds,
                               "rowsRemaining": c.rowsRemaining as Any]
        }
        json["unsyncableRows"] = stuck.map {
            ["namespace": $0.namespace, "key": $0.key, "name": $0.name, "reason": $0.reason, "since": $0.since,
             "text": unsyncableText($0)] as [String: Any]
        }
        json["siblings"] = s.siblings.map { sib -> [String: Any] in
            var o: [String: Any] = ["device": sib.device, "name": sib.name, "inSync": sib.inSync, "divergent": sib.divergent,
                                    "rounds": sib.rounds, "storms": sib.storms, "text": s.phase == .revoked ? revokedSiblingText(sib, now: now) : siblingText(sib, now: now)]
            if let v = sib.lastSeen { o["lastSeen"] = v }
            o["away"] = sib.lastSeen.map { now - $0 > awayAfterSeconds } ?? false
            if let v = sib.lastMatch { o["lastMatch"] = v }
            if let v = sib.stormBackoffUntil { o["stormBackoffUntil"] = v }
            if let v = sib.incompatibleVersion { o["incompatibleVersion"] = v }
            if let v = sib.generationGap { o["generationGap"] = v }
            return o
        }
        return (json, lines)
    }

    /// A mount's sync waiting for its relay, in words (the same as the
    /// line the mount logged, with what it learned since).
    static func waitText(_ wait: RelayWait, now: Int64) -> String {
        "sync: WAITS FOR THE RELAY \(wait.relay), unreachable since \(DateText.format(wait.since, time: true)) (\(Ago.text(now - wait.since))); "
            + "last tried \(Ago.text(now - wait.lastTriedAt)): \(wait.lastError). The mount (process \(wait.pid)) starts sync once it answers "
            + "(it tries again at least every \(Int(DaemonWaiter.relayInterval)) s); the folder works meanwhile, and edits wait to be advertised"
    }

    static func waitJSON(_ wait: RelayWait) -> [String: Any] {
        ["relay": wait.relay, "since": wait.since, "lastTriedAt": wait.lastTriedAt, "lastError": wait.lastError, "pid": wait.pid]
    }

    static func unsyncableText(_ row: SyncStatus.UnsyncableRow) -> String {
        "\(row.namespace)/" + (row.name.isEmpty ? "" : "'\(row.name)' ") + "(\(row.key.prefix(12))): \(row.reason)"
    }

    static func phaseText(_ phase: SyncStatus.Phase) -> String {
        switch phase {
        case .settling: return "settling (start-up quiet window: the store may still be landing, nothing infers deletions yet)"
        case .settled: return "settled"
        case .revoked: return "revoked"
        case .stopped: return "stopped"
        }
    }

    /// This device's revocation for `--json` (here and at the top of `quire status`).
    static func revocationJSON(_ r: SyncStatus.Revocation) -> [String: Any] {
        ["by": r.by as Any, "byName": r.byName as Any, "at": r.at as Any, "admissionVoid": r.admissionVoid, "text": r.words]
    }

    /// A sibling as a revoked device sees it: whatever the digests said
    /// last, it takes nothing from this device any more.
    static func revokedSiblingText(_ sib: SyncStatus.Sibling, now: Int64) -> String {
        "'\(sib.name)' (\(sib.device.prefix(12))) refuses this device's frames (revoked); "
            + (sib.lastSeen.map { "last heard from \(Ago.text(now - $0))" } ?? "not heard from")
    }

    static func siblingText(_ sib: SyncStatus.Sibling, now: Int64) -> String {
        let who = "'\(sib.name)' (\(sib.device.prefix(12)))"
        let seen = sib.lastSeen.map { "last seen \(Ago.text(now - $0))" } ?? "not heard from"
        if let v = sib.incompatibleVersion {
            return "\(who) runs an INCOMPATIBLE version of quire (digest wire version \(v), this build \(StateDigest.wireVersion)): not syncing with it until both run the same version; \(seen)"
        }
        if let g = sib.generationGap {
            return "\(who) is at generation \(g), across a barrier gap from this device: content reconcile refused; \(seen)"
        }
        if let until = sib.stormBackoffUntil, until > now {
            return "\(who) STORM: too many rounds without converging; backing off until \(until - now) s from now; still out of sync in \(sib.divergent.joined(separator: ", ")); \(seen)"
        }
        // Silent for two heartbeats: gone (stopped, asleep, offline), not syncing.
        if let last = sib.lastSeen, now - last > awayAfterSeconds {
            let then = sib.inSync ? "in sync" : sib.divergent.isEmpty ? "out of sync" : "\(sib.divergent.joined(separator: ", ")) differed"
            return "\(who) AWAY: not reachable since \(DateText.format(last, time: true)) (not heard from for "
                + "\(Ago.text(now - last).replacingOccurrences(of: " ago", with: ""))); \(then) when last seen; no deletion can be collected until it answers"
        }
        if sib.inSync { return "\(who) in sync; \(seen)" }
        if sib.lastSeen == nil { return "\(who) not heard from since sync started" }
        return "\(who) syncing" + (sib.divergent.isEmpty ? "" : " (\(sib.divergent.joined(separator: ", ")) differ)") + "; \(seen)"
    }
}
