import XCTest
import QuireCore
@testable import QuireStore

final class OffloadStoreTests: XCTestCase {
    let homebase = DeviceID(bytes: [UInt8](repeating: 0xCC, count: 16))!
    let otherHolder = DeviceID(bytes: [UInt8](repeating: 0xDD, count: 16))!

    func hash(_ row: Row) -> [UInt8] {
        guard case .note(let n)? = row.content else { return [] }
        return n.contentHash
    }

    func testOffloadAndRecallLeaveTheDigestBitIdentical() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.put(note("big", String(repeating: "words and more words ", count: 500)))
        let before = try s.digest(generation: 0).encoded()
        let outboxBefore = try s.pendingEdits()
        try s.markOffloaded(r.key, contentHash: hash(r), holders: [homebase])
        XCTAssertEqual(try s.digest(generation: 0).encoded(), before, "offloading is not an edit")
        let pointer = try XCTUnwrap(try s.row(.notebook, r.key))
        XCTAssertEqual(pointer.context, r.context)
        XCTAssertEqual(pointer.heads.map(\.dot), r.heads.map(\.dot))
        guard case .note(let n)? = pointer.content else { return XCTFail() }
        XCTAssertNil(n.body)
        XCTAssertEqual(n.length, 10_500)
        XCTAssertEqual(try s.summaries(.notebook).first?.size, 10_500, "st_size stays the real length")
        XCTAssertEqual(try s.pendingEdits(), outboxBefore)
        XCTAssertEqual(try s.offloadedNotes().map(\.holders), [[homebase]])
        XCTAssertEqual(try s.recomputedRoots(), try s.roots())
        // Wrong bytes are refused; the right ones come back resident.
        XCTAssertThrowsError(try s.restoreBody(Array("forged".utf8), contentHash: hash(r)))
        XCTAssertEqual(try s.restoreBody(Array(String(repeating: "words and more words ", count: 500).utf8), contentHash: hash(r)), 1)
        XCTAssertEqual(try s.digest(generation: 0).encoded(), before)
        XCTAssertEqual(try s.row(.notebook, r.key), r)
    }

    /// A resident copy an offload counted can end up a later head: a
    /// concurrent version that sorts first joins it. It is still served
    /// (recall, hold queries), or a copy that exists would not count
    /// (simulator seed 463 with --everything).
    func testABodyInALaterHeadIsServed() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.put(note("n", "kept words\n"))
        let other = Actor(device: DeviceID(bytes: [UInt8](repeating: 0, count: 16))!, incarnation: 1)
        let theirs = Note(title: "n", body: Array("other words\n".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))
        try s.apply([Row.single(.notebook, r.key, dot: Dot(actor: other, counter: 1), context: VersionVector(), content: .note(theirs))])
        let heads = try XCTUnwrap(s.row(.notebook, r.key)).heads
        XCTAssertEqual(heads.count, 2)
        XCTAssertEqual(heads.last?.dot, r.heads.first?.dot, "ours is the later head")
        XCTAssertEqual(try s.servableBody(contentHash: hash(r), key: r.key), Array("kept words\n".utf8))
        XCTAssertEqual(try s.servableBody(contentHash: theirs.contentHash, key: r.key), Array("other words\n".utf8))
        XCTAssertNil(try s.servableBody(contentHash: hash(r)), "not held for anyone, and no key named")
    }

    /// Renaming a note whose view is a pointer (one version's body is
    /// offloaded here, a concurrent one is not) writes a version that
    /// stands for the offloaded body only: the concurrent version stays a
    /// head, and once the body is back the note shows every word under the
    /// new title, here and on a sibling (simulator seed 4031 with
    /// --cloud-and-power-faults --revocations lost the concurrent words).
    func testARenameOverAnOffloadedVersionKeepsTheConcurrentOnesWords() throws {
        let dir = temporaryDirectory()
        let s = try makeStore(dir)
        let mine = try s.put(note("n", "shared words\n"))
        let offloadedBody = Array("shared words\n".utf8)
        try s.markOffloaded(mine.key, contentHash: hash(mine), holders: [homebase])
        let other = Actor(device: DeviceID(bytes: [UInt8](repeating: 0, count: 16))!, incarnation: 1)
        let theirs = Note(title: "n", body: Array("shared words\n\nonly theirs\n".utf8),
                          createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))
        try s.apply([Row.single(.notebook, mine.key, dot: Dot(actor: other, counter: 1), context: VersionVector(), content: .note(theirs))])
        let before = try XCTUnwrap(try s.row(.notebook, mine.key))
        XCTAssertEqual(before.heads.count, 2)
        guard case .note(var shown)? = before.content else { return XCTFail() }
        XCTAssertNil(shown.body, "a head is offloaded: the view is a pointer")

        shown.title = "renamed"
        let edit = try s.putFromMount(.note(shown), key: mine.key).row
        XCTAssertEqual(edit.heads.count, 2, "the concurrent version stays")
        XCTAssertTrue(edit.heads.contains { $0.dot.actor == other }, "the concurrent version stays")
        XCTAssertEqual(try s.restoreBody(offloadedBody, contentHash: hash(mine), key: mine.key), 1)
        try FileManager.default.createDirectory(atPath: dir + "/sibling", withIntermediateDirectories: true)
        let sibling = try makeStore(dir + "/sibling", device: deviceB, seed: 9)
        try sibling.apply([try XCTUnwrap(try s.row(.notebook, mine.key))])
        for store in [s, sibling] {
            guard case .note(let n)? = try store.row(.notebook, mine.key)?.content else { return XCTFail() }
            XCTAssertEqual(n.title, "renamed")
            let text = String(decoding: n.body ?? [], as: UTF8.self)
            XCTAssertTrue(text.contains("only theirs") && text.contains("shared words"), text)
        }
    }

    func testOffloadingDropsAShadowEqualToTheBodyButKeepsOneThatDiffers() throws {
        let s = try makeStore(temporaryDirectory())
        let a = try s.saveProse(note("a", "text written here\n"))
        XCTAssertNotNil(try s.shadow(.notebook, a.key))
        try s.markOffloaded(a.key, contentHash: hash(a), holders: [homebase])
        XCTAssertNil(try s.shadow(.notebook, a.key), "the offloaded bytes are not kept twice")
        let b = try s.saveProse(note("b", "first words\n"))
        try s.put(note("b", "other words\n"), key: b.key)     // not a prose save: the shadow stays at "first words"
        let current = try XCTUnwrap(try s.row(.notebook, b.key))
        try s.markOffloaded(b.key, contentHash: hash(current), holders: [homebase])
        XCTAssertEqual(try s.shadow(.notebook, b.key), Array("first words\n".utf8), "a shadow that differs is this device's only copy")
    }

    func testAnEditInFlightKeepsItsNewBody() throws {
        let s = try makeStore(temporaryDirectory())
        let r = try s.put(note("n", "old content"))
        let oldHash = hash(r)
        try s.put(note("n", "new content"), key: r.key)
        XCTAssertThrowsError(try s.markOffloaded(r.key, contentHash: oldHash, holders: [homebase])) { e in
            XCTAssertEqual((e as? StoreError)?.kind, .conflict)
        }
        guard case .note(let n)? = try s.row(.notebook, r.key)?.content else { return XCTFail() }
        XCTAssertEqual(n.body, Array("new content".utf8))
    }

    func testOffloadingAndResidentDevicesAgreeAndPointersToOtherContentDiverge() throws {
        let a = try makeStore(temporaryDirectory(), device: deviceA)
        let b = try makeStore(temporaryDirectory(), device: deviceB, seed: 5)
        let c = try makeStore(temporaryDirectory(), device: deviceB, seed: 6)
        let rows = try (0..<20).map { try a.put(note("n\($0)", "body number \($0)")) }
        try b.apply(rows)
        try c.apply(rows)
        for r in rows.prefix(10) { try a.markOffloaded(r.key, contentHash: hash(r), holders: [homebase]) }
        for r in rows.prefix(10) { try c.markOffloaded(r.key, contentHash: hash(r), holders: [otherHolder]) }
        XCTAssertEqual(try a.roots()[.notebook], try b.roots()[.notebook], "offloading and resident devices compute the same root")
        XCTAssertEqual(try a.roots()[.notebook], try c.roots()[.notebook], "pointers naming different holders agree")
        // A pointer to different content diverges.
        var other = rows[0]
        if case .note(var n)? = other.content { n.body = nil; n.contentHash = Note.bodyDigest(Array("something else".utf8)); other = Row(namespace: other.namespace, key: other.key, context: other.context, heads: [RowHead(dot: other.heads[0].dot, content: .note(n))]) }
        XCTAssertNotEqual(LeafEncoding.leaf(of: other), LeafEncoding.leaf(of: rows[0]))
        // A sibling's pointer for content held resident here keeps the bytes.
        let pointerRows = try a.rows(.notebook, from: [], to: nil).filter { if case .note(let n)? = $0.content { return n.body == nil } else { return false } }
        XCTAssertEqual(pointerRows.count, 10)
        try b.apply(pointerRows)
        XCTAssertEqual(try b.offloadedNotes().count, 0, "b keeps its resident bytes")
        XCTAssertEqual(try b.mergeCount(), 0, "residency is not a merge")
    }

    func testHoldingBodiesForOthersAndServingThem() throws {
        let h = try makeStore(temporaryDirectory())
        let body = Array("held for a phone".utf8)
        XCTAssertThrowsError(try h.holdBody(body, contentHash: Note.bodyDigest(Array("other".utf8)), for: deviceB))
        try h.holdBody(body, contentHash: Note.bodyDigest(body), for: deviceB)
        try h.holdBody(body, contentHash: Note.bodyDigest(body), for: deviceB)   // a repeated put is harmless
        XCTAssertEqual(try h.servableBody(contentHash: Note.bodyDigest(body)), body)
        XCTAssertEqual(try h.heldBodies().map(\.count), [1])
        let own = try h.put(note("mine", "resident here"))
        XCTAssertEqual(try h.servableBody(contentHash: hash(own), key: own.key), Array("resident here".utf8))
        XCTAssertNil(try h.servableBody(contentHash: Note.bodyDigest(body), key: own.key).flatMap { $0 == body ? nil : $0 }, "a body is only served under its own hash")
        XCTAssertNil(try h.servableBody(contentHash: Note.bodyDigest(Array("nobody has this".utf8))))
    }

    /// A copy a sibling's offload counted stays servable here whatever
    /// becomes of the note: edited, deleted, or shown as a pointer.
    func testACountedCopyIsKeptWhenItsNoteChangesHere() throws {
        let s = try makeStore(temporaryDirectory())
        let pinned = try s.put(note("counted", "a copy the phone counted"))
        let loose = try s.put(note("not counted", "nobody counted this one"))
        XCTAssertEqual(try s.pinnedCopies(contentHash: hash(pinned)), 0)
        try s.pinCopies([hash(pinned)], for: deviceB, required: 2)
        try s.pinCopies([hash(pinned)], for: deviceB, required: 1)   // the most a sibling asked for stands
        try s.pinCopies([hash(pinned)], for: homebase, required: 3)
        XCTAssertEqual(try s.pinnedCopies(contentHash: hash(pinned)), 3)
        XCTAssertEqual(try s.heldBodies().count, 0, "kept in the note while it is there")

        try s.put(note("counted", "edited here"), key: pinned.key)
        try s.put(note("not counted", "edited here too"), key: loose.key)
        XCTAssertEqual(try s.servableBody(contentHash: hash(pinned)), Array("a copy the phone counted".utf8))
        XCTAssertNil(try s.servableBody(contentHash: hash(loose)), "an uncounted copy goes with its version")

        let again = try s.put(note("again", "counted, then deleted"))
        try s.pinCopies([hash(again)], for: deviceB, required: 2)
        try s.delete(.notebook, again.key)
        XCTAssertEqual(try s.servableBody(contentHash: hash(again)), Array("counted, then deleted".utf8))
        XCTAssertEqual(try s.heldBodies().map(\.count).reduce(0, +), 2)

        // Released by one sibling, still pinned by another: the body stays until the last pin goes.
        try s.releaseCopies([hash(pinned)], for: deviceB, epoch: .max >> 1, dropKept: true)
        XCTAssertNotNil(try s.servableBody(contentHash: hash(pinned)))
        try s.releaseCopies([hash(pinned)], for: homebase, epoch: .max >> 1, dropKept: true)
        XCTAssertNil(try s.servableBody(contentHash: hash(pinned)))
        XCTAssertEqual(try s.pinnedCopies(contentHash: hash(pinned)), 0)
        // A body held as a homebase (for an offload) is never dropped by a release.
        let forOffload = Array("held for a phone's offload".utf8)
        try s.holdBody(forOffload, contentHash: Note.bodyDigest(forOffload), for: deviceB)
        try s.pinCopies([Note.bodyDigest(forOffload)], for: homebase, required: 2)
        try s.releaseCopies([Note.bodyDigest(forOffload)], for: homebase, epoch: .max >> 1, dropKept: true)
        XCTAssertEqual(try s.servableBody(contentHash: Note.bodyDigest(forOffload)), forOffload)
    }

    /// A replica from before counted copies were pinned, holding a body for
    /// a phone and a note of its own, upgrades in place: the held body stays
    /// served and is never taken for one kept for a pin, and pins work.
    func testAReplicaFromBeforePinsUpgradesWithItsHeldBodies() throws {
        let dir = temporaryDirectory()
        let held = Array("held for a phone before the upgrade".utf8)
        var own: Row
        do {
            let s = try makeStore(dir)
            try s.holdBody(held, contentHash: Note.bodyDigest(held), for: deviceB)
            own = try s.put(note("mine", "resident before the upgrade"))
        }
        do {
            let c = try Connection(path: dir + "/replica.sqlite")
            // The migrations after it too (`holders`, `deletedProse`, `barrierLists`).
            try c.execute("DROP TABLE holders; DROP TABLE deleted_prose; DROP TABLE barrier_lists; DROP TABLE copy_pins; ALTER TABLE held_bodies DROP COLUMN forPin; PRAGMA user_version=\(Schema.all.count - 4)")
        }
        let s = try makeStore(dir)
        XCTAssertEqual(try Connection(path: dir + "/replica.sqlite").queryOne("PRAGMA user_version") { $0.int(0) }, Int64(Schema.all.count))
        XCTAssertEqual(try s.servableBody(contentHash: Note.bodyDigest(held)), held)
        XCTAssertEqual(try s.row(.notebook, own.key)?.content, own.content)
        try s.pinCopies([Note.bodyDigest(held), hash(own)], for: homebase, required: 2)
        try s.releaseCopies([Note.bodyDigest(held)], for: homebase, epoch: .max >> 1, dropKept: true)
        XCTAssertEqual(try s.servableBody(contentHash: Note.bodyDigest(held)), held, "held before the upgrade: not a pin's")
        try s.delete(.notebook, own.key)
        XCTAssertEqual(try s.servableBody(contentHash: hash(own)), Array("resident before the upgrade".utf8), "kept for the pin")
        XCTAssertEqual(try s.roots(), try s.recomputedRoots())
        own = try XCTUnwrap(try s.row(.notebook, own.key))
        XCTAssertTrue(own.isTombstone)
    }

    func testReclaimingSpaceShrinksTheDatabase() throws {
        let dir = temporaryDirectory()
        let s = try makeStore(dir)
        // Random letters: bodies are stored deflated, and these do not shrink much.
        let rng = SeededRandom(seed: 3)
        let rows = try s.putMany((0..<40).map { i in note("n\(i)", String(decoding: (0..<100_000).map { _ in UInt8(97 + rng.int(0..<26)) }, as: UTF8.self)) })
        try s.compact()
        func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: dir + "/replica.sqlite"))?[.size] as? Int) ?? 0 }
        let before = size()
        for r in rows { try s.markOffloaded(r.key, contentHash: hash(r), holders: [homebase]) }
        try s.reclaimSpace()
        let after = size()
        // 26 letters deflate to about 5/8 of their size.
        XCTAssertLessThan(after, before - 40 * 100_000 / 2, "the offloaded bodies' space is freed (\(before) → \(after))")
    }
}

/// A body damaged on disk is never shown or served; it is set aside like
/// an offloaded one and a good copy (checked against the hash) repairs it.
final class DamagedBodyTests: XCTestCase {
    func testAFlippedByteIsSetAsideAndAGoodCopyRepairsIt() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try makeStore(dir)
        let good = Array("every word\n\nkept\n".utf8)
        let r = try s.put(.note(Note(title: "t", body: good, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        let digest = try s.digest(generation: 0).encoded()
        var bad = good
        bad[3] ^= 0x20
        let c = try Connection(path: dir + "/replica.sqlite")
        try c.run("UPDATE rows SET body = ? WHERE key = ?", [.blob(bad), .blob(r.key.bytes)])
        let seen = try XCTUnwrap(try s.row(.notebook, r.key))
        guard case .note(let n)? = seen.content else { return XCTFail() }
        XCTAssertNil(n.body, "the damaged bytes are not handed out")
        XCTAssertEqual(try s.damagedBodies().map(\.key), [r.key])
        XCTAssertNil(try s.damagedBodies().first?.repairedAt)
        XCTAssertEqual(try s.digest(generation: 0).encoded(), digest, "setting a body aside is not an edit")
        XCTAssertEqual(try s.offloadedNotes().map(\.key), [r.key], "recall brings it back like an offloaded body")
        XCTAssertThrowsError(try s.restoreBody(bad, contentHash: n.contentHash), "wrong bytes never repair it")
        XCTAssertEqual(try s.restoreBody(good, contentHash: n.contentHash), 1)
        guard case .note(let repaired)? = try s.row(.notebook, r.key)?.content else { return XCTFail() }
        XCTAssertEqual(repaired.body, good)
        XCTAssertNotNil(try s.damagedBodies().first?.repairedAt)
        // A save over a damaged note still lands (the damage is set aside in its transaction).
        try c.run("UPDATE rows SET body = ? WHERE key = ?", [.blob(bad), .blob(r.key.bytes)])
        let saved = try s.put(.note(Note(title: "t", body: Array("new text\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))), key: r.key)
        guard case .note(let fresh)? = saved.content else { return XCTFail() }
        XCTAssertEqual(fresh.body, Array("new text\n".utf8))
        XCTAssertEqual(try s.roots(), try s.recomputedRoots())
        XCTAssertEqual(try s.checkBodies(), 0)
    }
}

/// Bodies are kept deflated where that pays; what comes out is what went in,
/// and a deflated body damaged on disk is caught like any other.
final class StoredBodyTests: XCTestCase {
    func testBodiesRoundTripAndOnlyShrinkingOnesAreDeflated() throws {
        let text = Array(String(repeating: "the quick brown fox jumps over the lazy dog\n", count: 100).utf8)
        let deflated = StoredBody.encode(text)
        XCTAssertEqual(deflated.format, StoredBody.deflated)
        XCTAssertLessThan(deflated.bytes.count, text.count / 10)
        XCTAssertEqual(StoredBody.decode(deflated.bytes, format: deflated.format), text)
        let rng = SeededRandom(seed: 5)
        let noise = rng.bytes(4000)
        XCTAssertEqual(StoredBody.encode(noise).format, StoredBody.raw, "bytes that do not shrink stay as written")
        XCTAssertEqual(StoredBody.encode(Array("short".utf8)).format, StoredBody.raw)
        // Damaged: a flipped byte, a lying length, a truncation.
        var flipped = deflated.bytes
        flipped[flipped.count / 2] ^= 0xFF
        XCTAssertNotEqual(StoredBody.decode(flipped, format: StoredBody.deflated), text)
        var lying = deflated.bytes
        lying[3] = 0x7F
        XCTAssertNil(StoredBody.decode(lying, format: StoredBody.deflated))
        XCTAssertNil(StoredBody.decode(Array(deflated.bytes.prefix(10)), format: StoredBody.deflated))
        XCTAssertNil(StoredBody.decode([1, 2], format: StoredBody.deflated))
    }

    /// Replicas written before libdeflate hold bodies zlib deflated; both
    /// write the same format (a length, then a zlib stream), so a replica
    /// needs no migration either way.
    func testBodiesStoredByZlibReadBackAndNewOnesAreZlibStreams() throws {
        let text = Array(String(repeating: "Paragraph one of a note kept before libdeflate.\n\n", count: 6).utf8)
        // 4-byte length, then zlib's compress(text, level 1), as stored before.
        let byZlib = hexBytes("2601000078010b482c4a4c2f4a2cc850c8cf4b55c84f534854c8cb2f4955c84e2d2851484a4dcb2f4a55c8c94c4a494dcb492c49d5e3e20a18891a00726a6697")
        XCTAssertEqual(StoredBody.decode(byZlib, format: StoredBody.deflated), text)
        var badChecksum = byZlib
        badChecksum[badChecksum.count - 1] ^= 0x01
        XCTAssertNil(StoredBody.decode(badChecksum, format: StoredBody.deflated), "the stream's Adler-32 is checked")
        let stored = StoredBody.encode(text)
        XCTAssertEqual(stored.format, StoredBody.deflated)
        XCTAssertEqual(Array(stored.bytes.prefix(4)), [0x26, 0x01, 0, 0], "the length, little-endian")
        // A zlib header: deflate with a 32 KiB window, and CMF·256+FLG a multiple of 31.
        XCTAssertEqual(stored.bytes[4], 0x78)
        XCTAssertEqual((Int(stored.bytes[4]) * 256 + Int(stored.bytes[5])) % 31, 0)
    }

    private func hexBytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    /// A sibling's batch has its bodies deflated ahead of the transaction,
    /// on several threads: each row keeps its own body (twins included, and
    /// a row whose merge changes its body), stored deflated where that pays.
    func testABatchFromASiblingStoresEachRowsOwnBody() throws {
        let sender = try makeStore(temporaryDirectory("sender"), device: deviceA)
        let receiver = try makeStore(temporaryDirectory("receiver"), device: deviceB, seed: 2)
        // One note both wrote concurrently: the batch's version is merged with the local one.
        let shared = try sender.put(note("shared", "first paragraph from a\n\n" + String(repeating: "more words here ", count: 20)))
        try receiver.put(note("shared", "a paragraph written on b alone\n\n" + String(repeating: "other words ", count: 20)), key: shared.key)
        var written: [(RowKey, String)] = []
        for i in 0..<200 {
            // Every tenth note is a twin of the one before (same body, same hash).
            let text = i % 10 == 1 ? written[i - 1].1 : "note \(i)\n\n" + String(repeating: "words of note \(i) ", count: 10 + i % 17)
            written.append((try sender.put(note("n\(i)", text)).key, text))
        }
        written.append((shared.key, ""))
        let rows = try written.map { try XCTUnwrap(try sender.row(.notebook, $0.0)) }
        XCTAssertGreaterThan(try receiver.apply(rows, from: deviceA).applied, 200)
        for (key, text) in written.dropLast() {
            guard case .note(let n)? = try receiver.row(.notebook, key)?.content else { return XCTFail("no note \(key)") }
            XCTAssertEqual(n.body, Array(text.utf8))
        }
        guard case .note(let merged)? = try receiver.row(.notebook, shared.key)?.content, let body = merged.body else { return XCTFail("no merged note") }
        let mergedText = String(decoding: body, as: UTF8.self)
        XCTAssertTrue(mergedText.contains("first paragraph from a") && mergedText.contains("a paragraph written on b alone"), mergedText)
        let c = try Connection(path: receiver.path)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM rows WHERE ns = ? AND bodyFormat = ?",
                                      [.int(Int64(Namespace.notebook.rawValue)), .int(StoredBody.deflated)]) { $0.int(0) }, 201)
        XCTAssertEqual(try receiver.checkBodies(), 0)
    }

    func testABulkPutStoresEachNotesOwnBody() throws {
        let store = try makeStore(temporaryDirectory())
        // Twins (same body), short bodies kept as written, and a note with
        // an edited body whose hash moved with it, among 300 deflated ahead.
        var contents: [RowContent] = []
        var texts: [String] = []
        for i in 0..<300 {
            let text = i % 10 == 1 ? texts[i - 1] : i % 25 == 0 ? "short \(i)" : "note \(i)\n\n" + String(repeating: "words of note \(i) ", count: 10 + i % 17)
            var n = Note(title: "n\(i)", body: Array(text.utf8), createdAt: Timestamp(seconds: 1_700_000_000), updatedAt: Timestamp(seconds: 1_700_000_000))
            if i == 7 { n.body = Array(("edited " + text).utf8); texts.append("edited " + text) } else { texts.append(text) }
            contents.append(.note(n))
        }
        let rows = try store.putMany(contents)
        for (row, text) in zip(rows, texts) {
            guard case .note(let n)? = try store.row(.notebook, row.key)?.content else { return XCTFail("no note \(row.key)") }
            XCTAssertEqual(n.body, Array(text.utf8))
        }
        let c = try Connection(path: store.path)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM rows WHERE ns = ? AND bodyFormat = ?",
                                      [.int(Int64(Namespace.notebook.rawValue)), .int(StoredBody.deflated)]) { $0.int(0) },
                       Int64(texts.filter { $0.utf8.count >= 128 }.count))
        XCTAssertEqual(try store.checkBodies(), 0)
    }

    func testBodiesDeflateAndInflateOnManyThreadsAtOnce() {
        // Compressors are reused between bodies and threads: none may be
        // used by two at a time, or bodies would come back mixed.
        let bodies = (0..<2_000).map { i in Array(("body \(i) " + String(repeating: "of words \(i % 37) ", count: 20 + i % 50)).utf8) }
        let roundTrips = bodies.concurrentMap(minimumChunk: 1) { body -> [UInt8]? in
            let stored = StoredBody.encode(body)
            return StoredBody.decode(stored.bytes, format: stored.format)
        }
        XCTAssertEqual(roundTrips.count, bodies.count)
        for (body, back) in zip(bodies, roundTrips) where back != body { return XCTFail("a body came back changed") }
    }

    func testADeflatedBodyDamagedOnDiskIsSetAsideNotShown() throws {
        let dir = temporaryDirectory()
        let s = try makeStore(dir)
        let text = String(repeating: "a paragraph of ordinary words\n\n", count: 50)
        let r = try s.put(note("n", text))
        let c = try Connection(path: dir + "/replica.sqlite")
        XCTAssertEqual(try c.queryOne("SELECT bodyFormat, length(body) < 300 FROM rows WHERE key = ?", [.blob(r.key.bytes)]) { [$0.int(0), $0.int(1)] }, [1, 1])
        try c.run("UPDATE rows SET body = substr(body, 1, 20) WHERE key = ?", [.blob(r.key.bytes)])
        let read = try s.row(.notebook, r.key)
        guard case .note(let n)? = read?.content else { return XCTFail("no note") }
        XCTAssertNil(n.body, "a body that does not inflate is never shown")
        XCTAssertEqual(try s.checkBodies(), 0, "already set aside when read")
    }
}
