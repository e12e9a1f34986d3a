import Foundation
import QuireCore
import QuireStore
import QuireSync

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
                              local, local:/dir, or redis://host:port
          --once              one exchange: advertise, wait for the siblings that
                              answer to converge, then exit (at most --timeout,
                              default 10 s; exit 1 if one that answered did not)
          --until-converged   run until every sibling on the roster holds our
                              digest and we hold theirs (and at least 2 s, so
                              devices that just joined can introduce themselves),
                              then exit 0; exit 1 on --timeout (default 60 s)
                              naming those that did not
          --timeout S         seconds, for --once and --until-converged
          --verbose           print sync events on standard error
          --json              with --once/--until-converged: the result as JSON

        Tombstones are collected by a barrier that every device of the roster
        must answer, and only after the anchor landed in the cloud folder
        ('quire config cloud DIR'); a round starts 5 s after a sibling matched,
        when this device holds at least 64 tombstones or one a day old. Drills
        shorten these with QUIRE_BARRIER_MIN_TOMBSTONES, QUIRE_BARRIER_DEBOUNCE_MS
        and QUIRE_QUIET_WINDOW_MS. A device whose errors persist with no success
        for 10 minutes (QUIRE_WEDGED_AFTER_MS) says it is wedged, and why.

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
        let (identity, store) = try inv.open()
        let verbose = args.has("verbose")
        let printEvent: @Sendable (String) -> Void = { line in Output.error("sync: " + line) }
        let echo: (@Sendable (String) -> Void)? = verbose ? printEvent : nil
        let service: SyncService
        do {
            service = try SyncService.start(home: inv.home, store: store, identity: identity, relaySpec: args.value("relay"), echo: echo)
        } catch let e as SyncServiceError {
            throw CommandFailure(e.description)
        }
        // Serves 'quire offload/recall/fsck' run meanwhile (OffloadRuntime).
        OffloadRuntime.shared.attach(service.engine, home: inv.home, store: store, log: printEvent)
        defer { OffloadRuntime.shared.detach() }
        let stop = StopSignal()
        let started = Date()
        var outcome: (ok: Bool, message: String)? = nil
        var stableChecks = 0
        while !stop.isRequested {
            usleep(100_000)
            let elapsed = Date().timeIntervalSince(started)
            let engine = service.engine
            if untilConverged {
                // At least 2 s: a device that joined while nobody listened
                // re-introduces itself after 1 s, and an empty roster would
                // otherwise look converged at once.
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
        guard let outcome else { return }
        if args.has("json") {
            Output.json(["ok": outcome.ok, "message": outcome.message, "rounds": metrics.rounds, "rowsApplied": metrics.rowsApplied,
                         "bytesOut": metrics.bytesOut, "bytesIn": metrics.bytesIn])
        } else {
            Output.line(outcome.message)
        }
        if !outcome.ok { throw CommandFailure(outcome.message) }
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
