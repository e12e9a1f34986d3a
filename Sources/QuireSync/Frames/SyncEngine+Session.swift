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
        guard seen.isAhead(ofStart: sealer.sessionStart, id: sealer.session) else { return }
        let closedByRestart = seen.id == nil && seen.start == sealer.sessionStart
        let start = max(seen.start + 1, UInt64(max(clock.now().seconds, 0)) * 1000)
        sealer = FrameSealer(identity: me, session: deps.random.bytes(8), sessionStart: start, maxFrameSize: deps.relay.maxFrameSize)
        if let path = deps.statePath {
            var state = SyncPersistentState.load(path: path)
            state.ownSessionStart = max(state.ownSessionStart, start)
            do { try state.save(path: path) } catch { report("writing \(path)", error) }
        }
        if closedByRestart {
            note("device \(name(of: sender)) restarted and closed this device's session (frames of it could be replays): started a new one")
        } else {
            note("device \(name(of: sender)) had accepted a later session of this device than the one it ran, so it refused "
                 + "this device's frames (was this device directory put back from a copy, or its clock set back?): started a new session after it")
        }
        broadcast(force: true, nowMs: clock.monotonicMilliseconds())
    }
}
