import XCTest
import QuireCore
import QuireTestSupport

/// The causal context's entries: a counter and the tags of the writes seen
/// under it. Two writes under one dot (a device put back from a copy of
/// itself before it knew) are both remembered, so a context vouches for
/// exactly the writes it saw.
final class VersionVectorTests: XCTestCase {
    let ada = Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 7)
    let ben = Actor(device: DeviceID(bytes: [UInt8](repeating: 2, count: 16))!, incarnation: 9)

    func vector(_ entries: [(Actor, UInt64, [UInt64])]) -> VersionVector {
        entries.reduce(VersionVector()) { v, e in
            let (actor, counter, tags) = e
            // Unknown tags: a tag of 0 is "not known".
            guard !tags.isEmpty else { return v.joined(with: VersionVector([actor: counter])) }
            return tags.reduce(v) { $0.adding(Dot(actor: actor, counter: counter), tag: $1) }
        }
    }

    func roundTrip(_ v: VersionVector, file: StaticString = #filePath, line: UInt = #line) throws -> VersionVector {
        let bytes = v.encoded()
        let back = try VersionVector(cbor: try CBORReader.decode(bytes))
        XCTAssertEqual(back.encoded(), bytes, "one context, one encoding", file: file, line: line)
        var w = CBORWriter()
        w.write(v.cbor)
        XCTAssertEqual(w.bytes, bytes, "the CBOR value and the writer agree", file: file, line: line)
        return back
    }

    func testTwoWritesUnderOneDotAreBothRemembered() throws {
        let dot = Dot(actor: ada, counter: 1)
        let joined = vector([(ada, 1, [11])]).joined(with: vector([(ada, 1, [5])]))
        XCTAssertEqual(joined.tags(ada), [5, 11])
        XCTAssertTrue(joined.saw(dot, tag: 11))
        XCTAssertTrue(joined.saw(dot, tag: 5))
        XCTAssertFalse(joined.saw(dot, tag: 99), "a third write under the same dot was never seen")
        XCTAssertTrue(joined.saw(Dot(actor: ada, counter: 0 + 1), tag: 5))
        XCTAssertFalse(joined.saw(Dot(actor: ada, counter: 2), tag: 5), "a later dot is not seen")
        XCTAssertFalse(joined.saw(Dot(actor: ben, counter: 1), tag: 5))
        XCTAssertEqual(try roundTrip(joined), joined)
        // A later counter supersedes the set; an earlier one leaves it.
        XCTAssertEqual(joined.joined(with: vector([(ada, 2, [3])])).tags(ada), [3])
        XCTAssertTrue(joined.joined(with: vector([(ada, 2, [3])])).saw(dot, tag: 99), "a later write of the actor covers every earlier dot")
        XCTAssertEqual(vector([(ada, 0 + 1, [3])]).joined(with: joined), joined.adding(dot, tag: 3))
    }

    func testAContextIncludesAnotherWhenItSawEveryWriteTheOtherSaw() {
        let both = vector([(ada, 1, [5, 11]), (ben, 2, [7])])
        XCTAssertTrue(both.includes(vector([(ada, 1, [5])])))
        XCTAssertTrue(both.includes(vector([(ada, 1, [5, 11]), (ben, 1, [3])])))
        XCTAssertFalse(both.includes(vector([(ada, 1, [6])])), "another write under the same dot")
        XCTAssertFalse(both.includes(vector([(ada, 1, [])])), "writes not known: maybe others")
        XCTAssertFalse(both.includes(vector([(ben, 3, [7])])))
        XCTAssertTrue(vector([(ada, 1, [])]).includes(vector([(ada, 1, [6])])), "tags not known here: any write")
        XCTAssertTrue(both.includes(VersionVector()))
    }

    func testUnknownTagsAbsorbAndSeeEverything() throws {
        let dot = Dot(actor: ada, counter: 2)
        let unknown = vector([(ada, 2, [])])
        XCTAssertEqual(unknown.tags(ada), [])
        XCTAssertTrue(unknown.saw(dot, tag: 42), "a context that cannot list what it saw vouches for any write under the dot")
        XCTAssertEqual(unknown.joined(with: vector([(ada, 2, [4, 8])])).tags(ada), [])
        XCTAssertEqual(vector([(ada, 2, [4, 8])]).joined(with: unknown).tags(ada), [])
        XCTAssertEqual(unknown.lowering(ada, to: 1).tags(ada), [], "a lowered entry's write is not known")
    }

    /// The sets are never cut short: a joined context saw a write exactly
    /// when one of its parts did, which the row join's proof needs.
    func testEveryWriteUnderOneDotIsRemembered() throws {
        let dot = Dot(actor: ada, counter: 1)
        var v = VersionVector()
        for tag in (1...40).reversed() { v = v.adding(dot, tag: UInt64(tag) * 3) }
        XCTAssertEqual(v.tags(ada), (1...40).map { UInt64($0) * 3 })
        XCTAssertEqual(try roundTrip(v), v)
        XCTAssertTrue(v.saw(dot, tag: 120))
        XCTAssertFalse(v.saw(dot, tag: 5))
    }

    func testAContextWithoutCollisionsEncodesAsBeforeTagSets() throws {
        let v = vector([(ada, 3, [0xABCD]), (ben, 1, [])])
        // [[device, incarnation, counter, tag], ...], the tag a plain integer.
        let cbor = try CBORReader.decode(v.encoded())
        let entries = try cbor.asArray().map { try $0.asArray() }
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(try entries[0][3].asUInt(), 0xABCD)
        XCTAssertEqual(try entries[1][3].asUInt(), 0)
        let collided = v.adding(Dot(actor: ada, counter: 3), tag: 0x1234)
        let list = try CBORReader.decode(collided.encoded()).asArray()[0].asArray()[3].asArray()
        XCTAssertEqual(try list.map { try $0.asUInt() }, [0x1234, 0xABCD])
    }

    func testOnlyTheCanonicalListOfTagsDecodes() {
        func entry(_ tags: CBOR) -> [UInt8] {
            var w = CBORWriter()
            w.write(.array([.array([.bytes(ada.device.bytes), .unsigned(ada.incarnation), .unsigned(1), tags])]))
            return w.bytes
        }
        func decodes(_ tags: CBOR) -> Bool { (try? VersionVector(cbor: try CBORReader.decode(entry(tags)))) != nil }
        XCTAssertTrue(decodes(.array([.unsigned(2), .unsigned(9)])))
        XCTAssertFalse(decodes(.array([.unsigned(9), .unsigned(2)])), "out of order")
        XCTAssertFalse(decodes(.array([.unsigned(2), .unsigned(2)])), "a tag twice")
        XCTAssertFalse(decodes(.array([.unsigned(0), .unsigned(2)])), "a zero tag in a list")
        XCTAssertFalse(decodes(.array([.unsigned(2)])), "one tag is written as a plain integer")
        XCTAssertFalse(decodes(.array([])), "no tags is written as 0")
        XCTAssertFalse(decodes(.text("x")))
    }

    /// Random contexts over three actors, counters 1...3, tags from a small
    /// pool (so collisions are common) or unknown: the join is a
    /// semilattice, and the encoding is canonical.
    func testTheJoinIsASemilatticeOverTagSets() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["QUIRE_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix64(seed: seed)
        func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        let actors = [ada, ben, Actor(device: ada.device, incarnation: 8)]
        func random() -> VersionVector {
            var v = VersionVector()
            for _ in 0..<int(5) {
                let actor = actors[int(actors.count)], counter = UInt64(1 + int(3))
                v = int(6) == 0 ? v.joined(with: VersionVector([actor: counter]))
                                : v.adding(Dot(actor: actor, counter: counter), tag: UInt64(1 + int(12)))
            }
            return v
        }
        for round in 0..<2000 {
            let a = random(), b = random(), c = random()
            let why = "seed \(seed), round \(round)"
            XCTAssertEqual(a.joined(with: b), b.joined(with: a), "commutative (\(why))")
            XCTAssertEqual(a.joined(with: a), a, "idempotent (\(why))")
            XCTAssertEqual(a.joined(with: b).joined(with: c), a.joined(with: b.joined(with: c)), "associative (\(why))")
            XCTAssertEqual(try roundTrip(a.joined(with: b)), a.joined(with: b), why)
            // The join saw a write exactly when a part did.
            let ab = a.joined(with: b)
            for actor in actors {
                for counter in 1...UInt64(4) {
                    for tag in 1...UInt64(13) {
                        let dot = Dot(actor: actor, counter: counter)
                        XCTAssertEqual(ab.saw(dot, tag: tag), a.saw(dot, tag: tag) || b.saw(dot, tag: tag), "\(dot) \(tag) (\(why))")
                    }
                }
            }
        }
    }
}
