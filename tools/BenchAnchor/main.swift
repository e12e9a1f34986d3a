import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

// bench-anchor: what a barrier's anchor costs. A replica of 10,000 notes of
// 1-4 KB; the anchor (every live row, sealed with XChaCha20-Poly1305, written
// with fsync and rename) is timed and sized, beside writing the same number
// of plaintext bytes as one file with fsync (the floor for any anchor), in the
// same run. Target: under 1 s. Run through tools/bench-anchor (release).

let args = CommandLine.arguments
if args.contains("-h") || args.contains("--help") {
    print("usage: tools/bench-anchor [--notes N]\n\nTimes writing the cloud anchor of N notes (default 10,000) of 1-4 KB and prints its size,\nbeside a plain fsynced file of the same plaintext size.")
    exit(0)
}
let n = args.firstIndex(of: "--notes").flatMap { Int(args[$0 + 1]) } ?? 10_000
let dir = NSTemporaryDirectory() + "quire-bench-anchor-\(getpid())"
try FileManager.default.createDirectory(atPath: dir + "/cloud", withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }

struct Generator {
    var state: UInt64 = 11
    mutating func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 33 }
}
var generator = Generator()
let words = ["quire", "note", "plan", "river", "stone", "paper", "light", "north", "garden", "letter", "winter", "harbor"]
let identity = Identity.generate()
let store = try ReplicaStore(path: dir + "/replica.sqlite", deviceID: identity.deviceID, create: true)
var contents: [RowContent] = []
for i in 0..<n {
    let length = 1024 + Int(generator.next() % 3072)
    var body = ""
    while body.utf8.count < length { body += words[Int(generator.next() % UInt64(words.count))] + " " }
    contents.append(.note(Note(title: "note \(i)", body: Array(body.utf8.prefix(length)), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
}
try store.putMany(contents)

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let folder = CloudFolder(path: dir + "/cloud", accountID: identity.userIDHash)
let keys = try AnchorKeys.original(identity.backupKey, accountKey: identity.account.publicKey)
var anchorBytes = 0, plainBytes = 0
let anchorTime = try seconds {
    var rows: [Row] = []
    for ns in Namespace.allCases { rows += try store.rows(ns, from: [], to: nil) }
    let snapshot = AnchorSnapshot(generation: 1, rows: rows)
    plainBytes = snapshot.encoded().count
    let bytes = try AnchorFile.seal(snapshot, accountID: identity.userIDHash, keys: keys, at: Timestamp(seconds: 0))
    anchorBytes = bytes.count
    try folder.write(bytes)
}
let plain = [UInt8](repeating: 0x61, count: plainBytes)
let plainTime = try seconds { try AtomicFile.write(plain, to: dir + "/cloud/plain", mode: 0o600) }
let openTime = try seconds { _ = try folder.newest(keys: keys) }

func row(_ a: String, _ b: String, _ c: String, _ d: String) {
    print(a.padding(toLength: 40, withPad: " ", startingAt: 0) + b.padding(toLength: 14, withPad: " ", startingAt: 0)
          + c.padding(toLength: 16, withPad: " ", startingAt: 0) + d)
}
print("bench-anchor: \(n) notes of 1-4 KB")
row("figure", "anchor", "plain file", "ratio")
row("write (snapshot, seal, fsync, rename)", String(format: "%.3f s", anchorTime), String(format: "%.3f s", plainTime), String(format: "%.1f×", anchorTime / plainTime))
row("size", String(format: "%.2f MB", Double(anchorBytes) / 1e6), String(format: "%.2f MB", Double(plainBytes) / 1e6), String(format: "%.3f×", Double(anchorBytes) / Double(plainBytes)))
row("read and open (newest)", String(format: "%.3f s", openTime), "-", "-")
print("target: write under 1 s — \(anchorTime < 1 ? "met" : "MISSED")")
