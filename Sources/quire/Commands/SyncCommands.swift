import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon

enum SyncCommands {
    static let usage = """
        usage: quire sync [--relay SPEC] [--once | --until-converged] [--timeout S] [--verbose] [--json]

        Syncs this device with its siblings (the other devices of the account)
        over the relay in prefs: advertises the state digest after local edits,
        pulls what differs from each sibling, and merges. Runs in the foreground
        until SIGINT or SIGTERM. While it runs, 'quire status' says whether
        each sibling is in sync, and why not; edits made meanwhile by other
        quire commands (or the mount) are picked up and advertised.

          --relay SPEC        use this relay instead of the one in prefs:
                              local, local:/dir, or redis://host:port (any
                              other SPEC is a usage error, exit 2; a relay
                              that cannot be reached is a failure, exit 1)
          --once              one exchange: advertise, wait for the siblings that
                              answer to converge, then exit (at most --timeout,
                              default 10 s; exit 1 if one that answered did not)
          --until-converged   run until every sibling on the roster holds our
                              digest and we hold theirs (and at least 2 s, so
                              devices that just joined can introduce themselves),
                              then exit 0; exit 1 on --timeout (default 60 s)
                              naming those that did not. With no sibling on the
                              roster (none added yet, or every other device
                              revoked) there is nobody to converge with: it
                              says so after 2 s and exits 3
          --timeout S         seconds, for --once and --until-converged
          --verbose           print sync events on standard error
          --json              with --once/--until-converged: the result as JSON
                              (ok, message, rounds, rowsApplied, bytesOut,
                              bytesIn); a sync that cannot start (the relay
                              unreachable, another sync running) prints it
                              too, with ok false and why; progress lines on
                              standard error become JSON too

        While catching up (a new device, a long sleep), a progress line on
        standard error says how many rows and bytes came in, at what rate, and
        about how many remain (a terminal only, unless --json).

        Tombstones are collected by a barrier that every device of the roster
        must answer, and only after the anchor landed in the cloud folder
        ('quire config cloud DIR'); a round starts 5 s after a sibling matched,
        when this device holds at least 64 tombstones or one a day old. Drills
        shorten these with QUIRE_BARRIER_MIN_TOMBSTONES, QUIRE_BARRIER_DEBOUNCE_MS
        and QUIRE_QUIET_WINDOW_MS. A device whose errors persist with no success
        for 10 minutes (QUIRE_WEDGED_AFTER_MS) says it is wedged, and why. Each
        file operation on the cloud folder is waited for at most 60 s
        (QUIRE_CLOUD_TIMEOUT_SECONDS): a folder that hangs (a network mount)
        stops only what needs it, and 'quire status' says so; sync over the
        relay goes on.

        Only one sync may run per device directory (the mount runs one too).
        """

    static let sync = Command(name: "sync", summary: "sync with sibling devices (foreground daemon)", usage: usage,
                              valued: ["relay", "timeout"], flags: ["once", "until-converged", "verbose", "json"],
                              run: run)

    static let up = Command(name: "up", summary: "same as 'quire sync'",
                            usage: usage.replacingOccurrences(of: "usage: quire sync", with: "usage: quire up"),
                            valued: ["relay", "timeout"], flags: ["once", "until-converged", "verbose", "json"],
                            run: run)

    @Sendable
    static func run(_ args: Arguments, _ inv: Invocation) throws {
        try args.expectPositional(0...0, "")
        let once = args.has("once"), untilConverged = args.has("until-converged")
        if once && untilConverged { throw UsageError("--once and --until-converged exclude each other") }
        var timeout: Double? = nil
        if let t = args.value("timeout") {
            guard let v = Double(t), v > 0 else { throw UsageError("--timeout expects seconds, not '\(t)'") }
            timeout = v
        }
        let relay = try args.relaySpec()
        let json = args.has("json")
        let verbose = args.has("verbose")
        let printEvent: @Sendable (String) -> Void = { line in Output.error("sync: " + line) }
        let echo: (@Sendable (String) -> Void)? = verbose ? printEvent : nil
        // Also serves 'quire offload/recall/fsck' run meanwhile.
        let store: ReplicaStore
        let service: Daemon
        do {
            let identity: Identity
            (identity, store) = try inv.open()
            service = try Daemon.start(home: inv.home, store: store, identity: identity, relaySpec: relay, echo: echo,
                                       log: printEvent)
        } catch {
            // A script that asked for JSON reads the failure there too (the
            // one line on stderr stays, as for every failure).
            let failure = error as? CommandFailure ?? CommandFailure("\(error)")
            if json { Output.json(result(ok: false, message: failure.message, metrics: nil)) }
            throw failure
        }
        let stop = StopSignal()
        let progress = ProgressLine(json: json)
        defer { progress.finish() }
        let started = Date()
        var outcome: (ok: Bool, message: String)? = nil
        var stableChecks = 0
        var alone = false
        while !stop.isRequested {
            usleep(100_000)
            let elapsed = Date().timeIntervalSince(started)
            let engine = service.engine
            progress.show(engine.catchUp())
            // Told it was revoked: nothing will ever converge; say why now,
            // not at the timeout.
            if (untilConverged || once), let revoked = engine.revocation { outcome = (false, revoked.words); break }
            if untilConverged {
                // At least 2 s: a device that joined while nobody listened
                // re-introduces itself after 1 s, and an empty roster would
                // otherwise look converged at once.
                // Every sibling revoked (or none yet): "converged" would claim a
                // sync with someone that never happened.
                if elapsed >= 2, let why = engine.nobodyToConvergeWith() { outcome = (false, why); alone = true; break }
                stableChecks = engine.isConverged() ? stableChecks + 1 : 0
                if stableChecks >= 5 && elapsed >= 2 { outcome = (true, "converged with every sibling"); break }
                if elapsed > (timeout ?? 60) {
                    outcome = (false, "not converged after \(Int(timeout ?? 60)) s with: \(engine.unconvergedSiblings().joined(separator: ", "))")
                    break
                }
            } else if once {
                let heard = engine.heardSiblings()
                let settled = !heard.isEmpty && heard.allSatisfy(\.inSync) && !engine.hasActivePulls
                stableChecks = settled ? stableChecks + 1 : 0
                if stableChecks >= 3 && elapsed > 1 { outcome = (true, "in sync with \(heard.map(\.name).sorted().joined(separator: ", "))"); break }
                if elapsed > (timeout ?? 10) {
                    let behind = heard.filter { !$0.inSync }.map(\.name).sorted()
                    outcome = heard.isEmpty ? (true, "no sibling answered within \(Int(timeout ?? 10)) s")
                        : behind.isEmpty ? (true, "in sync with \(heard.map(\.name).sorted().joined(separator: ", "))")
                        : (false, "not in sync after \(Int(timeout ?? 10)) s with: \(behind.joined(separator: ", "))")
                    break
                }
            }
        }
        // Linger briefly so a sibling's last request in flight gets its answer.
        if outcome != nil { usleep(300_000) }
        let metrics = service.engine.metricsSnapshot()
        service.stop()
        try? store.compact()   // see MountDaemon: the database file holds every row once sync stops
        guard let outcome else { return }
        if json {
            Output.json(result(ok: outcome.ok, message: outcome.message, metrics: metrics))
        } else {
            Output.line(outcome.message)
        }
        if alone { throw CommandFailure(outcome.message, status: 3) }
        if !outcome.ok { throw CommandFailure(outcome.message) }
    }

    /// What `--json` prints: the same fields whether sync ran (`metrics`)
    /// or failed before it could (then nothing was exchanged: zeros).
    static func result(ok: Bool, message: String, metrics: SyncMetrics?) -> [String: Any] {
        ["ok": ok, "message": message, "rounds": metrics?.rounds ?? 0, "rowsApplied": metrics?.rowsApplied ?? 0,
         "bytesOut": metrics?.bytesOut ?? 0, "bytesIn": metrics?.bytesIn ?? 0]
    }
}

/// The catch-up progress line, as rclone shows transfers: redrawn in place
/// on a terminal at most twice a second, once a catch-up lasted a second;
/// with `json`, one JSON object per update (for scripts, any stderr).
final class ProgressLine {
    private let json: Bool
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private var lastDrawn = Date.distantPast
    private var drawn = false

    init(json: Bool) { self.json = json }

    func show(_ catchUp: SyncStatus.CatchUp?) {
        guard let c = catchUp, c.seconds >= 1, json || isTerminal, Date().timeIntervalSince(lastDrawn) >= 0.5 else {
            if catchUp == nil { finish() }
            return
        }
        lastDrawn = Date()
        if json {
            var o: [String: Any] = ["event": "progress", "rowsPulled": c.rowsPulled, "bytesPulled": c.bytesPulled,
                                    "seconds": (c.seconds * 10).rounded() / 10, "bytesPerSecond": Int(c.bytesPerSecond)]
            if let r = c.rowsRemaining { o["rowsRemaining"] = r }
            if let data = try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]) {
                try? FileHandle.standardError.write(contentsOf: data + Data("\n".utf8))
            }
        } else {
            try? FileHandle.standardError.write(contentsOf: Data(("\r\u{1B}[K" + c.words).utf8))
            drawn = true
        }
    }

    /// Ends a line drawn in place.
    func finish() {
        if drawn { try? FileHandle.standardError.write(contentsOf: Data("\n".utf8)) }
        drawn = false
    }
}

/// SIGINT / SIGTERM as a flag the main loop polls.
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var requested = false
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.request() }
            source.resume()
            sources.append(source)
        }
    }

    private func request() { lock.lock(); requested = true; lock.unlock() }

    var isRequested: Bool { lock.lock(); defer { lock.unlock() }; return requested }
}
