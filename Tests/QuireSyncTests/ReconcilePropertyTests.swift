import Foundation
import QuireCore
import QuireRelay
import QuireStore
import XCTest
@testable import QuireSync

/// Seeded property test: three devices with random histories (new rows in
/// every namespace, edits of shared rows on several devices at once,
/// deletions), synced over a network that drops, duplicates and reorders
/// frames. Whatever happened, once the network behaves the replicas
/// converge to identical rows and roots, and the bytes stay bounded.
/// Set QUIRE_PROPERTY_SEEDS=n for more seeds; a failure prints its seed.
final class ReconcilePropertyTests: XCTestCase {
    func testRandomHistoriesConvergeOverALossyNetwork() throws {
        let seeds = Int(ProcessInfo.processInfo.environment["QUIRE_PROPERTY_SEEDS"] ?? "") ?? 8
        for seed in 1...UInt64(seeds) {
            try runOne(seed: seed)
        }
    }

    private func runOne(seed: UInt64) throws {
        let base = makeShortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        var config = SyncConfiguration()
        config.heartbeatMilliseconds = 3_000
        config.sessionTimeoutMilliseconds = 800
        let fleet = try SimFleet(["a", "b", "c"], base: base, seed: seed, configuration: config, maxFrameSize: 8 << 10)
        let random = SeededRandom(seed: seed &* 0x9E37)
        try fleet.attachAll()
        var shared: [RowKey] = []
        let lossy: (MemoryRelay) -> Void = { relay in
            relay.reorderPending { pending in
                for i in stride(from: pending.count - 1, to: 0, by: -1) { pending.swapAt(i, random.int(0..<(i + 1))) }
            }
            var budget = 10_000
            while !relay.pending.isEmpty && budget > 0 {
                budget -= 1
                if random.chance(0.15) { relay.drop(at: 0); continue }
                if random.chance(0.1) { relay.duplicate(at: 0) }
                relay.deliver(at: 0)
            }
        }
        for phase in 0..<6 {
            for _ in 0..<random.int(5..<25) {
                let device = fleet.devices[random.int(0..<3)]
                try randomEdit(device.store, shared: &shared, random: random)
            }
            // Everyone shares some rows, then edits them concurrently.
            if phase == 1 {
                for d in fleet.devices { for other in fleet.devices where other !== d {
                    try other.store.apply(try d.store.rows(.notebook, from: [], to: nil))
                } }
            }
            for _ in 0..<random.int(10..<60) { fleet.tick(ms: 100, network: lossy) }
        }
        let ticks = try fleet.runUntilConverged(maxTicks: 4000)
        XCTAssertGreaterThanOrEqual(ticks, 0, "seed \(seed): did not converge")
        let reference = try allRows(fleet.devices[0].store)
        XCTAssertEqual(try resurrectedKeys(fleet.devices.map(\.store)), [], "seed \(seed): a deleted row is live somewhere")
        for d in fleet.devices {
            let rows = try allRows(d.store)
            XCTAssertTrue(rows == reference, "seed \(seed): \(d.name) holds different rows: \(Set(rows).symmetricDifference(reference).sorted())")
            XCTAssertEqual(try d.store.recomputedRoots(), try d.store.roots(), "seed \(seed): \(d.name) roots drifted")
        }
        let rows = reference.count
        for (d, e) in zip(fleet.devices, fleet.engines) {
            let m = e.metricsSnapshot()
            let overhead = m.bytesOut - m.rowBytesOut
            // Frames beside the rows: bounded by rounds, not by store size
            // (frames are padded to size buckets, which the bound includes).
            XCTAssertLessThan(overhead, 12_000 * max(m.rounds, 1) + 60_000,
                              "seed \(seed): \(d.name) sent \(overhead) bytes of overhead in \(m.rounds) rounds")
            XCTAssertEqual(m.dropped[.unauthenticated] ?? 0, 0, "seed \(seed)")
            XCTAssertEqual(m.dropped[.badPayload] ?? 0, 0, "seed \(seed)")
        }
        print("seed \(seed): \(rows) rows converged in \(ticks) ticks; bytes out " +
              fleet.engines.map { "\($0.metricsSnapshot().bytesOut)" }.joined(separator: "/") + "; replays refused " +
              fleet.engines.map { "\($0.metricsSnapshot().dropped[.replay] ?? 0)" }.joined(separator: "/"))
    }

    private func randomEdit(_ store: ReplicaStore, shared: inout [RowKey], random: SeededRandom) throws {
        let zero = Timestamp(seconds: 0)
        switch random.int(0..<10) {
        case 0, 1:
            shared.append(try store.put(note(random.word(), (0..<random.int(1..<4)).map { _ in random.word() }.joined(separator: "\n\n"))).key)
        case 2:
            try store.put(.plan(Plan(title: random.word(), notes: random.word(), createdAt: zero, updatedAt: zero)))
        case 3:
            try store.put(.contact(Contact(name: random.word(), emails: [random.word() + "@example.org"], updatedAt: zero)))
        case 4:
            try store.put(.setting(Setting(name: ["theme", "font", "lang"][random.int(0..<3)], value: random.word(), updatedAt: zero)))
        case 5:
            try store.put(.memory(MemoryEvent(at: zero, kind: "event", text: random.word())))
        case 6:
            try store.put(.saga(SagaEntry(date: "2026-12-0\(random.int(1..<4))", text: Array(random.word().utf8), updatedAt: zero)))
        case 7, 8:
            // Edit a shared note where this device holds it live.
            guard !shared.isEmpty else { return }
            let key = shared[random.int(0..<shared.count)]
            guard let row = try store.row(.notebook, key), case .note(var n)? = row.content, let body = n.body else { return }
            n.body = body + Array("\n\n\(random.word())".utf8)
            n.contentHash = Note.bodyDigest(n.body!)
            try store.put(.note(n), key: key)
        default:
            guard !shared.isEmpty else { return }
            let key = shared[random.int(0..<shared.count)]
            if let row = try store.row(.notebook, key), !row.isTombstone { try store.delete(.notebook, key) }
        }
    }
}
