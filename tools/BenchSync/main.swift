import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import QuireSync

// bench-sync: two devices on the local relay, n notebook rows, d differing
// rows. For each d: bytes each way beside the differing rows' own content,
// request/response round trips, time to converge; next to the same figures
// computed for a full key+hash list and for the seed's fixed 256 buckets.
// Then three devices with 1,000 offline edits each. Run: tools/bench-sync.

struct Options {
    static let usage = """
    usage: bench-sync [--n N] [--d 0,1,100] [--edits E] [--base B] [--durability D] [--commits K]
      --n N           notebook rows on the pair (default 100000)
      --d LIST        differing rows per round (default 0,1,100,1000,10000)
      --edits E       offline edits per device in the three-device round (default 1000)
      --base B        shared rows in the three-device round (default 10000)
      --durability D  rows pulled in the durability round (default 1000; 0 skips it)
      --commits K     single-put transactions timed in the durability round (default 300)
    The durability round reopens the pair with the store's synchronous=FULL
    (every commit durable before a sibling can see it) and with the old
    NORMAL, in the same run: commits/s of one put per transaction on a store
    of N rows, and the time for D edited rows to converge (the receiver
    commits each pulled batch). NORMAL is chosen through the environment
    variable QUIRE_BENCH_SYNCHRONOUS=NORMAL, which the store reads for
    benchmarks only.

    """

    var n = 100_000
    var ds = [0, 1, 100, 1_000, 10_000]
    var threeDeviceEdits = 1_000
    var threeDeviceBase = 10_000
    var durabilityRows = 1_000
    var commits = 300

    init(_ args: [String]) {
        var i = 0
        while i < args.count {
            let value = i + 1 < args.count ? args[i + 1] : ""
            switch args[i] {
            case "--n": n = Int(value) ?? n; i += 1
            case "--d": ds = value.split(separator: ",").compactMap { Int($0) }; i += 1
            case "--edits": threeDeviceEdits = Int(value) ?? threeDeviceEdits; i += 1
            case "--base": threeDeviceBase = Int(value) ?? threeDeviceBase; i += 1
            case "--durability": durabilityRows = Int(value) ?? durabilityRows; i += 1
            case "--commits": commits = Int(value) ?? commits; i += 1
            case "--help", "-h": print(Options.usage, terminator: ""); exit(0)
            default:
                FileHandle.standardError.write(Data(Options.usage.utf8))
                exit(2)
            }
            i += 1
        }
    }
}

final class BenchDevice: @unchecked Sendable {
    let name: String
    let identity: Identity
    let store: ReplicaStore
    var engine: SyncEngine?

    init(name: String, identity: Identity, store: ReplicaStore) {
        self.name = name; self.identity = identity; self.store = store
    }

    var digest: [UInt8] { (try? store.digest(generation: 0).encoded()) ?? [] }
}

func certificateRow(_ identity: Identity, name: String) -> Row {
    let cert = identity.signedCertificate(name: name, issuedAt: SystemClock().now())
    return .single(.devices, identity.deviceID, dot: Dot(actor: Actor(device: identity.deviceID, incarnation: 1), counter: 1),
                   context: VersionVector(), content: .device(DeviceRecord(name: name, certificate: cert)))
}

/// `count` devices holding the same `rows` notebook rows (one built, the rest copied).
func makeDevices(_ names: [String], rows: Int, in base: String) throws -> [BenchDevice] {
    let account = SigningKeyPair()
    let backup = SecretBytes(randomCount: 32)
    let identities = names.map { _ in Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: backup) }
    let firstPath = base + "/\(names[0]).sqlite"
    let first = try ReplicaStore(path: firstPath, deviceID: identities[0].deviceID, create: true)
    try first.apply(zip(identities, names).map { certificateRow($0, name: $1) })
    var made = 0
    while made < rows {
        let batch = min(20_000, rows - made)
        try first.putMany((made..<made + batch).map { i in
            .note(Note(title: "note \(i)", tags: ["bench"], body: Array("Body of note \(i): a paragraph of ordinary length, like a short memo.".utf8),
                       createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
        })
        made += batch
    }
    try first.clearOutbox(through: Int64.max)
    var devices = [BenchDevice(name: names[0], identity: identities[0], store: first)]
    for (identity, name) in zip(identities, names).dropFirst() {
        let path = base + "/\(name).sqlite"
        try first.backup(to: path)
        devices.append(BenchDevice(name: name, identity: identity, store: try ReplicaStore(path: path, deviceID: identity.deviceID)))
    }
    return devices
}

func makeEngine(_ d: BenchDevice, relay: LocalRelay, debounceMs: UInt64, stateDirectory: String) -> SyncEngine {
    var config = SyncConfiguration()
    config.debounceMilliseconds = debounceMs
    config.maxDebounceMilliseconds = debounceMs * 2
    config.heartbeatMilliseconds = 600_000
    config.pollMilliseconds = 20
    var deps = SyncEngine.Dependencies(store: d.store, identity: d.identity, relay: relay, clock: SystemClock(), random: SystemRandom(),
                                       statePath: stateDirectory + "/\(d.name)-sync-state.json")
    if ProcessInfo.processInfo.environment["BENCH_TRACE"] != nil {
        let name = d.name
        let t0 = Date()
        deps.trace = { line in say(String(format: "%8.3f %@ ", Date().timeIntervalSince(t0), name) + line) }
    }
    let engine = SyncEngine(deps, configuration: config)
    d.engine = engine
    return engine
}

func startEngines(_ devices: [BenchDevice], relayDirectory: String, debounceMs: UInt64, stateDirectory: String) throws -> [LocalRelay] {
    var relays: [LocalRelay] = []
    for d in devices {
        let relay = try LocalRelay(directory: relayDirectory)
        _ = makeEngine(d, relay: relay, debounceMs: debounceMs, stateDirectory: stateDirectory)
        relays.append(relay)
    }
    for d in devices { try d.engine!.start() }
    return relays
}

/// Waits until every store holds the same digest and every engine knows it.
func waitConverged(_ devices: [BenchDevice], timeout: TimeInterval) -> TimeInterval? {
    let start = Date()
    while Date().timeIntervalSince(start) < timeout {
        if Set(devices.map(\.digest)).count == 1 && devices.allSatisfy({ $0.engine!.isConverged() }) {
            return Date().timeIntervalSince(start)
        }
        usleep(1_000)
    }
    return nil
}

func kb(_ bytes: Double) -> String {
    bytes < 1024 ? String(format: "%.0f B", bytes) : bytes < 1_048_576.0 ? String(format: "%.1f KB", bytes / 1024) : String(format: "%.2f MB", bytes / 1_048_576)
}

/// Unbuffered, so a long run shows progress and a crash loses nothing.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }

let options = Options(Array(CommandLine.arguments.dropFirst()))
let base = NSTemporaryDirectory() + "bench-sync-\(getpid())"
try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: base) }

say("bench-sync: two devices on the local relay, n = \(options.n) notebook rows (building...)")
let buildStart = Date()
let pair = try makeDevices(["a", "b"], rows: options.n, in: base)
say(String(format: "  built and copied in %.1f s", Date().timeIntervalSince(buildStart)))
var relays = try startEngines(pair, relayDirectory: base + "/relay", debounceMs: 60_000, stateDirectory: base)
guard waitConverged(pair, timeout: 60) != nil else { say("the pair did not converge at start"); exit(1) }
let (a, b) = (pair[0], pair[1])

say("")
say("Bytes each way exclude the differing rows' own encoded content; round trips are request/response exchanges")
say("after the digest exchange (one digest each way). 'list' = full key+hash list (n × 48 B); 'seed' = fixed 256 buckets.")
say("")
say("      d |   a → b   |   b → a   | RTT |  converge | list each way | list RTT | seed each way | seed RTT")
say("--------+-----------+-----------+-----+-----------+---------------+----------+---------------+---------")
var keys = try b.store.rows(.notebook, from: [], to: nil).map(\.key)
keys.sort { _, _ in Bool.random() }
var cursor = 0
for d in options.ds {
    var ma0 = a.engine!.metricsSnapshot(), mb0 = b.engine!.metricsSnapshot()
    var avgRow = 0.0
    if d == 0 {
        // Two devices in sync: b restarts (or reconnects) and the pair checks in.
        b.engine!.stop()
        relays[1].close()
        relays[1] = try LocalRelay(directory: base + "/relay")
        _ = makeEngine(b, relay: relays[1], debounceMs: 60_000, stateDirectory: base)
        mb0 = SyncMetrics()
        ma0 = a.engine!.metricsSnapshot()
        let start = Date()
        try b.engine!.start()
        guard waitConverged(pair, timeout: 60) != nil else { say("d = 0: did not converge"); exit(1) }
        let ma = a.engine!.metricsSnapshot(), mb = b.engine!.metricsSnapshot()
        if ProcessInfo.processInfo.environment["BENCH_DEBUG"] != nil { say("\(ma)\n\(mb)") }
        say("\(pad("0", 7)) | \(pad(kb(Double(ma.bytesOut - ma0.bytesOut)), 9)) | \(pad(kb(Double(mb.bytesOut)), 9)) | \(pad(String(max(ma.requestsSent - ma0.requestsSent, mb.requestsSent)), 3)) | \(pad(String(format: "%.0f ms", Date().timeIntervalSince(start) * 1000), 9)) | \(pad(kb(430), 13)) | \(pad("0", 8)) | \(pad(kb(430), 13)) | \(pad("0", 8))")
        continue
    }
    if d > 0 {
        // d rows edited on b: same keys, new bodies (one local edit each).
        for key in keys[cursor..<min(cursor + d, keys.count)] {
            guard case .note(var n)? = try b.store.row(.notebook, key)?.content else { continue }
            n.body = Array("Edited for d = \(d): \(key.hex)".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            try b.store.put(.note(n), key: key)
        }
        cursor += d
    }
    let start = Date()
    b.engine!.advertiseNow()
    guard let elapsed = waitConverged(pair, timeout: 300) else { say("d = \(d): did not converge"); exit(1) }
    _ = start
    let ma = a.engine!.metricsSnapshot(), mb = b.engine!.metricsSnapshot()
    let aToB = Double((ma.bytesOut - ma0.bytesOut) - (ma.rowBytesOut - ma0.rowBytesOut))
    let bToA = Double((mb.bytesOut - mb0.bytesOut) - (mb.rowBytesOut - mb0.rowBytesOut))
    let rtt = max(ma.requestsSent - ma0.requestsSent, mb.requestsSent - mb0.requestsSent)
    let rowBytes = Double(mb.rowBytesOut - mb0.rowBytesOut + ma.rowBytesOut - ma0.rowBytesOut)
    avgRow = d > 0 ? rowBytes / Double(d) : 0
    // The alternatives, computed: a full key+hash list, and the seed's 256 buckets
    // (each mismatching bucket ships all of its rows; the extra ones are over-shipping).
    let n = Double(options.n)
    let list = d == 0 ? 0 : n * 48
    let mismatched = 256 * (1 - pow(1 - 1.0 / 256, Double(d)))
    let seedRequest = d == 0 ? 0 : 256 * 68.0
    let overShip = max(0, mismatched * (n / 256) - Double(d)) * avgRow
    say("\(pad(String(d), 7)) | \(pad(kb(aToB), 9)) | \(pad(kb(bToA), 9)) | \(pad(String(rtt), 3)) | \(pad(String(format: "%.0f ms", elapsed * 1000), 9)) | \(pad(kb(list + 430), 13)) | \(pad(d == 0 ? "0" : "1", 8)) | \(pad(kb(seedRequest + overShip + 430), 13)) | \(pad(d == 0 ? "0" : "1", 8))")
}
for d in pair { d.engine!.stop() }
for r in relays { r.close() }

/// The pair reopened with `synchronous` = mode: single-put commits/s on b,
/// then `rows` rows edited on b and pulled by a.
@MainActor func durabilityRound(mode: String, rows: Int, round: Int) throws -> (commitsPerSecond: Double, converge: TimeInterval?) {
    setenv("QUIRE_BENCH_SYNCHRONOUS", mode, 1)
    defer { unsetenv("QUIRE_BENCH_SYNCHRONOUS") }
    let reopened = try pair.map { BenchDevice(name: $0.name, identity: $0.identity,
                                              store: try ReplicaStore(path: base + "/\($0.name).sqlite", deviceID: $0.identity.deviceID)) }
    let (ra, rb) = (reopened[0], reopened[1])
    var edited = 0
    func editNext(_ label: String) throws {
        let key = keys[cursor % keys.count]
        cursor += 1
        guard case .note(var n)? = try rb.store.row(.notebook, key)?.content else { return }
        n.body = Array("\(label) \(edited) under \(mode): \(key.hex)".utf8)
        n.contentHash = Note.bodyDigest(n.body!)
        try rb.store.put(.note(n), key: key)
        edited += 1
    }
    let start = Date()
    for _ in 0..<options.commits { try editNext("commit") }
    let commitsPerSecond = Double(options.commits) / Date().timeIntervalSince(start)
    let roundRelays = try startEngines(reopened, relayDirectory: base + "/relay-durability-\(round)", debounceMs: 60_000, stateDirectory: base)
    defer {
        for d in reopened { d.engine!.stop() }
        for r in roundRelays { r.close() }
    }
    guard waitConverged(reopened, timeout: 300) != nil else { return (commitsPerSecond, nil) }   // the commits above, untimed
    for _ in 0..<rows { try editNext("pulled") }
    rb.engine!.advertiseNow()
    _ = ra
    return (commitsPerSecond, rows > 0 ? waitConverged(reopened, timeout: 300) : 0)
}

if options.durabilityRows > 0 || options.commits > 0 {
    say("")
    say("Durability: the pair reopened with synchronous=FULL (quire) and the old NORMAL, same run, same disk;")
    say("\(options.commits) single-put commits on b, then \(options.durabilityRows) rows edited on b converge (a commits each pulled batch).")
    say("")
    say(" synchronous |  commits/s | ms/commit | converge")
    say("-------------+------------+-----------+----------")
    var figures: [String: [(Double, TimeInterval?)]] = [:]
    for round in 0..<2 {
        for mode in round % 2 == 0 ? ["FULL", "NORMAL"] : ["NORMAL", "FULL"] {
            figures[mode, default: []].append(try durabilityRound(mode: mode, rows: options.durabilityRows, round: round * 2 + (mode == "FULL" ? 0 : 1)))
        }
    }
    for mode in ["FULL", "NORMAL"] {
        for (rate, converge) in figures[mode]! {
            say("\(pad(mode, 12)) | \(pad(String(format: "%.0f", rate), 10)) | \(pad(String(format: "%.2f", 1000 / rate), 9)) | \(pad(converge.map { String(format: "%.0f ms", $0 * 1000) } ?? "timeout", 8))")
        }
    }
}

say("")
say("Three devices, \(options.threeDeviceBase) shared rows, \(options.threeDeviceEdits) offline edits each (new notes and edits of shared ones):")
try FileManager.default.createDirectory(atPath: base + "/trio", withIntermediateDirectories: true)
let trio = try makeDevices(["x", "y", "z"], rows: options.threeDeviceBase, in: base + "/trio")
let sharedKeys = try trio[0].store.rows(.notebook, from: [], to: nil).map(\.key)
for (i, d) in trio.enumerated() {
    var contents: [RowContent] = []
    for j in 0..<(options.threeDeviceEdits * 3 / 4) {
        contents.append(.note(Note(title: "\(d.name) new \(j)", body: Array("offline on \(d.name) \(j)".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
    }
    try d.store.putMany(contents)
    for j in 0..<(options.threeDeviceEdits - contents.count) {
        let key = sharedKeys[(j * 7 + i * 13) % sharedKeys.count]
        guard case .note(var n)? = try d.store.row(.notebook, key)?.content else { continue }
        n.body = (n.body ?? []) + Array("\n\nAdded on \(d.name).".utf8)
        n.contentHash = Note.bodyDigest(n.body!)
        try d.store.put(.note(n), key: key)
    }
}
let trioRelays = try startEngines(trio, relayDirectory: base + "/relay3", debounceMs: 400, stateDirectory: base + "/trio")
if let t = waitConverged(trio, timeout: Double(ProcessInfo.processInfo.environment["BENCH_TIMEOUT"] ?? "120") ?? 120) {
    let live = try trio[0].store.counts(.notebook).live
    say(String(format: "  converged in %.0f ms (%d notebook rows on each; %@ sent in all)", t * 1000, live,
                 kb(Double(trio.reduce(0) { $0 + $1.engine!.metricsSnapshot().bytesOut }))))
    if ProcessInfo.processInfo.environment["BENCH_DEBUG"] != nil {
        for d in trio {
            say("  \(d.name): \(d.engine!.metricsSnapshot())")
            for sib in d.engine!.status().siblings { say("    \(sib.name): rounds \(sib.rounds) storms \(sib.storms)") }
            for e in d.engine!.status().events { say("    event: \(e)") }
        }
    }
} else {
    say("  did not converge in time")
    for d in trio {
        let st = d.engine!.status()
        say("  \(d.name): \(d.engine!.metricsSnapshot())")
        for sib in st.siblings { say("    \(sib.name): inSync \(sib.inSync) divergent \(sib.divergent) rounds \(sib.rounds) storms \(sib.storms)") }
        for e in st.events { say("    event: \(e)") }
    }
}
for d in trio { d.engine!.stop() }
for r in trioRelays { r.close() }
