import QuireCore

/// This device's own session stamp, as its siblings see it.
extension SyncEngine {
    /// A sibling's digest names the newest session of ours it accepted. If
    /// that is ahead of the one we run, it refuses all we send as replays,
    /// silently, until our wall clock passes it: this happens when the
    /// device directory was put back from a copy (`cp -a`, a VM snapshot),
    /// whose `sync-state.json` holds an older stamp, under a clock that is
    /// not past the session started since. Starting a new session after
    /// the one it saw gets our frames accepted again, and the event says so.
    /// A stale or replayed hint is harmless: stamps only move forward.
    func startSession(after seen: SessionSeen, toldBy sender: DeviceID) {
        guard let restart = link.startSession(after: seen, now: clock.now(), sessionID: { deps.random.bytes(8) }) else { return }
        if let error = restart.saveError { report("writing \(deps.statePath ?? "")", error) }
        if restart.closedByRestart {
            note("device \(name(of: sender)) restarted and closed this device's session (frames of it could be replays): started a new one")
        } else {
            note("device \(name(of: sender)) had accepted a later session of this device than the one it ran, so it refused "
                 + "this device's frames (was this device directory put back from a copy, or its clock set back?): started a new session after it")
        }
        broadcast(force: true, nowMs: clock.monotonicMilliseconds())
    }
}
