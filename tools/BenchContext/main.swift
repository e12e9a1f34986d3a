import Foundation
import QuireCore

// bench-context: how big a row's causal context grows. A year of daily use
// on 4 devices: every day one to three devices edit a few of 200 notes (a
// hot set of 20 gets most edits), devices sync at random moments, and 3
// times in the year a device is put back from a backup (a new incarnation).
// Rows are the real QuireCore rows, edited and joined exactly as the store
// does. The comparison is the per-device vector of the previous replica
// (one entry per device that ever wrote the row), measured on the same
// history. Run through tools/bench-context.

struct Rand {
    var state: UInt64
    mutating func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 33 }
    mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

let args = CommandLine.arguments
if args.contains("-h") || args.contains("--help") {
    print("""
        usage: tools/bench-context [--seed N] [--days N]

        Simulates a year (or --days) of daily edits on 4 devices with 3
        restores and prints, per row: causal context entries (mean, p99, max)
        and encoded bytes, beside the previous one-entry-per-device vector
        measured on the same history.
        """)
    exit(0)
}
func value(_ name: String, _ fallback: Int) -> Int {
    if let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) { return v }
    return fallback
}
let days = value("--days", 365)
var r = Rand(state: UInt64(value("--seed", 7)))
let devices = (1...4).map { DeviceID(bytes: [UInt8](repeating: UInt8($0), count: 16))! }
var incarnation = devices.map { _ in UInt64(1) }
let keys = (0..<200).map { RowKey(bytes: [UInt8](repeating: 0, count: 15) + [UInt8($0)])! }
var replicas: [[RowKey: Row]] = devices.map { _ in [:] }
var writers: [RowKey: Set<DeviceID>] = [:]
let restoreDays = Set([days / 4, days / 2, 3 * days / 4])
var edits = 0, restores = 0

for day in 0..<days {
    if restoreDays.contains(day) {
        let d = r.int(devices.count)
        incarnation[d] += 1          // put back from a backup: a new incarnation
        restores += 1
    }
    for _ in 0..<(1 + r.int(3)) {
        let d = r.int(devices.count)
        let actor = Actor(device: devices[d], incarnation: incarnation[d])
        for _ in 0..<(1 + r.int(5)) {
            let key = r.int(4) == 0 ? keys[r.int(keys.count)] : keys[r.int(20)]
            let base = replicas[d][key] ?? .tombstone(.notebook, key, context: VersionVector())
            let note = Note(title: "n", body: Array("day \(day) edit \(edits)".utf8), createdAt: Timestamp(seconds: 0),
                            updatedAt: Timestamp(seconds: Int64(day * 86_400)), editedBy: devices[d])
            replicas[d][key] = base.edited(by: actor, to: .note(note))
            writers[key, default: []].insert(devices[d])
            edits += 1
        }
    }
    // Each device syncs with another one most days.
    for d in 0..<devices.count where r.int(3) != 0 {
        let e = r.int(devices.count)
        guard e != d else { continue }
        for key in Set(replicas[d].keys).union(replicas[e].keys) {
            let joined: Row
            switch (replicas[d][key], replicas[e][key]) {
            case let (x?, y?): joined = RowMerge.join(x, y)
            case let (x?, nil): joined = x
            case let (nil, y?): joined = y
            default: continue
            }
            replicas[d][key] = joined
            replicas[e][key] = joined
        }
    }
}

let rows = replicas.flatMap { $0.values }
let entries = rows.map { $0.context.counters.count }.sorted()
let bytes = rows.map { $0.context.encoded().count }.sorted()
let legacyEntries = rows.map { writers[$0.key]?.count ?? 0 }.sorted()
// The old vector: [[device, counter]...], 16-byte ids and small counters.
let legacyBytes = rows.map { row -> Int in
    let n = writers[row.key]?.count ?? 0
    return 1 + n * (1 + 17 + 3)
}.sorted()
func mean(_ xs: [Int]) -> Double { Double(xs.reduce(0, +)) / Double(max(xs.count, 1)) }
func p99(_ xs: [Int]) -> Int { xs.isEmpty ? 0 : xs[min(xs.count - 1, xs.count * 99 / 100)] }
func row(_ name: String, _ quire: String, _ old: String, _ ratio: Double) {
    print(name.padding(toLength: 34, withPad: " ", startingAt: 0) + quire.padding(toLength: 12, withPad: " ", startingAt: 0)
          + old.padding(toLength: 14, withPad: " ", startingAt: 0) + String(format: "%.2f×", ratio))
}
print("bench-context: \(days) days, 4 devices, \(restores) restores, \(edits) edits of 200 notes (seed \(value("--seed", 7)))")
print("figure".padding(toLength: 34, withPad: " ", startingAt: 0) + "quire".padding(toLength: 12, withPad: " ", startingAt: 0)
      + "per-device vv".padding(toLength: 14, withPad: " ", startingAt: 0) + "ratio")
row("context entries per row, mean", String(format: "%.2f", mean(entries)), String(format: "%.2f", mean(legacyEntries)), mean(entries) / mean(legacyEntries))
row("context entries per row, p99", "\(p99(entries))", "\(p99(legacyEntries))", Double(p99(entries)) / Double(max(1, p99(legacyEntries))))
row("context entries per row, max", "\(entries.last ?? 0)", "\(legacyEntries.last ?? 0)", Double(entries.last ?? 0) / Double(max(1, legacyEntries.last ?? 0)))
row("context bytes per row, mean", String(format: "%.1f", mean(bytes)), String(format: "%.1f", mean(legacyBytes)), mean(bytes) / mean(legacyBytes))
row("context bytes per row, max", "\(bytes.last ?? 0)", "\(legacyBytes.last ?? 0)", Double(bytes.last ?? 0) / Double(max(1, legacyBytes.last ?? 0)))
let bound = devices.count + restores
print("bound: a row's context holds at most one entry per (device, incarnation) that wrote it: 4 devices + \(restores) restores = \(bound)")
if (entries.last ?? 0) > bound { print("FAIL: a context exceeds the bound"); exit(1) }
