import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon

/// `quire offload` and `quire recall`.
enum OffloadCommands {
    static let offload = Command(
        name: "offload",
        summary: "move note bodies to the homebase, keeping title, tags and hash",
        usage: """
            usage: quire offload [NOTE...] [--older-than DUR] [--larger-than SIZE] [--all]
                                 [--copies N] [--timeout S] [--json]

            Sends the bodies of the chosen notes to the homebase(s) of the account
            and, once enough copies are confirmed durable, clears them here. The
            note keeps its title, tags, size and content hash; reading it (through
            the mount, or after 'quire recall') brings the body back. Offloading
            is not an edit: no version, no change to the state digest.

              NOTE              a note title, or its key (32 hex digits)
              --older-than DUR  notes last changed longer ago than DUR: 90d, 2w, 12h, 30m
              --larger-than SIZE  notes whose body is larger than SIZE: 100K, 2M, 5000
              --all             every resident note (the filters above narrow it)
              --copies N        copies required before a body is cleared (default 1:
                                the homebase). Other devices that hold the body
                                resident count too; at least one copy is always a
                                durable one on a homebase. A device counted this
                                way keeps its copy (even if its note is deleted
                                or edited there), and offloads its own only with
                                as many other copies as it was counted among.
              --timeout S       give up on a holder silent for S seconds (default 10)
              --json            the outcome of every note as JSON, no progress bar

            Runs through the sync engine of this device: the running 'quire sync'
            or mount when there is one, else one started for this command.
            Exit status 1 when any note was not offloaded (each is named, with why);
            its body then stays resident. A homebase never offloads.
            """,
        valued: ["older-than", "larger-than", "copies", "timeout"], flags: ["all", "json"],
        run: runOffload)

    static let recall = Command(
        name: "recall",
        summary: "bring offloaded note bodies back to this device",
        usage: """
            usage: quire recall [NOTE...|--all|--below-copies] [--timeout S] [--json]

            Fetches the bodies of offloaded notes from their holders, checks each
            against the note's content hash, and keeps it resident here (no new
            version). A holder that answers with wrong bytes is reported and the
            next holder is asked.

              NOTE         a note title, or its key (32 hex digits)
              --all        every offloaded note
              --below-copies  every offloaded note that counted a copy on a device
                           since revoked and keeps fewer other holders than the
                           copies it was offloaded with ('quire status' counts them)
              --timeout S  seconds to wait for a holder per note (default: prefs, 10)
              --json       the outcome of every note as JSON, no progress bar

            Exit status 1 when any note was not recalled (each is named, with why).
            """,
        valued: ["timeout"], flags: ["all", "below-copies", "json"],
        run: runRecall)

    // MARK: offload

    @Sendable
    static func runOffload(_ args: Arguments, _ inv: Invocation) throws {
        let all = args.has("all")
        let olderThan = try args.value("older-than").map { text throws(UsageError) -> Int64 in
            guard let s = parseDuration(text) else { throw UsageError("--older-than expects a duration like 90d, 2w, 12h or 30m, not '\(text)'") }
            return s
        }
        let largerThan = try args.value("larger-than").map { text throws(UsageError) -> Int in
            guard let b = parseSize(text) else { throw UsageError("--larger-than expects a size like 100K, 2M or 5000, not '\(text)'") }
            return b
        }
        let copies = Int(args.value("copies") ?? "1") ?? 0
        guard copies >= 1, copies <= 16 else { throw UsageError("--copies expects a number from 1 to 16") }
        let timeout = try timeoutValue(args)
        if args.positional.isEmpty && !all && olderThan == nil && largerThan == nil {
            throw UsageError("name the notes to offload, or choose them with --all, --older-than or --larger-than")
        }
        if !args.positional.isEmpty && all { throw UsageError("NOTE and --all exclude each other") }
        let (identity, store) = try inv.open()
        if try RoleCommand.settledRole(home: inv.home, identity: identity, store: store) == .homebase {
            throw CommandFailure("this device is a homebase: it keeps every body resident and never offloads")
        }
        var keys = try args.positional.map { try resolveNote($0, store) }
        if keys.isEmpty {
            let now = Int64(Date().timeIntervalSince1970)
            keys = try store.summaries(.notebook).filter { s in
                !s.isOffloaded && s.size > 0
                    && (olderThan.map { s.updatedAt.seconds < now - $0 } ?? true)
                    && (largerThan.map { s.size > $0 } ?? true)
            }.map(\.key)
        } else if olderThan != nil || largerThan != nil {
            let now = Int64(Date().timeIntervalSince1970)
            let byKey = Dictionary(try store.summaries(.notebook).map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
            keys = keys.filter { k in
                guard let s = byKey[k] else { return true }
                return (olderThan.map { s.updatedAt.seconds < now - $0 } ?? true) && (largerThan.map { s.size > $0 } ?? true)
            }
        }
        try? store.compact()   // a fair "before": the WAL folded into the database
        let sizeBefore = databaseSize(inv.home)
        let outcomes = try perform(.offload(keys: keys, copies: copies, timeout: timeout),
                                   inv: inv, count: keys.count, verb: "offloading", json: args.has("json"))
        let done = outcomes.filter { $0.result == .done }
        if !done.isEmpty {
            OffloadCopiesFile(home: inv.home).record(done.map { ($0.key, copies) }, store: store)
            try? store.reclaimSpace()
        }
        let freed = done.reduce(0) { $0 + $1.bytes }
        let sizeAfter = databaseSize(inv.home)
        let failed = outcomes.filter { $0.result == .failed }
        if args.has("json") {
            Output.json(["offloaded": done.count, "skipped": outcomes.count - done.count - failed.count, "failed": failed.count,
                         "bytesFreed": freed, "databaseBytesBefore": sizeBefore, "databaseBytesAfter": sizeAfter,
                         "notes": outcomes.map(\.json)])
        } else {
            for o in outcomes where o.result == .skipped { Output.line("skipped '\(o.title)': \(o.reason ?? "")") }
            Output.line("offloaded \(done.count) of \(outcomes.count) notes, \(ByteText.text(freed)) of bodies freed"
                        + " (database \(ByteText.text(sizeBefore)) → \(ByteText.text(sizeAfter)))")
        }
        try failIfAny(failed, verb: "offloaded")
    }

    // MARK: recall

    @Sendable
    static func runRecall(_ args: Arguments, _ inv: Invocation) throws {
        let all = args.has("all"), below = args.has("below-copies")
        let choices = (args.positional.isEmpty ? 0 : 1) + (all ? 1 : 0) + (below ? 1 : 0)
        if choices == 0 { throw UsageError("name the notes to recall, or --all, or --below-copies") }
        if choices > 1 { throw UsageError("NOTE, --all and --below-copies exclude each other") }
        let (identity, store) = try inv.open()
        let timeout = try args.value("timeout") == nil ? ((try? inv.home.prefs.load().recallTimeoutSeconds) ?? 10) : timeoutValue(args)
        let keys: [RowKey]
        if all {
            keys = try store.offloadedNotes().map(\.key)
        } else if below {
            keys = try RevokedCopies(store: store, identity: identity, home: inv.home).belowRequired.map(\.note.key)
        } else {
            keys = try args.positional.map { try resolveNote($0, store) }
        }
        let outcomes = keys.isEmpty ? [] : try perform(.recall(keys: keys, timeout: timeout),
                                                       inv: inv, count: keys.count, verb: "recalling", json: args.has("json"))
        let done = outcomes.filter { $0.result == .done }
        let failed = outcomes.filter { $0.result == .failed }
        let fetched = done.reduce(0) { $0 + $1.bytes }
        if args.has("json") {
            Output.json(["recalled": done.count, "skipped": outcomes.count - done.count - failed.count, "failed": failed.count,
                         "bytesFetched": fetched, "notes": outcomes.map(\.json)])
        } else {
            for o in outcomes where o.result == .skipped { Output.line("skipped '\(o.title)': \(o.reason ?? "")") }
            for o in outcomes where o.result == .done && o.reason != nil {
                Output.error("recalled '\(o.title)' from another holder after: \(o.reason!)")
            }
            Output.line(keys.isEmpty ? (below ? "no offloaded note is below its copies for a revocation: nothing to recall" : "no offloaded notes to recall") : "recalled \(done.count) of \(outcomes.count) notes, \(ByteText.text(fetched)) fetched")
        }
        try failIfAny(failed, verb: "recalled")
    }

    // MARK: Shared

    /// Runs a request through the engine, with a progress bar on a terminal.
    static func perform(_ request: ControlRequest, inv: Invocation, count: Int, verb: String, json: Bool) throws -> [OffloadOutcome] {
        let channel = try ControlClient.open(inv)
        defer { channel.close() }
        let bar = ProgressBar(total: count, verb: verb, isEnabled: !json && isatty(STDERR_FILENO) != 0)
        var outcomes: [OffloadOutcome] = []
        var problem: String? = nil
        do {
            try channel.perform(request) { event in
                switch event {
                case .outcome(let o):
                    outcomes.append(o)
                    bar.advance(bytes: o.result == .done ? o.bytes : 0)
                case .error(let message): problem = message
                case .verified, .done: break
                }
            }
        } catch {
            throw CommandFailure("\(error)")
        }
        bar.finish()
        if let problem { throw CommandFailure(problem) }
        return outcomes
    }

    static func failIfAny(_ failed: [OffloadOutcome], verb: String) throws {
        guard !failed.isEmpty else { return }
        for o in failed { Output.error("not \(verb): '\(o.title)' (\(o.key.hex.prefix(12))): \(o.reason ?? "unknown reason")") }
        throw CommandFailure("\(failed.count) note\(failed.count == 1 ? " was" : "s were") not \(verb)")
    }

    static func timeoutValue(_ args: Arguments) throws(UsageError) -> Double {
        guard let text = args.value("timeout") else { return 10 }
        guard let v = Double(text), v > 0 else { throw UsageError("--timeout expects seconds, not '\(text)'") }
        return v
    }

    /// A title, or a key in hex.
    static func resolveNote(_ text: String, _ store: ReplicaStore) throws -> RowKey {
        if text.count == 32, let key = RowKey(hex: text), try store.row(.notebook, key) != nil { return key }
        guard let key = try RowCommands.resolve(store, .notebook, name: text, key: nil, creating: false, forceNew: false) else {
            throw CommandFailure("no note named '\(text)'")
        }
        return key
    }

    static func databaseSize(_ home: DeviceHome) -> Int {
        var total = 0
        for suffix in ["", "-wal"] {
            total += ((try? FileManager.default.attributesOfItem(atPath: home.databasePath + suffix))?[.size] as? Int) ?? 0
        }
        return total
    }

    /// 90d, 2w, 12h, 30m, 45s, or plain seconds.
    static func parseDuration(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        if let n = Int64(text), n >= 0 { return n }
        guard let unit = text.last.flatMap({ units[$0] }), let n = Int64(text.dropLast()), n >= 0 else { return nil }
        return n * unit
    }

    /// 5000, 100K, 2M, 1G (powers of 1024; KB/MB/KiB accepted too).
    static func parseSize(_ text: String) -> Int? {
        var t = text.uppercased()
        for suffix in ["IB", "B"] where t.hasSuffix(suffix) && t.count > suffix.count { t.removeLast(suffix.count); break }
        let units: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024]
        if let n = Double(t), n >= 0 { return Int(n) }
        guard let unit = t.last.flatMap({ units[$0] }), let n = Double(t.dropLast()), n >= 0 else { return nil }
        return Int(n * unit)
    }
}

/// A one-line progress bar on standard error, only on a terminal.
final class ProgressBar {
    private let total: Int
    private let verb: String
    private let isEnabled: Bool
    private var done = 0
    private var bytes = 0

    init(total: Int, verb: String, isEnabled: Bool) {
        self.total = total; self.verb = verb; self.isEnabled = isEnabled
        draw()
    }

    func advance(bytes: Int) {
        done += 1
        self.bytes += bytes
        draw()
    }

    private func draw() {
        guard isEnabled, total > 0 else { return }
        let width = 30
        let filled = width * done / total
        let line = "\r\(verb) [\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(done)/\(total) notes, \(ByteText.text(bytes))"
        try? FileHandle.standardError.write(contentsOf: Data(line.utf8))
    }

    func finish() {
        guard isEnabled, total > 0 else { return }
        try? FileHandle.standardError.write(contentsOf: Data(("\r" + String(repeating: " ", count: 78) + "\r").utf8))
    }
}

enum ByteText {
    static func text(_ bytes: Int) -> String {
        let b = Double(bytes)
        if b >= 1024 * 1024 * 1024 { return String(format: "%.1f GB", b / (1024 * 1024 * 1024)) }
        if b >= 1024 * 1024 { return String(format: "%.1f MB", b / (1024 * 1024)) }
        if b >= 1024 { return String(format: "%.1f KB", b / 1024) }
        return "\(bytes) B"
    }
}

extension ControlClient {
    /// The device's control channel, for a command.
    static func open(_ inv: Invocation) throws -> ControlClient {
        let (identity, store) = try inv.open()
        do {
            return try ControlClient(home: inv.home, store: store, identity: identity)
        } catch let e as DaemonError {
            throw CommandFailure(e.description)
        }
    }
}

extension OffloadOutcome {
    /// One note's line in `--json` output.
    var json: [String: Any] {
        var o: [String: Any] = ["key": key.hex, "title": title, "bytes": bytes, "result": result.rawValue,
                                "holders": holders.map(\.hex)]
        if let reason { o["reason"] = reason }
        return o
    }
}
