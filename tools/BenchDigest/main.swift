import Foundation
import QuireCore
import QuireStore

// bench-digest: bulk insert, full root rebuild and incremental digest at
// n = 1,000 / 10,000 / 100,000 notebook rows, beside a plain SQLite baseline
// (Python's sqlite3 module, one transaction, WAL) inserting the same rows.
// Run through tools/bench-digest (release build).

struct Rows {
    /// Deterministic note rows: the same titles, tags and bodies are written
    /// by the baseline script (bodies are 200-800 bytes of words).
    static func make(_ n: Int) -> [(title: String, tags: [String], body: [UInt8])] {
        var state: UInt64 = 42
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        let words = ["quire", "note", "plan", "river", "stone", "paper", "light", "north", "garden", "letter", "winter", "harbor"]
        return (0..<n).map { i in
            let length = 200 + Int(next() % 600)
            var body = ""
            while body.utf8.count < length { body += words[Int(next() % UInt64(words.count))] + " " }
            return (title: "note \(i)", tags: ["t\(i % 7)"], body: Array(body.utf8.prefix(length)))
        }
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func peakRSSMegabytes() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0
}

func baseline(_ n: Int, dir: String) -> (insert: Double, size: Int64) {
    // The same rows, in a natural schema: one table, key primary key, WAL.
    let script = """
    import sqlite3, time, sys, os
    n = int(sys.argv[1]); path = sys.argv[2]
    words = ["quire","note","plan","river","stone","paper","light","north","garden","letter","winter","harbor"]
    state = 42
    M = (1 << 64) - 1
    def nxt():
        global state
        state = (state * 6364136223846793005 + 1442695040888963407) & M
        return state >> 33
    rows = []
    for i in range(n):
        length = 200 + nxt() % 600
        body = ""
        while len(body.encode()) < length:
            body += words[nxt() % len(words)] + " "
        rows.append((os.urandom(16), "note %d" % i, "t%d" % (i % 7), body.encode()[:length], 1800000000, 1800000000))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, title TEXT, tags TEXT, body BLOB, created INTEGER, updated INTEGER)")
    t = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO notes(key, title, tags, body, created, updated) VALUES (?,?,?,?,?,?)", rows)
    db.execute("COMMIT")
    print(time.perf_counter() - t)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    """
    let path = dir + "/baseline-\(n).sqlite"
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", script, String(n), path]
    let out = Pipe()
    p.standardOutput = out
    do { try p.run() } catch { return (.nan, 0) }
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    return (Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan, fileSize(path))
}

let usage = """
usage: bench-digest [--commits K] [N ...]
  N ...        notebook sizes to build (default 1000 10000 100000)
  --commits K  single-put transactions timed for the durability figure
               (default 500; 0 skips it)
Prints, for each N, bulk insert, full root rebuild, one write and the
incremental digest beside a plain SQLite baseline, then commits/s of one
put per transaction with the store's synchronous=FULL (durable at commit)
beside the old synchronous=NORMAL, in the same run on the same disk
(NORMAL is chosen through QUIRE_BENCH_SYNCHRONOUS=NORMAL, an environment
variable the store reads for benchmarks only).
"""
var sizes: [Int] = []
var commitCount = 500
var argumentList = Array(CommandLine.arguments.dropFirst())
while !argumentList.isEmpty {
    let argument = argumentList.removeFirst()
    if argument == "--help" || argument == "-h" { print(usage, terminator: ""); exit(0) }
    if argument == "--commits", let k = argumentList.first.flatMap({ Int($0) }) { commitCount = k; argumentList.removeFirst(); continue }
    guard let n = Int(argument) else { FileHandle.standardError.write(Data(usage.utf8)); exit(2) }
    sizes.append(n)
}
let ns = sizes.isEmpty ? [1_000, 10_000, 100_000] : sizes
let root = NSTemporaryDirectory() + "quire-bench-digest-\(getpid())"
try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: root) }

struct Result {
    var n = 0, insert = 0.0, rebuild = 0.0, oneWrite = 0.0, incremental = 0.0, dbSize: Int64 = 0, rss = 0.0
    var baseInsert = 0.0, baseSize: Int64 = 0
}
var results: [Result] = []
let device = DeviceID(bytes: [UInt8](repeating: 0xD1, count: 16))!
for n in ns {
    var r = Result(n: n)
    let dir = root + "/n\(n)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let rows = Rows.make(n)
    let store = try ReplicaStore(path: dir + "/replica.sqlite", deviceID: device, create: true)
    let contents = rows.map { RowContent.note(Note(title: $0.title, tags: $0.tags, body: $0.body, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))) }
    r.insert = try seconds { try store.putMany(contents) }
    var full: [Namespace: [UInt8]] = [:]
    r.rebuild = try seconds { full = try store.recomputedRoots() }
    r.oneWrite = try seconds { try store.put(.note(Note(title: "one more", body: Array("a single edit".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))) }
    // The incremental digest: median of 50 reads of the maintained roots.
    var times: [Double] = []
    var digest: StateDigest? = nil
    for _ in 0..<50 { times.append(try seconds { digest = try store.digest(generation: 0) }) }
    r.incremental = times.sorted()[times.count / 2]
    precondition(digest!.roots[.plans] == full[.plans], "roots disagree")
    let recomputed = try store.recomputedRoots()
    precondition(recomputed == digest!.roots, "incremental root differs from a full recomputation")
    try store.compact()
    r.dbSize = fileSize(dir + "/replica.sqlite") + fileSize(dir + "/replica.sqlite-wal")
    r.rss = peakRSSMegabytes()
    (r.baseInsert, r.baseSize) = baseline(n, dir: dir)
    results.append(r)
}

func f(_ v: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", v) }
func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : String(repeating: " ", count: w - s.count) + s }
let header = ["n", "insert s", "baseline s", "ins/base", "rebuild ms", "1 write ms", "digest µs", "rebuild/digest", "db MB", "base MB", "peak RSS MB"]
let widths = [8, 9, 11, 9, 11, 11, 10, 15, 7, 8, 12]
print(zip(header, widths).map { pad($0, $1) }.joined(separator: " "))
for r in results {
    let cells = [String(r.n), f(r.insert), f(r.baseInsert), f(r.insert / r.baseInsert, 2) + "x", f(r.rebuild * 1000, 1), f(r.oneWrite * 1000, 2),
                 f(r.incremental * 1e6, 1), f(r.rebuild / r.incremental, 0) + "x", f(Double(r.dbSize) / 1e6, 1), f(Double(r.baseSize) / 1e6, 1), f(r.rss, 0)]
    print(zip(cells, widths).map { pad($0, $1) }.joined(separator: " "))
}
if let big = results.last {
    let ok1 = big.rebuild / big.incremental >= 100, ok2 = big.insert <= 2 * big.baseInsert, ok3 = big.insert < 5
    print("targets at n=\(big.n): incremental ≥100× faster than rebuild: \(ok1 ? "met" : "MISSED"); insert within 2× of baseline: \(ok2 ? "met" : "MISSED"); insert under 5 s: \(ok3 ? "met" : "MISSED")")
}

/// Commits/s of one put per transaction (what the mount and `quire put` do
/// for each edit), on a store opened with `synchronous` = mode.
func commitRate(mode: String, commits: Int, path: String, rows: [(title: String, tags: [String], body: [UInt8])]) throws -> Double {
    setenv("QUIRE_BENCH_SYNCHRONOUS", mode, 1)
    defer { unsetenv("QUIRE_BENCH_SYNCHRONOUS") }
    let store = try ReplicaStore(path: path, deviceID: device, create: true)
    let time = try seconds {
        for row in rows.prefix(commits) {
            try store.put(.note(Note(title: row.title, tags: row.tags, body: row.body, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        }
    }
    return Double(min(commits, rows.count)) / time
}

if commitCount > 0 {
    // Alternating rounds, each on a fresh store, so both modes meet the same disk weather.
    let rows = Rows.make(commitCount)
    var rates: [String: [Double]] = ["FULL": [], "NORMAL": []]
    for round in 0..<3 {
        for mode in round % 2 == 0 ? ["FULL", "NORMAL"] : ["NORMAL", "FULL"] {
            rates[mode]!.append(try commitRate(mode: mode, commits: commitCount, path: root + "/commits-\(mode)-\(round).sqlite", rows: rows))
        }
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    let full = median(rates["FULL"]!), normal = median(rates["NORMAL"]!)
    print("")
    print("durability: \(commitCount) puts, one transaction each, median of 3 rounds (files in \(NSTemporaryDirectory()))")
    print(pad("synchronous", 22) + pad("commits/s", 11) + pad("ms/commit", 11))
    print(pad("FULL (quire, durable)", 22) + pad(f(full, 0), 11) + pad(f(1000 / full, 2), 11))
    print(pad("NORMAL (old)", 22) + pad(f(normal, 0), 11) + pad(f(1000 / normal, 2), 11))
    print("FULL costs \(f(normal / full, 1))x the time of NORMAL per commit (+\(f(1000 / full - 1000 / normal, 2)) ms each)")
}
