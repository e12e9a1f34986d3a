import Foundation
import QuireCore
import XCTest
@testable import QuireSync

/// The reconciler alone, in memory: two namespaces of random rows with d
/// differences of every kind, a pull each way with every message through
/// its wire encoding, and nothing else (no store, no relay, no engine).
final class ReconcilerTests: XCTestCase {
    /// One side's rows, joined by a deterministic rule (higher counter wins;
    /// a tombstone wins a tie), so two sides that saw the same rows agree.
    final class MemorySource: RangeSource {
        let namespace: Namespace = .notebook
        var rows: [RowKey: Row] = [:]

        private func live(in range: KeyPrefix) -> [Row] {
            rows.values.filter { !$0.isTombstone && range.contains($0.key) }.sorted { $0.key < $1.key }
        }
        func count() throws -> UInt64 { UInt64(rows.values.filter { !$0.isTombstone }.count) }
        func childFingerprints(_ range: KeyPrefix) throws -> [Fingerprint] {
            var out = [Fingerprint](repeating: .zero, count: 16)
            for row in live(in: range) { out[range.childIndex(of: row.key)] += Fingerprint(leaf: LeafEncoding.leaf(of: row)!) }
            return out
        }
        func entries(_ range: KeyPrefix) throws -> [KeyLeaf] { live(in: range).map { KeyLeaf(key: $0.key, leaf: LeafEncoding.leaf(of: $0)!) } }
        func tombstones(_ range: KeyPrefix) throws -> [Row] {
            rows.values.filter { $0.isTombstone && range.contains($0.key) }.sorted { $0.key < $1.key }
        }
        func row(_ key: RowKey) throws -> Row? { rows[key] }
        func allRows() throws -> [Row] { Array(rows.values) }

        static func version(_ row: Row) -> (UInt64, Int) {
            (row.heads.first?.dot.counter ?? row.context[Actor(device: DeviceID(bytes: [UInt8](repeating: 0xAA, count: 16))!, incarnation: 1)], row.isTombstone ? 1 : 0)
        }
        func apply(_ incoming: [Row]) {
            for row in incoming where rows[row.key].map({ Self.version(row) > Self.version($0) }) ?? true { rows[row.key] = row }
        }
    }

    let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 0xAA, count: 16))!, incarnation: 1)

    func makeRow(_ key: RowKey, counter: UInt64, text: String) -> Row {
        let content = RowContent.note(Note(title: text, body: Array(text.utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
        return Row.single(.notebook, key, dot: Dot(actor: actor, counter: counter), context: VersionVector(), content: content)
    }

    func tombstone(_ key: RowKey, counter: UInt64) -> Row {
        Row.tombstone(.notebook, key, context: VersionVector().adding(Dot(actor: actor, counter: counter), tag: 0))
    }

    /// Pulls `into` from `from` until nothing is left to ask; returns the
    /// number of request/response round trips.
    func pull(into requester: MemorySource, from responder: MemorySource, threshold: Int) throws -> Int {
        let reconciler = Reconciler(threshold: threshold)
        let salt: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        var items = try reconciler.initialItems(requester, salt: salt)
        var trips = 0
        while !items.isEmpty {
            trips += 1
            XCTAssertLessThan(trips, 50, "the pull does not end")
            if trips >= 50 { break }
            let request = try ReconcileRequest.decode(ReconcileRequest(namespace: .notebook, session: salt, step: UInt64(trips),
                                                                       generation: 0, items: items).encoded())
            var budget = RowBudget(limit: 1 << 30)
            let answer = try reconciler.answer(request, responder, rows: &budget)
            let response = try ReconcileResponse.decode(ReconcileResponse(namespace: .notebook, session: salt, step: request.step,
                                                                          rows: budget.rows, items: answer, isTruncated: false).encoded())
            requester.apply(response.rows)
            items = try reconciler.followUps(response, requester, salt: salt)
        }
        return trips
    }

    func testRandomDifferencesOfEveryKindReconcileInFewRoundTrips() throws {
        for seed in UInt64(1)...30 {
            let random = SeededRandom(seed: seed)
            let a = MemorySource(), b = MemorySource()
            let shared = random.int(0..<3000)
            for i in 0..<shared {
                let row = makeRow(RowKey(bytes: random.bytes(16))!, counter: 1, text: "shared \(i)")
                a.rows[row.key] = row
                b.rows[row.key] = row
            }
            let keys = Array(a.rows.keys)
            let differences = random.int(0..<60)
            for i in 0..<differences {
                let side = random.chance(0.5) ? a : b
                switch random.int(0..<3) {
                case 0:   // a row only one side has
                    let row = makeRow(RowKey(bytes: random.bytes(16))!, counter: 1, text: "new \(i)")
                    side.rows[row.key] = row
                case 1:   // an edit on one side
                    guard !keys.isEmpty else { continue }
                    let key = keys[random.int(0..<keys.count)]
                    side.rows[key] = makeRow(key, counter: 2 + UInt64(i), text: "edit \(i)")
                default:  // a delete on one side
                    guard !keys.isEmpty else { continue }
                    let key = keys[random.int(0..<keys.count)]
                    side.rows[key] = tombstone(key, counter: 2 + UInt64(i))
                }
            }
            let threshold = [4, 16, 64][random.int(0..<3)]
            let tripsAB = try pull(into: a, from: b, threshold: threshold)
            let tripsBA = try pull(into: b, from: a, threshold: threshold)
            let liveA = try a.entries(.root), liveB = try b.entries(.root)
            XCTAssertEqual(liveA, liveB, "seed \(seed): live rows differ after a pull each way")
            XCTAssertEqual(try a.childFingerprints(.root), try b.childFingerprints(.root), "seed \(seed)")
            // Descending 16 ways a level: a handful of round trips, not one per difference.
            let depth = Int((log(Double(max(shared, 16))) / log(16)).rounded(.up)) + 3
            XCTAssertLessThanOrEqual(max(tripsAB, tripsBA), depth, "seed \(seed): \(tripsAB), \(tripsBA) round trips for \(differences) differences in \(shared) rows")
        }
    }

    func testEqualSidesNeedNoFollowUp() throws {
        let a = MemorySource(), b = MemorySource()
        for i in 0..<500 {
            let row = makeRow(RowKey(bytes: SeededRandom(seed: UInt64(i) + 99).bytes(16))!, counter: 1, text: "n\(i)")
            a.rows[row.key] = row
            b.rows[row.key] = row
        }
        XCTAssertEqual(try pull(into: a, from: b, threshold: 16), 1, "one request; nothing differs, nothing follows")
    }
}
