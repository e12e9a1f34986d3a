import Foundation
import QuireCore
import QuireStore
import XCTest

/// A seeded, repeatable generator (SplitMix64). Failing tests print the seed.
struct SeededRandom: RandomSource, @unchecked Sendable {
    final class State: @unchecked Sendable { var value: UInt64; init(_ v: UInt64) { value = v } }
    let state: State
    init(seed: UInt64) { state = State(seed) }

    func next() -> UInt64 {
        state.value &+= 0x9E37_79B9_7F4A_7C15
        var z = state.value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    func int(_ range: Range<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    func word() -> String { String((0..<int(3..<9)).map { _ in Character(UnicodeScalar(UInt8(97 + int(0..<26)))) }) }
}

/// A clock a test moves by hand.
final class ManualClock: Clock, @unchecked Sendable {
    private let lock = NSLock()
    private var seconds: Int64
    init(_ start: Int64 = 1_800_000_000) { seconds = start }
    func now() -> Timestamp { lock.lock(); defer { lock.unlock() }; return Timestamp(seconds: seconds) }
    func monotonicMilliseconds() -> UInt64 { lock.lock(); defer { lock.unlock() }; return UInt64(seconds) * 1000 }
    func advance(_ s: Int64) { lock.lock(); seconds += s; lock.unlock() }
}

func temporaryDirectory(_ name: String = #function) -> String {
    let dir = NSTemporaryDirectory() + "quire-test-\(name.filter { $0.isLetter })-\(UUID().uuidString.prefix(8))"
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

let deviceA = DeviceID(bytes: [UInt8](repeating: 0xA1, count: 16))!
let deviceB = DeviceID(bytes: [UInt8](repeating: 0xB2, count: 16))!

func makeStore(_ dir: String, device: DeviceID = deviceA, clock: ManualClock = ManualClock(), seed: UInt64 = 1) throws -> ReplicaStore {
    try ReplicaStore(path: dir + "/replica.sqlite", deviceID: device, create: true, clock: clock, random: SeededRandom(seed: seed))
}

func note(_ title: String, _ body: String, tags: [String] = []) -> RowContent {
    .note(Note(title: title, tags: tags, body: Array(body.utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
}

/// What sync does once a sibling shows roots equal to this device's: the
/// writes so far are confirmed held, so a sibling that later replaces them
/// saw them (rather than a rollback of this device).
/// `by`: the sibling (a made-up one unless given).
func confirmHeld(_ s: ReplicaStore, by sibling: DeviceID = DeviceID(bytes: [UInt8](repeating: 7, count: 16))!) throws {
    for (ns, root) in try s.roots() { try s.confirmShipped(ns, root: root, by: sibling) }
}

/// Copies a replica's files (database, WAL, shared memory) over another's,
/// as a backup of a device directory and a copy put back would. Files that
/// exist already get the copy's bytes in place, as a VM snapshot put back
/// gives them: the replica cannot tell by its file that it is a copy.
func copyReplica(from: String, to: String) throws {
    let fm = FileManager.default
    for suffix in ["", "-wal", "-shm"] {
        guard fm.fileExists(atPath: from + suffix) else { try? fm.removeItem(atPath: to + suffix); continue }
        if let handle = FileHandle(forWritingAtPath: to + suffix) {
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: from + suffix)))
            try handle.close()
        } else {
            try fm.copyItem(atPath: from + suffix, toPath: to + suffix)
        }
    }
}

/// The same as new files (`cp -a` over a deleted directory): the replica
/// sees another file than its own.
func copyReplicaAsNewFiles(from: String, to: String) throws {
    let fm = FileManager.default
    for suffix in ["", "-wal", "-shm"] {
        try? fm.removeItem(atPath: to + suffix)
        if fm.fileExists(atPath: from + suffix) { try fm.copyItem(atPath: from + suffix, toPath: to + suffix) }
    }
}

/// A plan row with a title and notes.
func plan(_ title: String, _ notes: String) -> RowContent {
    .plan(Plan(title: title, notes: notes, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
}

/// Every row each holds goes to the other at once, as a reconcile would,
/// until their roots agree; then equal roots confirm what each wrote.
func exchange(_ a: ReplicaStore, _ b: ReplicaStore, file: StaticString = #filePath, line: UInt = #line) throws {
    for _ in 0..<4 where try a.roots() != b.roots() {
        for ns in Namespace.allCases {
            let fromA = try a.rows(ns, from: [], to: nil) + a.tombstones(ns)
            let fromB = try b.rows(ns, from: [], to: nil) + b.tombstones(ns)
            try b.apply(fromA)
            try a.apply(fromB)
        }
    }
    XCTAssertEqual(try a.roots(), try b.roots(), file: file, line: line)
    try confirmHeld(a)
    try confirmHeld(b)
}
