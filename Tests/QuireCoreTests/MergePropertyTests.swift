import XCTest
import QuireCore
import QuireTestSupport

/// Seeded property tests of the row join: random causal histories of
/// several devices editing, deleting and exchanging one row, in every
/// namespace. Replay a failure with QUIRE_SEED=<seed>.
final class MergePropertyTests: XCTestCase {
    struct Rand {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func int(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }
    }

    let key = RowKey(bytes: [UInt8](repeating: 0x33, count: 16))!
    let namespaces: [Namespace] = [.notebook, .saga, .plans, .contacts, .settings, .devices]

    var seed: UInt64 {
        UInt64(ProcessInfo.processInfo.environment["QUIRE_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
    }

    /// QUIRE_MERGE_SCALE multiplies the rounds (tools/ci-extras.d/merge-soak).
    func rounds(_ n: Int) -> Int { n * (Int(ProcessInfo.processInfo.environment["QUIRE_MERGE_SCALE"] ?? "") ?? 1) }

    func actors(_ n: Int) -> [Actor] {
        (1...n).map { Actor(device: DeviceID(bytes: [UInt8](repeating: UInt8($0), count: 16))!, incarnation: UInt64($0) * 1000) }
    }

    func randomContent(_ ns: Namespace, _ r: inout Rand, editor: Actor) -> RowContent {
        let t = Timestamp(seconds: Int64(r.int(4)))
        let words = ["alpha", "beta", "gamma", "delta", "café", "cafe\u{301}"]
        func text() -> String { (0..<(1 + r.int(3))).map { _ in "para \(words[r.int(words.count)]) \(r.int(5))" }.joined(separator: "\n\n") }
        switch ns {
        case .plans: return .plan(Plan(title: "p\(r.int(3))", notes: words[r.int(words.count)], isDone: r.int(2) == 0,
                                       createdAt: t, updatedAt: t, editedBy: editor.device))
        case .contacts: return .contact(Contact(name: "c\(r.int(3))", emails: ["e\(r.int(2))"], updatedAt: t, editedBy: editor.device))
        case .settings: return .setting(Setting(name: "k", value: words[r.int(words.count)], updatedAt: t, editedBy: editor.device))
        case .saga: return .saga(SagaEntry(date: "2026-01-02", text: Array(text().utf8), updatedAt: t, editedBy: editor.device))
        case .devices:
            return .device(DeviceRecord(name: "d", certificate: [UInt8(r.int(3))], revocation: r.int(4) == 0 ? [1] : nil))
        default:
            return .note(Note(title: "t\(r.int(2))", body: Array(text().utf8), createdAt: t, updatedAt: t, editedBy: editor.device))
        }
    }

    /// A write or delete, with the write dots visible to it when it was made.
    struct Op { var dot: Dot?; var saw: Set<Dot> }

    /// Devices edit, delete and exchange one row offline; every state any
    /// device held is returned, with every operation and what it saw.
    /// `copyBacks`: a device may also be put back to an earlier state of
    /// its own with the same actor, and then mint a dot it used before.
    func history(_ ns: Namespace, _ r: inout Rand, devices: Int, copyBacks: Bool = false) -> (states: [Row], ops: [Op]) {
        let team = actors(devices)
        var replicas: [Row?] = Array(repeating: nil, count: devices)
        var past: [[Row?]] = Array(repeating: [nil], count: devices)
        var states: [Row] = [], ops: [Op] = []
        for _ in 0..<(3 + r.int(10)) {
            let d = r.int(devices)
            past[d].append(replicas[d])
            if copyBacks && r.int(5) == 0 {
                replicas[d] = past[d][r.int(past[d].count)]
                continue
            }
            if r.int(3) == 0, let other = replicas[r.int(devices)] {
                replicas[d] = replicas[d].map { RowMerge.join($0, other) } ?? other
            } else if r.int(5) == 0, let mine = replicas[d], !mine.isTombstone, ns != .devices {
                ops.append(Op(dot: nil, saw: Set(mine.heads.map(\.dot))))
                replicas[d] = mine.deleted()
            } else {
                let base = replicas[d] ?? .tombstone(ns, key, context: VersionVector())
                let next = base.edited(by: team[d], to: randomContent(ns, &r, editor: team[d]))
                ops.append(Op(dot: next.heads[0].dot, saw: Set(base.heads.map(\.dot))))
                replicas[d] = next
            }
            if let s = replicas[d] { states.append(s) }
        }
        return (states, ops)
    }

    func bytes(_ row: Row) -> [UInt8] {
        row.context.encoded() + row.encodedHeads(firstBodyApart: false) + (LeafEncoding.leaf(of: row) ?? [])
    }

    func fold(_ rows: [Row]) -> Row { rows.dropFirst().reduce(rows[0]) { RowMerge.join($0, $1) } }

    func testJoinIsCommutativeAssociativeAndIdempotent() {
        let seed = self.seed
        var r = Rand(state: seed)
        for round in 0..<rounds(1500) {
            let ns = namespaces[r.int(namespaces.count)]
            let (states, _) = history(ns, &r, devices: 2 + r.int(3))
            guard states.count >= 3 else { continue }
            let a = states[r.int(states.count)], b = states[r.int(states.count)], c = states[r.int(states.count)]
            let why = "seed \(seed), round \(round), \(ns)"
            XCTAssertEqual(bytes(RowMerge.join(a, b)), bytes(RowMerge.join(b, a)), "commutative (\(why))")
            XCTAssertEqual(bytes(RowMerge.join(a, a)), bytes(a), "idempotent (\(why))")
            XCTAssertEqual(bytes(RowMerge.join(RowMerge.join(a, b), c)), bytes(RowMerge.join(a, RowMerge.join(b, c))), "associative (\(why))")
            XCTAssertEqual(RowMerge.join(a, b).content, RowMerge.join(b, a).content, "the shown content (\(why))")
        }
    }

    /// Devices put back from copies of themselves mint dots twice: the
    /// joins of such histories (collisions, contexts naming several tags
    /// under one dot) are still a semilattice.
    func testJoinIsASemilatticeWhenDevicesComeBackFromCopiesOfThemselves() {
        let seed = self.seed
        var r = Rand(state: seed)
        var collisions = 0
        for round in 0..<rounds(1500) {
            let ns = namespaces[r.int(namespaces.count)]
            let (states, _) = history(ns, &r, devices: 2 + r.int(2), copyBacks: true)
            guard states.count >= 3 else { continue }
            let a = states[r.int(states.count)], b = states[r.int(states.count)], c = states[r.int(states.count)]
            let why = "seed \(seed), round \(round), \(ns)"
            let ab = RowMerge.join(a, b)
            if !RowMerge.collisions(ab).isEmpty { collisions += 1 }
            XCTAssertEqual(bytes(ab), bytes(RowMerge.join(b, a)), "commutative (\(why))")
            XCTAssertEqual(bytes(RowMerge.join(a, a)), bytes(a), "idempotent (\(why))")
            XCTAssertEqual(bytes(RowMerge.join(ab, c)), bytes(RowMerge.join(a, RowMerge.join(b, c))), "associative (\(why))")
            // Every head of the join is one its context saw, by dot and tag.
            for h in ab.heads { XCTAssertTrue(ab.context.saw(h.dot, tag: h.tag), "a head its context does not name (\(why))") }
        }
        XCTAssertGreaterThan(collisions, 0, "the histories made collisions (seed \(seed))")
    }

    /// Any delivery order, any duplication, any grouping gives byte-identical
    /// rows; every write no later edit or delete saw is present, and a
    /// delete removes exactly what it saw.
    func testEveryDeliveryOrderKeepsExactlyTheWritesNothingReplaced() {
        let seed = self.seed
        var r = Rand(state: seed)
        for round in 0..<rounds(800) {
            let ns = namespaces[r.int(namespaces.count)]
            let (states, ops) = history(ns, &r, devices: 2 + r.int(4))
            guard !states.isEmpty else { continue }
            let why = "seed \(seed), round \(round), \(ns)"
            let reference = fold(states)
            for _ in 0..<4 {
                // A shuffled order with duplicates, folded in random groups.
                var order = states + (0..<r.int(3)).map { _ in states[r.int(states.count)] }
                for j in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(j, r.int(j + 1)) }
                var groups: [Row] = []
                var i = 0
                while i < order.count {
                    let n = 1 + r.int(3)
                    groups.append(fold(Array(order[i..<min(order.count, i + n)])))
                    i += n
                }
                XCTAssertEqual(bytes(fold(groups)), bytes(reference), "order or grouping changed the row (\(why))")
            }
            let superseded = ops.reduce(into: Set<Dot>()) { $0.formUnion($1.saw) }
            let written = Set(ops.compactMap(\.dot))
            XCTAssertEqual(Set(reference.heads.map(\.dot)), written.subtracting(superseded),
                           "the heads are exactly the writes nothing later saw (\(why))")
            if !Set(reference.heads.map(\.dot)).isSubset(of: written) { return }
        }
    }

    /// Issue case 1: A edits offline, B edits, C deletes what it saw of B.
    /// Whatever the meeting order, every device ends with A's value (the one
    /// write the delete never saw), and B's never comes back.
    func testEditThatADeleteNeverSawSurvivesWhateverTheMeetingOrder() {
        let (a, b, c) = (actors(3)[0], actors(3)[1], actors(3)[2])
        let p0 = Row.single(.settings, key, dot: Dot(actor: c, counter: 1), context: VersionVector(),
                            content: .setting(Setting(name: "color", value: "p0", updatedAt: Timestamp(seconds: 1))))
        let rowA = p0.edited(by: a, to: .setting(Setting(name: "color", value: "a", updatedAt: Timestamp(seconds: 10))))
        let rowB = p0.edited(by: b, to: .setting(Setting(name: "color", value: "b", updatedAt: Timestamp(seconds: 20))))
        let rowC = RowMerge.join(p0, rowB).deleted()
        let abThenAll = RowMerge.join(RowMerge.join(rowA, rowB), rowC)
        let acThenAll = RowMerge.join(RowMerge.join(rowA, rowC), rowB)
        XCTAssertEqual(bytes(abThenAll), bytes(acThenAll))
        guard case .setting(let s)? = abThenAll.content else { return XCTFail("the edit the delete never saw is gone") }
        XCTAssertEqual(s.value, "a")
    }

    func testACollisionKeepsBothVersionsAndSaysSo() {
        let a = actors(2)[0]
        let base = Row.tombstone(.plans, key, context: VersionVector())
        let one = base.edited(by: a, to: .plan(Plan(title: "one", createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        let two = base.edited(by: a, to: .plan(Plan(title: "two", createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        let joined = RowMerge.join(one, two)
        XCTAssertEqual(joined.heads.count, 2)
        XCTAssertEqual(RowMerge.collisions(joined), [Dot(actor: a, counter: 1)])
        XCTAssertEqual(bytes(joined), bytes(RowMerge.join(two, one)))
    }

    func testUnicodeEquivalentTextsAreDifferentVersions() {
        let a = actors(2)[0], b = actors(2)[1]
        let base = Row.tombstone(.settings, key, context: VersionVector())
        let nfc = base.edited(by: a, to: .setting(Setting(name: "k", value: "caf\u{e9}", updatedAt: Timestamp(seconds: 1))))
        let nfd = nfc.edited(by: b, to: .setting(Setting(name: "k", value: "cafe\u{301}", updatedAt: Timestamp(seconds: 1))))
        XCTAssertNotEqual(nfc.heads[0].content, nfd.heads[0].content, "equality is by bytes")
        XCTAssertEqual(RowMerge.merge(local: nfc, incoming: nfd), .store(nfd, merged: false), "a normalization-only edit is an edit")
        XCTAssertEqual(RowMerge.merge(local: nfd, incoming: nfc), .keepLocal)
    }
}
