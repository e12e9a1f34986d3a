import Foundation
import QuireCore
import QuireCrypto

// libFuzzer entry for the decoders that run on bytes from the network:
// the envelope, the inner frame header, chunks, every sync message, CBOR
// and the state digest. The first byte picks the decoder. Beyond "never
// crash", it checks what must hold for accepted input: CBOR and messages
// re-encode to exactly what was accepted (one value, one encoding).
// Built and run by tools/fuzz/run.

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    writeSeeds { FuzzSeeds.all() }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch selector % 12 {
    case 0:
        if case .success(let e) = Envelope.parse(input, maxSize: 1 << 20) { check(e.encoded() == input, "envelope round trip") }
    case 1:
        if let f = InnerFrame.parse(input) { check(f.encoded() == input, "inner frame round trip") }
    case 2:
        if let c = Chunk.decode(input) { check(Chunk.decode(c.encoded()) == c, "chunk round trip") }
    case 3:
        if let r = try? ReconcileRequest.decode(input) { check((try? ReconcileRequest.decode(r.encoded())) == r, "request round trip") }
    case 4:
        if let r = try? ReconcileResponse.decode(input) { check((try? ReconcileResponse.decode(r.encoded()))?.rows == r.rows, "response round trip") }
    case 5:
        if let m = try? DigestMessage.decode(input) {
            check((try? DigestMessage.decode(m.encoded())) == m, "digest message round trip")
            if let d = try? StateDigest(decoding: m.digest) { check(d.encoded() == m.digest, "digest round trip") }
        }
    case 6:
        _ = try? IntroduceMessage.decode(input)
    case 7:
        if let value = try? CBORReader.decode(input) { check(CBORWriter.encode(value) == input, "CBOR is canonical") }
    case 8:
        // Offload and recall messages (bodies from a homebase are hostile too):
        // what decodes re-encodes to a message that decodes the same.
        if let m = try? OffloadPut.decode(input) { check((try? OffloadPut.decode(m.encoded())) == m, "offload put round trip") }
        if let m = try? OffloadAck.decode(input) { check((try? OffloadAck.decode(m.encoded())) == m, "offload ack round trip") }
        if let m = try? RecallRequest.decode(input) { check((try? RecallRequest.decode(m.encoded())) == m, "recall request round trip") }
        if let m = try? RecallResponse.decode(input) { check((try? RecallResponse.decode(m.encoded())) == m, "recall response round trip") }
        if let m = try? HoldQuery.decode(input) { check((try? HoldQuery.decode(m.encoded())) == m, "hold query round trip") }
        if let m = try? HoldAnswer.decode(input) { check((try? HoldAnswer.decode(m.encoded())) == m, "hold answer round trip") }
        if let m = try? HoldRelease.decode(input) { check((try? HoldRelease.decode(m.encoded())) == m, "hold release round trip") }
    case 10:
        // The barrier and the sibling snapshot.
        if let m = try? BarrierPropose.decode(input) { check((try? BarrierPropose.decode(m.encoded())) == m, "propose round trip") }
        if let m = try? BarrierAck.decode(input) { check((try? BarrierAck.decode(m.encoded())) == m, "ack round trip") }
        if let m = try? BarrierCommit.decode(input) { check((try? BarrierCommit.decode(m.encoded())) == m, "commit round trip") }
        if let m = try? BarrierCollected.decode(input) { check((try? BarrierCollected.decode(m.encoded())) == m, "collected round trip") }
        if let m = try? BarrierCollectedRequest.decode(input) { check((try? BarrierCollectedRequest.decode(m.encoded())) == m, "collected request round trip") }
        _ = try? SnapshotRequest.decode(input)
        if let m = try? KeyRequest.decode(input) { check((try? KeyRequest.decode(m.encoded()))?.ids == m.ids, "key request round trip") }
        if let m = try? SnapshotResponse.decode(input) { check((try? SnapshotResponse.decode(m.encoded()))?.rows == m.rows, "snapshot round trip") }
    case 11:
        // The cloud anchor: a file anyone with the folder can alter.
        if let h = try? AnchorHeader(decoding: input) { check((try? AnchorHeader(decoding: h.encoded())) == h, "anchor header round trip") }
        if let s = try? AnchorSnapshot(decoding: input) { check((try? AnchorSnapshot(decoding: s.encoded()))?.rows == s.rows, "snapshot round trip") }
    default:
        _ = SyncMessage.decodeFromChunks(input)
        var assembler = ChunkAssembler()
        if let c = Chunk.decode(input) { _ = assembler.add(c, from: ID16(bytes: Array(repeating: 0, count: 16))!, nowMs: 0) }
    }
    return 0
}

enum FuzzSeeds {
    static func all() -> [[UInt8]] {
        let key = ID16(bytes: Array(repeating: 0x42, count: 16))!
        let prefix = KeyPrefix(nibbles: [1, 2])!
        let summaries = (0..<16).map { RangeSummary(count: UInt64($0 * 3), hash: Array(repeating: UInt8($0), count: 8)) }
        let request = ReconcileRequest(namespace: .notebook, session: Array(repeating: 7, count: 8), step: 1, generation: 0,
                                       items: [.children(prefix, summaries), .keys(.root, [KeyLeaf(key: key, leaf: Array(repeating: 1, count: 32))]),
                                               .probe(prefix), .want([key]), .whole])
        let note = Row.single(.notebook, key, dot: Dot(actor: Actor(device: key, incarnation: 1), counter: 3), context: VersionVector(),
                       content: .note(Note(title: "t", tags: ["a"], body: Array("body".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 2))))
        let response = ReconcileResponse(namespace: .notebook, session: Array(repeating: 7, count: 8), step: 1,
                                         rows: [note, .tombstone(.notebook, key, context: VersionVector([Actor(device: key, incarnation: 1): 4]))],
                                         items: [.mismatch(prefix), .children(prefix, summaries), .keyList(prefix, [])], isTruncated: false)
        var roots: [Namespace: [UInt8]] = [:]
        for ns in Namespace.allCases { roots[ns] = Array(repeating: ns.rawValue, count: 32) }
        let digest = DigestMessage(digest: StateDigest(roots: roots, generation: 5).encoded(), echo: Array(repeating: 9, count: 8),
                                   round: Array(repeating: 7, count: 16))
        let inner = InnerFrame(sender: key, userIDHash: Array(repeating: 3, count: 32), session: Array(repeating: 1, count: 8),
                               sessionStart: 99, sequence: 1, subKind: .stateDigest, payload: digest.encoded())
        let envelope = Envelope(boxKind: .authenticated, recipient: key, claimedSender: key, box: Array(repeating: 5, count: 80))
        let chunk = Chunk(messageID: Array(repeating: 2, count: 8), index: 0, count: 1,
                          data: SyncMessage(subKind: .reconcileRequest, payload: request.encoded()).encodedForChunks())
        let nonce = [UInt8](repeating: 4, count: 16)
        let hash = [UInt8](repeating: 0xCA, count: 32)
        let snapshot = AnchorSnapshot(generation: 3, rows: [note], graveyardSince: 2, round: Array(repeating: 8, count: 16))
        let header = AnchorHeader(generation: 3, accountID: Array(repeating: 6, count: 32), writtenAt: Timestamp(seconds: 9))
        let rotated = AnchorHeader(generation: 4, accountID: Array(repeating: 6, count: 32), writtenAt: Timestamp(seconds: 9), keySet: [key],
                                   sealedForAccount: Array(repeating: 8, count: 90))
        let formatOne = AnchorHeader(generation: 2, accountID: Array(repeating: 6, count: 32), writtenAt: Timestamp(seconds: 9), format: 1)
        return [[0] + envelope.encoded(), [1] + inner.encoded(), [2] + chunk.encoded(), [3] + request.encoded(),
                [4] + response.encoded(), [5] + digest.encoded(), [7] + request.encoded(), [8] + chunk.data,
                [10] + BarrierPropose(nonce: nonce, digest: digest.digest).encoded(),
                [10] + BarrierCommit(nonce: nonce, digest: digest.digest, generation: 4).encoded(),
                [10] + SnapshotResponse(generation: 3, namespace: .notebook, part: 0, parts: 7, rows: [note], graveyardSince: 2,
                                        round: nonce).encoded(),
                [10] + BarrierCollected(nonce: nonce, tombstones: [CollectedTombstone(namespace: .notebook, key: key, context: note.context)]).encoded(),
                [10] + BarrierCollectedRequest(nonce: nonce).encoded(),
                [10] + KeyRequest(ids: [key]).encoded(),
                [11] + header.encoded(), [11] + rotated.encoded(), [11] + formatOne.encoded(), [11] + snapshot.encoded(),
                [8] + OffloadPut(opID: Array(repeating: 1, count: 16), contentHash: hash, key: key, body: Array("a body\n".utf8)).encoded(),
                [8] + OffloadAck(opID: Array(repeating: 1, count: 16), contentHash: hash, refusal: "disk full").encoded(),
                [8] + RecallRequest(contentHash: hash, key: nil).encoded(),
                [8] + RecallResponse(contentHash: hash, body: Array("a body\n".utf8)).encoded(),
                [8] + HoldQuery(queryID: Array(repeating: 2, count: 8), items: [.init(contentHash: hash, key: key)]).encoded(),
                [8] + HoldAnswer(queryID: Array(repeating: 2, count: 8), held: [hash], isHomebase: true).encoded()]
    }
}
