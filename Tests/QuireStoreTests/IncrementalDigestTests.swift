import XCTest
import QuireCore
@testable import QuireStore

final class IncrementalDigestTests: XCTestCase {
    /// Thousands of random edits across namespaces; after each batch the
    /// maintained roots must equal a full recomputation from content.
    func testIncrementalRootsEqualFullRecomputationUnderRandomEdits() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["QUIRE_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        let rng = SeededRandom(seed: seed)
        let clock = ManualClock()
        let store = try makeStore(temporaryDirectory(), clock: clock, seed: seed)
        var keys: [Namespace: [RowKey]] = [:]
        for batch in 0..<40 {
            for _ in 0..<75 {
                clock.advance(Int64(rng.int(0..<3)))
                let choice = rng.int(0..<10)
                let nsKeys = keys[.notebook] ?? []
                switch choice {
                case 0...3:
                    let r = try store.put(note(rng.word(), (0..<rng.int(1..<20)).map { _ in rng.word() }.joined(separator: " "), tags: [rng.word()]))
                    keys[.notebook, default: []].append(r.key)
                case 4 where !nsKeys.isEmpty:
                    let key = nsKeys[rng.int(0..<nsKeys.count)]
                    if let row = try store.row(.notebook, key), case .note(var n)? = row.content {
                        n.body = Array((rng.word() + " edited").utf8)
                        try store.put(.note(n), key: key)
                    }
                case 5 where !nsKeys.isEmpty:
                    let key = nsKeys[rng.int(0..<nsKeys.count)]
                    if try store.row(.notebook, key)?.isTombstone == false { try store.delete(.notebook, key) }
                case 6:
                    try store.put(.plan(Plan(title: rng.word(), due: rng.int(0..<2) == 0 ? nil : Timestamp(seconds: Int64(rng.int(0..<1000))),
                                             createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
                case 7:
                    try store.put(.setting(Setting(name: "k\(rng.int(0..<20))", value: rng.word(), updatedAt: Timestamp(seconds: 0))))
                case 8:
                    try store.put(.saga(SagaEntry(date: String(format: "2026-01-%02d", rng.int(1..<29)), text: Array(rng.word().utf8), updatedAt: Timestamp(seconds: 0))))
                default:
                    // A remote row: a concurrent version from another device.
                    let key = RowKey.random(using: rng)
                    let dot = Dot(actor: Actor(device: deviceB, incarnation: 1), counter: UInt64(rng.int(1..<4)))
                    try store.apply([Row.single(.contacts, key, dot: dot, context: VersionVector(),
                                                content: .contact(Contact(name: rng.word(), emails: [rng.word()], updatedAt: clock.now())))])
                }
            }
            let incremental = try store.roots()
            let full = try store.recomputedRoots()
            XCTAssertEqual(incremental, full, "roots diverged after batch \(batch) (seed \(seed))")
            if incremental != full { return }
        }
        let counts = try store.counts(.notebook)
        XCTAssertGreaterThan(counts.live, 100, "seed \(seed)")
        XCTAssertGreaterThan(counts.tombstones, 10, "seed \(seed)")
    }

    /// Any key range's fingerprint equals the sum of its leaves.
    func testRangeFingerprintsMatchLeafSums() throws {
        let rng = SeededRandom(seed: 7)
        let store = try makeStore(temporaryDirectory())
        try store.putMany((0..<3000).map { i in note("n\(i)", "body \(i)") })
        for _ in 0..<60 {
            var lo = rng.bytes(rng.int(0..<4)), hi: [UInt8]? = rng.int(0..<5) == 0 ? nil : rng.bytes(rng.int(1..<17))
            if let h = hi, h.lexicographicallyPrecedes(lo) { (lo, hi) = (h, lo) }
            let fp = try store.fingerprint(.notebook, from: lo, to: hi)
            var expected = Fingerprint.zero
            for (_, leaf) in try store.leaves(.notebook, from: lo, to: hi) { expected += Fingerprint(leaf: leaf) }
            XCTAssertEqual(fp, expected, "range \(Hex.encode(lo))..<\(hi.map { Hex.encode($0) } ?? "end")")
        }
        XCTAssertEqual(try store.fingerprint(.notebook, from: [], to: nil), try store.namespaceFingerprint(.notebook))
        XCTAssertEqual(try store.fingerprint(.notebook, from: [], to: nil).count, 3000)
    }
}
