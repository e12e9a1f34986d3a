import XCTest
import QuireCore
import QuireCrypto

final class LeafTests: XCTestCase {
    let key = RowKey(bytes: Array(0..<16))!
    let dev = DeviceID(bytes: [UInt8](repeating: 7, count: 16))!
    var actor: Actor { Actor(device: dev, incarnation: 5) }
    var vv: VersionVector { VersionVector([actor: 3]) }
    func t(_ s: Int64) -> Timestamp { Timestamp(seconds: s) }

    func sampleNote() -> Note {
        Note(title: "Idea", tags: ["b", "a"], body: Array("one\n\ntwo\n".utf8), createdAt: t(100), updatedAt: t(200), editedBy: dev)
    }

    func row(_ c: RowContent, key: RowKey? = nil, context: VersionVector? = nil) -> Row {
        let context = context ?? vv
        return Row(namespace: c.namespace, key: key ?? self.key, context: context,
                   heads: [RowHead(dot: Dot(actor: actor, counter: context[actor]), content: c)])
    }
    func leaf(_ c: RowContent) -> [UInt8] { LeafEncoding.leaf(of: row(c))! }

    func testOffloadedPointerHashesLikeResidentBody() {
        let resident = sampleNote()
        var offloaded = resident
        offloaded.body = nil      // residency: an excluded, per-device fact
        XCTAssertEqual(leaf(.note(resident)), leaf(.note(offloaded)))
        var otherContent = offloaded
        otherContent.contentHash = Note.bodyDigest(Array("different".utf8))
        XCTAssertNotEqual(leaf(.note(resident)), leaf(.note(otherContent)), "a pointer to different content must diverge")
    }

    func testEveryIncludedNoteFieldChangesTheLeaf() {
        let base = sampleNote()
        let baseLeaf = leaf(.note(base))
        var variants: [String: Note] = [:]
        var n = base; n.title = "Idea!"; variants["title"] = n
        n = base; n.tags = ["a"]; variants["tags"] = n
        n = base; n.body = Array("one\n\nthree\n".utf8); variants["body"] = n
        n = base; n.createdAt = t(101); variants["createdAt"] = n
        n = base; n.updatedAt = t(201); variants["updatedAt"] = n
        n = base; n.deletedParagraphs = [[1, 2, 3]]; variants["deletedParagraphs"] = n
        n = base; n.editedBy = nil; variants["editedBy"] = n
        for (field, variant) in variants {
            XCTAssertNotEqual(leaf(.note(variant)), baseLeaf, "changing \(field) must change the leaf")
        }
        XCTAssertNotEqual(LeafEncoding.leaf(of: row(.note(base), context: vv.adding(Dot(actor: actor, counter: 4), tag: 0))), baseLeaf, "dot and context")
        let other = Actor(device: dev, incarnation: 6)
        XCTAssertNotEqual(LeafEncoding.leaf(of: row(.note(base), context: vv.adding(Dot(actor: other, counter: 1), tag: 0))), baseLeaf, "context only")
        XCTAssertNotEqual(LeafEncoding.leaf(of: row(.note(base), key: RowKey(bytes: Array(1..<17))!)), baseLeaf, "row key")
    }

    func testEveryIncludedFieldOfStructuredRowsChangesTheLeaf() {
        let plan = Plan(title: "p", notes: "n", due: t(5), isDone: false, createdAt: t(1), updatedAt: t(2), editedBy: dev)
        var plans = [plan]
        var p = plan; p.title = "q"; plans.append(p)
        p = plan; p.notes = "m"; plans.append(p)
        p = plan; p.due = t(6); plans.append(p)
        p = plan; p.due = nil; plans.append(p)
        p = plan; p.isDone = true; plans.append(p)
        p = plan; p.createdAt = t(0); plans.append(p)
        p = plan; p.updatedAt = t(3); plans.append(p)
        XCTAssertEqual(Set(plans.map { leaf(.plan($0)) }).count, plans.count)

        let contact = Contact(name: "Ada", emails: ["a@x"], phones: ["1"], note: "hi", updatedAt: t(2), editedBy: dev)
        var contacts = [contact]
        var c = contact; c.title = "Ada L"; contacts.append(c)
        c = contact; c.emails = ["a@y"]; contacts.append(c)
        c = contact; c.phones = []; contacts.append(c)
        c = contact; c.note = nil; contacts.append(c)
        c = contact; c.updatedAt = t(9); contacts.append(c)
        XCTAssertEqual(Set(contacts.map { leaf(.contact($0)) }).count, contacts.count)

        let saga = SagaEntry(date: "2026-01-02", text: Array("day".utf8), updatedAt: t(3), editedBy: dev)
        var s = saga; s.text = Array("night".utf8)
        XCTAssertNotEqual(leaf(.saga(saga)), leaf(.saga(s)))
        let setting = Setting(name: "theme", value: "dark", updatedAt: t(1))
        var st = setting; st.value = "light"
        XCTAssertNotEqual(leaf(.setting(setting)), leaf(.setting(st)))
        let event = MemoryEvent(at: t(1), kind: "talk", text: "x")
        var e = event; e.buries = [key]
        XCTAssertNotEqual(leaf(.memory(event)), leaf(.memory(e)))
    }

    func testAbsentAndEmptyOptionalsDiffer() {
        let absent = Contact(name: "A", note: nil, updatedAt: t(1))
        let empty = Contact(name: "A", note: "", updatedAt: t(1))
        XCTAssertNotEqual(leaf(.contact(absent)), leaf(.contact(empty)))
        let noDue = Plan(title: "p", due: nil, createdAt: t(0), updatedAt: t(0))
        let zeroDue = Plan(title: "p", due: t(0), createdAt: t(0), updatedAt: t(0))
        XCTAssertNotEqual(leaf(.plan(noDue)), leaf(.plan(zeroDue)))
    }

    func testSubSecondDriftDoesNotChangeTheLeaf() {
        let a = Plan(title: "p", createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000.12), updatedAt: Timestamp(secondsSinceEpoch: 1_700_000_005.01))
        let b = Plan(title: "p", createdAt: Timestamp(secondsSinceEpoch: 1_700_000_000.98), updatedAt: Timestamp(secondsSinceEpoch: 1_700_000_005.999))
        XCTAssertEqual(leaf(.plan(a)), leaf(.plan(b)))
        let c = Plan(title: "p", createdAt: Timestamp(secondsSinceEpoch: 1_700_000_001.0), updatedAt: a.updatedAt)
        XCTAssertNotEqual(leaf(.plan(a)), leaf(.plan(c)))
    }

    func testLeavesOfTwoNamespacesNeverCollide() {
        // The same encoded bytes hashed under two namespace separators differ,
        // and every separator (and the inner-node one) is distinct.
        let separators = Namespace.allCases.map(\.leafSeparator) + [Fingerprint.nodeSeparator]
        XCTAssertEqual(Set(separators).count, separators.count)
        let payload = Array("identical".utf8)
        let hashes = Namespace.allCases.map { SHA256.hash(separator: $0.leafSeparator, payload) }
        XCTAssertEqual(Set(hashes).count, hashes.count)
        // A setting and a journal day with the same name/date and text still differ.
        let s = leaf(.setting(Setting(name: "2026-01-01", value: "x", updatedAt: t(1))))
        let d = leaf(.saga(SagaEntry(date: "2026-01-01", text: Array("x".utf8), updatedAt: t(1))))
        XCTAssertNotEqual(s, d)
    }

    func testTagsAreASet() {
        var a = sampleNote(), b = sampleNote()
        a.tags = ["x", "y", "x"]; b.tags = ["y", "x"]
        XCTAssertEqual(leaf(.note(a)), leaf(.note(b)))
    }

    func testKnownLeafVectorIsStable() {
        // Pins the encoding: if this changes, StateDigest.wireVersion must change too.
        let n = Note(title: "t", body: Array("b".utf8), createdAt: t(1), updatedAt: t(2))
        XCTAssertEqual(Hex.encode(leaf(.note(n))), LeafTests.pinnedNoteLeaf)
    }
    // Computed independently (Python hashlib + hand-written CBOR), with
    // head = sha256(len16("quire.head.notebook") ‖ "quire.head.notebook" ‖
    //   87 61 74 80 58 20<bodyDigest> 01 02 80 80):
    // sha256(len16("quire.state.notebook") ‖ "quire.state.notebook" ‖
    //   83 50<key> 81 84 50<dev> 05 03 00 81 82 83 50<dev> 05 03 58 20<head>)
    static let pinnedNoteLeaf = "a45ed9494b6eac59ce8d9b4e9fe9a9ec3d0e61f01f39786f6183cf4cae788a24"
}
