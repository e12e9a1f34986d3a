import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import XCTest
@testable import QuireSync

final class FrameTests: XCTestCase {
    private func identity(account: SigningKeyPair) -> (Identity, FrameIdentity) {
        let id = Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: SecretBytes(randomCount: 32))
        return (id, FrameIdentity(deviceID: id.deviceID, userIDHash: id.userIDHash, box: id.deviceBox))
    }

    private func member(_ id: Identity, revoked: Bool = false) -> RosterMember {
        RosterMember(deviceID: id.deviceID, name: "x", boxKey: id.deviceBox.publicKey, signingKey: id.deviceSigning.publicKey.bytes,
                     role: "device", issuedAt: Timestamp(seconds: 1), revokedAt: revoked ? Timestamp(seconds: 2) : nil)
    }

    /// A refusal travels in an introduction, cut to its limit on a character
    /// boundary; a longer one from a hostile sender is refused whole, and an
    /// introduction without one (older versions) reads as before.
    func testAnIntroductionCarriesARefusalWithinItsLimit() throws {
        let plain = try IntroduceMessage.decode(IntroduceMessage(rows: [], enrolment: [1, 2, 3]).encoded())
        XCTAssertNil(plain.refusal)
        XCTAssertEqual(plain.enrolment, [1, 2, 3])
        let said = try IntroduceMessage.decode(IntroduceMessage(rows: [], refusal: "its invite was already used").encoded())
        XCTAssertEqual(said.refusal, "its invite was already used")
        let long = String(repeating: "é", count: 400)   // 800 bytes
        let cut = try XCTUnwrap(try IntroduceMessage.decode(IntroduceMessage(rows: [], refusal: long).encoded()).refusal)
        XCTAssertEqual(cut, String(repeating: "é", count: IntroduceMessage.maxRefusalBytes / 2))
        let hostile = CBORWriter.encode(.map([(.unsigned(2), .array([])), (.unsigned(4), .text(long))]))
        XCTAssertThrowsError(try IntroduceMessage.decode(hostile))
    }

    func testEnvelopeRoundTripAndHostileShapes() {
        let e = Envelope(boxKind: .authenticated, recipient: ID16(bytes: Array(repeating: 1, count: 16))!,
                         claimedSender: ID16(bytes: Array(repeating: 2, count: 16))!, box: Array(repeating: 7, count: 100))
        let bytes = e.encoded()
        XCTAssertEqual(try Envelope.parse(bytes, maxSize: 1000).get(), e)
        XCTAssertEqual(Envelope.parse(bytes, maxSize: 50), .failure(.oversize))
        XCTAssertEqual(Envelope.parse(Array(bytes.prefix(60)), maxSize: 1000), .failure(.truncated))
        XCTAssertEqual(Envelope.parse(Array(bytes.prefix(20)), maxSize: 1000), .failure(.truncated))
        XCTAssertEqual(Envelope.parse(bytes + [0], maxSize: 1000), .failure(.malformed))
        XCTAssertEqual(Envelope.parse([], maxSize: 1000), .failure(.malformed))
        var wrongFormat = bytes; wrongFormat[2] = 9
        XCTAssertEqual(Envelope.parse(wrongFormat, maxSize: 1000), .failure(.unsupportedFormat))
        var badKind = bytes; badKind[4] = 7
        XCTAssertEqual(Envelope.parse(badKind, maxSize: 1000), .failure(.malformed))
        let random = SeededRandom(seed: 42)
        for _ in 0..<2000 {
            let junk = random.bytes(random.int(0..<300))
            if case .success = Envelope.parse(junk, maxSize: 1000) { XCTAssertEqual(Array(junk.prefix(2)), Envelope.magic) }
        }
    }

    /// Frames are padded to buckets, but a message never pays for much
    /// more than its own size: one that would leave most of a large frame
    /// padding goes as chunks of a smaller bucket, and it arrives whole.
    func testPaddingCostsLittleAtEverySize() throws {
        let account = SigningKeyPair()
        let (alice, aliceFrame) = identity(account: account)
        let (bob, bobFrame) = identity(account: account)
        let roster = Roster(members: [alice.deviceID: member(alice), bob.deviceID: member(bob)])
        var sealer = FrameSealer(identity: bobFrame, session: Array(repeating: 3, count: 8), sessionStart: 10, maxFrameSize: 64 << 10)
        var replays = ReplayGuard()
        var assembler = ChunkAssembler()
        let random = SeededRandom(seed: 7)
        for size in [10, 900, 3_000, 5_000, 17_000, 20_000, 40_000, 70_000, 100_000, 300_000] {
            let payload = random.bytes(size)
            let frames = sealer.seal(SyncMessage(subKind: .reconcileResponse, payload: payload), to: alice.deviceID,
                                     boxKey: alice.deviceBox.publicKey, messageID: random.bytes(8))
            let wire = frames.reduce(0) { $0 + $1.count }
            XCTAssertTrue(frames.allSatisfy { OpaqueEnvelope.buckets.contains($0.count) }, "\(size): every frame a bucket")
            XCTAssertLessThanOrEqual(wire, max(1 << 10, size + size / 4 + 2 << 10), "\(size) B took \(wire) B in \(frames.count) frames")
            var whole: SyncMessage?
            for frame in frames {
                let opened = try FrameOpener.open(frame, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &replays).get()
                if opened.subKind == .chunk {
                    whole = assembler.add(try XCTUnwrap(Chunk.decode(opened.payload)), from: bob.deviceID, nowMs: 1) ?? whole
                } else {
                    whole = SyncMessage(subKind: opened.subKind, payload: opened.payload)
                }
            }
            XCTAssertEqual(whole?.subKind, .reconcileResponse)
            XCTAssertEqual(whole?.payload, payload, "\(size) B arrive whole")
        }
    }

    func testOpenChecksEveryStepInOrder() throws {
        let account = SigningKeyPair()
        let (alice, aliceFrame) = identity(account: account)
        let (bob, bobFrame) = identity(account: account)
        let (carol, _) = identity(account: account)
        let (mallory, malloryFrame) = identity(account: SigningKeyPair())
        let roster = Roster(members: [alice.deviceID: member(alice), bob.deviceID: member(bob), carol.deviceID: member(carol, revoked: true)])
        var sealer = FrameSealer(identity: bobFrame, session: Array(repeating: 3, count: 8), sessionStart: 10, maxFrameSize: 64 << 10)
        let message = SyncMessage(subKind: .stateDigest, payload: [1, 2, 3])
        let frame = sealer.seal(message, to: alice.deviceID, boxKey: alice.deviceBox.publicKey, messageID: [0, 0, 0, 0, 0, 0, 0, 0])[0]
        var guardState = ReplayGuard()
        let opened = try FrameOpener.open(frame, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &guardState).get()
        XCTAssertEqual(opened.subKind, .stateDigest)
        XCTAssertEqual(opened.payload, [1, 2, 3])
        XCTAssertEqual(opened.sender, bob.deviceID)
        // The same bytes again: a replay.
        XCTAssertEqual(FrameOpener.open(frame, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &guardState), .failure(.replay))
        // Format 2 names no device: the relay sees magic, version, a padded box.
        XCTAssertEqual(Array(frame.prefix(3)), [0x51, 0x53, 2])
        XCTAssertTrue(OpaqueEnvelope.buckets.contains(frame.count), "\(frame.count) bytes is not a bucket size")
        for id in [alice.deviceID, bob.deviceID] { XCTAssertNil(frame.firstRange(of: id.bytes), "a device id in clear") }
        // Reflected back to its sender: the box opens (crypto_box keys are
        // symmetric) but the inner sender is not the device whose key opened it.
        var g2 = ReplayGuard()
        XCTAssertEqual(FrameOpener.open(frame, maxSize: 64 << 10, me: bobFrame, roster: roster, replay: &g2), .failure(.unauthenticated))
        // A flipped byte in the box: no key opens it.
        var tampered = frame; tampered[tampered.count - 5] ^= 0x40
        XCTAssertEqual(FrameOpener.open(tampered, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.unknownSender))
        // Claiming to be Bob but sealed by Mallory's key.
        var forged = FrameSealer(identity: FrameIdentity(deviceID: bob.deviceID, userIDHash: bob.userIDHash, box: mallory.deviceBox),
                                 session: Array(repeating: 4, count: 8), sessionStart: 11, maxFrameSize: 64 << 10)
        let forgedFrame = forged.seal(message, to: alice.deviceID, boxKey: alice.deviceBox.publicKey, messageID: [])[0]
        XCTAssertEqual(FrameOpener.open(forgedFrame, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.unknownSender))
        // Another account's device: not on our roster.
        var other = FrameSealer(identity: malloryFrame, session: Array(repeating: 5, count: 8), sessionStart: 12, maxFrameSize: 64 << 10)
        let otherFrame = other.seal(message, to: alice.deviceID, boxKey: alice.deviceBox.publicKey, messageID: [])[0]
        XCTAssertEqual(FrameOpener.open(otherFrame, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.unknownSender))
        // A roster key, but the inner account is not ours.
        let sneaky = FrameIdentity(deviceID: bob.deviceID, userIDHash: mallory.userIDHash, box: bob.deviceBox)
        var sneakySealer = FrameSealer(identity: sneaky, session: Array(repeating: 6, count: 8), sessionStart: 13, maxFrameSize: 64 << 10)
        let sneakyFrame = sneakySealer.seal(message, to: alice.deviceID, boxKey: alice.deviceBox.publicKey, messageID: [])[0]
        XCTAssertEqual(FrameOpener.open(sneakyFrame, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.otherAccount))
        // An anonymous introduce from another account.
        let intro = other.sealAnonymously(SyncMessage(subKind: .introduce, payload: []), to: alice.deviceID, boxKey: alice.deviceBox.publicKey)
        XCTAssertEqual(FrameOpener.open(intro, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.otherAccount))
        // An anonymous box may carry only `introduce`.
        let anonDigest = sealer.sealAnonymously(message, to: alice.deviceID, boxKey: alice.deviceBox.publicKey)
        XCTAssertEqual(FrameOpener.open(anonDigest, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.unexpected))
        // A revoked sender is refused before its box is even opened.
        let (_, carolFrame) = (carol, FrameIdentity(deviceID: carol.deviceID, userIDHash: carol.userIDHash, box: carol.deviceBox))
        var carolSealer = FrameSealer(identity: carolFrame, session: Array(repeating: 7, count: 8), sessionStart: 14, maxFrameSize: 64 << 10)
        let carolFrameBytes = carolSealer.seal(message, to: alice.deviceID, boxKey: alice.deviceBox.publicKey, messageID: [])[0]
        XCTAssertEqual(FrameOpener.open(carolFrameBytes, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.revoked))
        // A real frame cut short: no key opens it; one cut to its header is truncated.
        XCTAssertEqual(FrameOpener.open(Array(frame.dropLast(3)), maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.unknownSender))
        XCTAssertEqual(FrameOpener.open(Array(frame.prefix(20)), maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2), .failure(.truncated))
        // Format 1 (an older device's frames) is still read, and still checked.
        let inner = InnerFrame(sender: bob.deviceID, userIDHash: bob.userIDHash, session: Array(repeating: 8, count: 8), sessionStart: 20,
                               sequence: 1, subKind: .stateDigest, payload: [4, 5])
        let v1 = Envelope(boxKind: .authenticated, recipient: alice.deviceID, claimedSender: bob.deviceID,
                          box: Box.seal(inner.encoded(), to: alice.deviceBox.publicKey, from: bob.deviceBox)).encoded()
        XCTAssertEqual(try FrameOpener.open(v1, maxSize: 64 << 10, me: aliceFrame, roster: roster, replay: &g2).get().payload, [4, 5])
        XCTAssertEqual(FrameOpener.open(v1, maxSize: 64 << 10, me: bobFrame, roster: roster, replay: &g2), .failure(.misaddressed))
    }

    func testReplayGuardWindowSessionsAndFloors() {
        var g = ReplayGuard()
        let d = ID16(bytes: Array(repeating: 9, count: 16))!
        let s1: [UInt8] = Array(repeating: 1, count: 8), s2: [UInt8] = Array(repeating: 2, count: 8)
        XCTAssertTrue(g.accept(sender: d, session: s1, start: 100, sequence: 5))
        XCTAssertTrue(g.accept(sender: d, session: s1, start: 100, sequence: 3))     // reordered: fine
        XCTAssertFalse(g.accept(sender: d, session: s1, start: 100, sequence: 3))    // again: replay
        XCTAssertTrue(g.accept(sender: d, session: s1, start: 100, sequence: 2000))
        XCTAssertFalse(g.accept(sender: d, session: s1, start: 100, sequence: 5))    // fell out of the window
        XCTAssertTrue(g.accept(sender: d, session: s1, start: 100, sequence: 1999))
        XCTAssertFalse(g.accept(sender: d, session: s2, start: 99, sequence: 1))     // an older session
        XCTAssertTrue(g.accept(sender: d, session: s2, start: 101, sequence: 1))     // a restart
        XCTAssertFalse(g.accept(sender: d, session: s1, start: 100, sequence: 3000)) // the old session is over
        var restored = ReplayGuard(floors: g.floors)
        XCTAssertFalse(restored.accept(sender: d, session: s1, start: 100, sequence: 9))
        // After our restart the sender's last session is closed (its window
        // was not kept: any frame of it could be a capture); its next is heard.
        XCTAssertFalse(restored.accept(sender: d, session: s2, start: 101, sequence: 2))
        XCTAssertFalse(restored.accept(sender: d, session: s2, start: 101, sequence: 2001))
        XCTAssertTrue(restored.accept(sender: d, session: s1, start: 102, sequence: 1))
    }

    func testChunksReassembleInAnyOrderWithinBounds() throws {
        let random = SeededRandom(seed: 7)
        let payload = random.bytes(300_000)
        let message = SyncMessage(subKind: .reconcileResponse, payload: payload)
        var chunks = Chunk.split(message, messageID: Array(repeating: 1, count: 8), room: 20_000)
        XCTAssertGreaterThan(chunks.count, 10)
        chunks += chunks.prefix(3)  // duplicates
        chunks.sort { _, _ in random.chance(0.5) }
        var assembler = ChunkAssembler()
        let sender = ID16(bytes: Array(repeating: 4, count: 16))!
        var result: SyncMessage?
        for c in chunks {
            let decoded = try XCTUnwrap(Chunk.decode(c.encoded()))
            if let m = assembler.add(decoded, from: sender, nowMs: 1) { XCTAssertNil(result); result = m }
        }
        XCTAssertEqual(result, message)
        XCTAssertEqual(assembler.bufferedBytes, 0)
        // An incomplete message expires and frees its memory.
        var other = chunks[0]
        other.messageID = Array(repeating: 2, count: 8)
        _ = assembler.add(other, from: sender, nowMs: 10)
        XCTAssertGreaterThan(assembler.bufferedBytes, 0)
        assembler.expire(nowMs: 10 + ChunkAssembler.timeoutMilliseconds + 1)
        XCTAssertEqual(assembler.bufferedBytes, 0)
        XCTAssertEqual(assembler.expired, 1)
        // Nonsense chunk fields are refused.
        XCTAssertNil(Chunk.decode(Chunk(messageID: [1], index: 0, count: 1, data: []).encoded()))
        XCTAssertNil(Chunk.decode(Chunk(messageID: Array(repeating: 0, count: 8), index: 5, count: 2, data: []).encoded()))
    }

    /// A partial message the link gives up is reported once, whether it
    /// expired while another chunk arrived or on the engine's timer.
    func testTheLinkReportsEachExpiredMessageOnce() throws {
        let (_, me) = identity(account: SigningKeyPair())
        var link = FrameLink(me: me, maxFrameSize: 64 << 10, statePath: nil, startedAt: Timestamp(seconds: 1), sessionID: [UInt8](repeating: 1, count: 8))
        let sender = ID16(bytes: Array(repeating: 4, count: 16))!
        let message = SyncMessage(subKind: .reconcileResponse, payload: SeededRandom(seed: 3).bytes(50_000))
        var first = Chunk.split(message, messageID: Array(repeating: 1, count: 8), room: 20_000)
        var second = first
        for i in second.indices { second[i].messageID = Array(repeating: 2, count: 8) }
        XCTAssertNil(link.reassemble(first.removeFirst(), from: sender, nowMs: 0).message)
        let later = ChunkAssembler.timeoutMilliseconds + 1
        XCTAssertEqual(link.expireChunks(nowMs: later), 1, "expired on the timer")
        XCTAssertEqual(link.expireChunks(nowMs: later + 1), 0, "and reported once")
        XCTAssertFalse(link.isReassembling)
        XCTAssertEqual(link.reassemble(second.removeFirst(), from: sender, nowMs: later).expired, 0)
        XCTAssertEqual(link.reassemble(first[0], from: sender, nowMs: 2 * later + 1).expired, 1, "expired as another chunk arrived")
        XCTAssertEqual(link.expireChunks(nowMs: 2 * later + 1), 0)
    }

    func testReconcileMessagesRoundTripAndSkipUnknownFields() throws {
        let key = ID16(bytes: Array(repeating: 0xAB, count: 16))!
        let prefix = KeyPrefix(nibbles: [1, 2, 3])!
        let summaries = (0..<16).map { RangeSummary(count: UInt64($0), hash: Array(repeating: UInt8($0), count: 8)) }
        let request = ReconcileRequest(namespace: .plans, session: Array(repeating: 1, count: 8), step: 3, generation: 2,
                                       items: [.children(prefix, summaries), .keys(.root, [KeyLeaf(key: key, leaf: Array(repeating: 5, count: 32))]),
                                               .probe(prefix.child(15)), .want([key]), .whole])
        XCTAssertEqual(try ReconcileRequest.decode(request.encoded()), request)
        let row = Row.single(.plans, key, dot: Dot(actor: Actor(device: key, incarnation: 1), counter: 2), context: VersionVector(),
                      content: .plan(Plan(title: "t", createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 2))))
        let response = ReconcileResponse(namespace: .plans, session: Array(repeating: 1, count: 8), step: 3,
                                         rows: [row, .tombstone(.plans, ID16(bytes: Array(repeating: 1, count: 16))!, context: VersionVector([Actor(device: key, incarnation: 1): 1]))],
                                         items: [.mismatch(prefix), .children(prefix, summaries), .keyList(prefix, [])], isTruncated: true)
        XCTAssertEqual(try ReconcileResponse.decode(response.encoded()), response)
        // The encoder counts the rows' bytes as it writes them (`rowBytesOut`),
        // and writes the one canonical encoding of the map.
        var flagged = response
        flagged.isRowsOnly = true
        flagged.generation = 7
        for r in [response, flagged] {
            let (bytes, rowBytes) = r.encodedCountingRows()
            XCTAssertEqual(rowBytes, r.rows.reduce(0) { $0 + CBORWriter.encode(RowWire.encode($1)).count })
            XCTAssertEqual(CBORWriter.encode(try CBORReader.decode(bytes)), bytes)
            XCTAssertEqual(try ReconcileResponse.decode(bytes), r)
            // The decoder measures the same bytes without encoding a row.
            let (decoded, received) = try ReconcileResponse.decodeCountingRows(bytes)
            XCTAssertEqual(decoded, r)
            XCTAssertEqual(received, rowBytes)
        }
        // A newer sibling's extra field and item kind are skipped, not fatal.
        guard case .map(var fields) = try CBORReader.decode(request.encoded()) else { return XCTFail() }
        fields.append((.unsigned(99), .text("from the future")))
        if let i = fields.firstIndex(where: { $0.0 == .unsigned(4) }), case .array(var items) = fields[i].1 {
            items.append(.array([.unsigned(77), .bytes([1, 2])]))
            fields[i].1 = .array(items)
        }
        let newer = try ReconcileRequest.decode(CBORWriter.encode(.map(fields)))
        XCTAssertEqual(newer.items, request.items)
        // Prefix bounds tile: a range's children cover exactly its keys.
        XCTAssertEqual(KeyPrefix.root.lowerBound, [])
        XCTAssertNil(KeyPrefix.root.upperBound)
        XCTAssertEqual(prefix.lowerBound, [0x12, 0x30])
        XCTAssertEqual(prefix.upperBound, [0x12, 0x40])
        XCTAssertNil(KeyPrefix(nibbles: [15, 15])!.upperBound)
        XCTAssertEqual(KeyPrefix(nibbles: [1, 15])!.upperBound, [0x20])
        XCTAssertThrowsError(try KeyPrefix.decode(level: .unsigned(1), packed: .bytes([0x1F])))
    }

    /// A catch-up's response holds hundreds of rows, decoded on several
    /// threads: they come out in the order sent, a damaged one among them
    /// is counted and left out, and the bytes counted are the good rows'.
    func testAResponseOfManyRowsDecodesInOrderAndCountsTheDamagedOnes() throws {
        let actor = Actor(device: ID16(bytes: Array(repeating: 0x42, count: 16))!, incarnation: 1)
        let rows = (0..<300).map { i -> Row in
            let key = ID16(bytes: Array(repeating: UInt8(i % 256), count: 15) + [UInt8(i / 256)])!
            let text = String(repeating: "paragraph \(i) of a note that is long enough to deflate\n\n", count: 4)
            return Row.single(.notebook, key, dot: Dot(actor: actor, counter: UInt64(i + 1)), context: VersionVector(),
                              content: .note(Note(title: "note \(i)", body: Array(text.utf8), createdAt: Timestamp(seconds: 1),
                                                  updatedAt: Timestamp(seconds: 2))))
        }
        let response = ReconcileResponse(namespace: .notebook, session: Array(repeating: 3, count: 8), step: 1, rows: rows,
                                         items: [], isTruncated: false)
        guard case .map(var fields) = try CBORReader.decode(response.encoded()),
              let i = fields.firstIndex(where: { $0.0 == .unsigned(4) }), case .array(var items) = fields[i].1 else { return XCTFail() }
        // Row 150's body no longer matches its hash: refused, the others kept.
        var changedBody = false
        func damage(_ value: CBOR) -> CBOR {
            switch value {
            case .bytes(var v) where !changedBody && v.count > 100:
                v[0] ^= 0x20
                changedBody = true
                return .bytes(v)
            case .array(let a): return .array(a.map(damage))
            case .map(let m): return .map(m.map { ($0.0, damage($0.1)) })
            default: return value
            }
        }
        items[150] = damage(items[150])
        XCTAssertTrue(changedBody, "the test found the body to damage")
        fields[i].1 = .array(items)
        let (decoded, rowBytes) = try ReconcileResponse.decodeCountingRows(CBORWriter.encode(.map(fields)))
        XCTAssertEqual(decoded.undecodableRows, 1)
        XCTAssertEqual(decoded.rows, Array(rows[..<150]) + Array(rows[151...]))
        XCTAssertEqual(rowBytes, decoded.rows.reduce(0) { $0 + CBORWriter.encode(RowWire.encode($1)).count })
    }

    /// A sibling's row whose context does not name one of its own heads by
    /// its tag is refused: joins with it would depend on the order rows meet.
    func testARowWhoseContextDoesNotNameItsHeadIsRefused() throws {
        let key = RowKey(bytes: [UInt8](repeating: 0x42, count: 16))!
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 3, count: 16))!, incarnation: 5)
        let good = Row.tombstone(.plans, key, context: VersionVector())
            .edited(by: actor, to: .plan(Plan(title: "named", createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        XCTAssertEqual(RowWire.decode(RowWire.encode(good), namespace: .plans), good)
        let head = good.heads[0]
        let otherTag = Row(namespace: .plans, key: key, context: VersionVector().adding(head.dot, tag: head.tag &+ 1), heads: [head])
        XCTAssertNil(RowWire.decode(RowWire.encode(otherTag), namespace: .plans))
        // Both tags named (a dot minted twice, one version kept here): accepted.
        let both = Row(namespace: .plans, key: key, context: good.context.adding(head.dot, tag: head.tag &+ 1), heads: [head])
        XCTAssertEqual(RowWire.decode(RowWire.encode(both), namespace: .plans), both)
    }

    func testRosterVerificationAndRevocation() throws {
        let account = SigningKeyPair()
        let (alice, _) = identity(account: account)
        let good = Row.single(.devices, alice.deviceID, dot: Dot(actor: Actor(device: alice.deviceID, incarnation: 1), counter: 1), context: VersionVector(),
                       content: .device(DeviceRecord(name: "alice", certificate: certificate(for: alice, name: "alice", at: Timestamp(seconds: 5)))))
        XCTAssertEqual(Roster.verify(good, accountKey: account.publicKey)?.name, "alice")
        XCTAssertNil(Roster.verify(good, accountKey: SigningKeyPair().publicKey), "another account's key")
        var wrongKey = good; wrongKey.key = ID16(bytes: Array(repeating: 0, count: 16))!
        XCTAssertNil(Roster.verify(wrongKey, accountKey: account.publicKey), "a certificate filed under another device id")
        let revocation = DeviceRevocation(deviceID: alice.deviceID, revokedAt: Timestamp(seconds: 9)).signed(by: account)
        let revoked = Row.single(.devices, alice.deviceID, dot: good.heads[0].dot, context: good.context,
                          content: .device(DeviceRecord(name: "alice", certificate: certificate(for: alice, name: "alice", at: Timestamp(seconds: 5)), revocation: revocation)))
        XCTAssertEqual(Roster.verify(revoked, accountKey: account.publicKey)?.revokedAt, Timestamp(seconds: 9))
        let forgedRevocation = DeviceRevocation(deviceID: alice.deviceID, revokedAt: Timestamp(seconds: 9)).signed(by: SigningKeyPair())
        let forged = Row.single(.devices, alice.deviceID, dot: good.heads[0].dot, context: good.context,
                         content: .device(DeviceRecord(name: "alice", certificate: certificate(for: alice, name: "alice", at: Timestamp(seconds: 5)), revocation: forgedRevocation)))
        XCTAssertNil(Roster.verify(forged, accountKey: account.publicKey))
    }

    func testInviteOpensOnlyWithItsPassphrase() throws {
        let base = makeShortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let home = DeviceHome(path: base + "/a")
        let (identity, store) = try home.create(name: "alpha")
        var prefs = try home.prefs.load()
        prefs.relay = "redis://127.0.0.1:1"
        prefs.cloud = "/tmp/cloud"
        let now = Timestamp(seconds: 1_800_000_000)
        let text = try Invite.make(identity: identity, store: store, prefs: prefs, passphrase: "correct horse", strength: .testing, now: now)
        XCTAssertTrue(text.hasPrefix(Invite.prefix))
        XCTAssertThrowsError(try Invite.open(text, passphrase: "wrong horse", now: now)) {
            XCTAssertTrue("\($0)".contains("passphrase does not open"))
        }
        XCTAssertThrowsError(try Invite.open(text, passphrase: "correct horse", now: Timestamp(seconds: now.seconds + Invite.lifetimeSeconds + 1))) {
            XCTAssertTrue("\($0)".contains("expired"))
        }
        var damaged = Array(text.utf8); damaged[damaged.count - 10] = damaged[damaged.count - 10] == 65 ? 66 : 65
        XCTAssertThrowsError(try Invite.open(String(decoding: damaged, as: UTF8.self), passphrase: "correct horse", now: now))
        XCTAssertThrowsError(try Invite.open("hello", passphrase: "correct horse", now: now)) { XCTAssertTrue("\($0)".contains("not a quire invite")) }
        XCTAssertThrowsError(try Invite.make(identity: identity, store: store, prefs: prefs, passphrase: "short", strength: .testing, now: now))
        let invite = try Invite.open(text, passphrase: "correct horse", now: now)
        XCTAssertEqual(invite.relay, "redis://127.0.0.1:1")
        XCTAssertEqual(invite.cloud, "/tmp/cloud")
        XCTAssertEqual(invite.roster.count, 2, "the first device's certificate and the invite's grant")
        XCTAssertThrowsError(try Invite.make(identity: identity, store: store, prefs: prefs, passphrase: "aaaaaaaaaaaaaaa", strength: .testing, now: now))
        XCTAssertThrowsError(try invite.join(home: DeviceHome(path: base + "/clash"), name: "alpha", role: .device, clock: SystemClock()))
        let (joined, joinedStore) = try invite.join(home: DeviceHome(path: base + "/b"), name: "beta", role: .device, clock: SystemClock())
        XCTAssertEqual(joined.userIDHash, identity.userIDHash)
        XCTAssertNotEqual(joined.deviceID, identity.deviceID)
        let (roster, invalid) = try Roster.load(from: joinedStore, accountKey: identity.account.publicKey)
        XCTAssertEqual(invalid, 0)
        XCTAssertEqual(Set(roster.members.values.map(\.name)), ["alpha"], "beta waits for a device of the account to admit it")
        XCTAssertFalse(joined.hasBackupKey)
        for file in ["account.key", "backup.key"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: base + "/b/keys/" + file), "an invite hands over no account secret: \(file)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: base + "/a/keys/account.key"), "no device keeps the account key")
        XCTAssertTrue(FileManager.default.fileExists(atPath: base + "/b/keys/enrolment"))
        XCTAssertEqual(try DeviceHome(path: base + "/b").prefs.load().relay, "redis://127.0.0.1:1")
    }
}
