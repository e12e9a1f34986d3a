import Foundation
import QuireCore
import QuireCrypto
import QuireStore

// libFuzzer entry for FrameOpener.open with real keys (Sources/QuireSync/
// Frames/FrameCodec.swift and OpaqueEnvelope.swift): the ordered checks on
// hostile bytes, a trusted sibling's real frames with bytes changed, and
// multi-chunk messages through the chunk assembler in any order. The first
// byte % 3 picks:
//   0: the bytes as a frame from the relay;
//   1: a real frame from trusted Bob carrying the input, then a byte
//      changed at a position the input picks (unchanged: it must open
//      whole; changed: it must not open as anything else);
//   2: the input split into chunks, delivered in an order and with
//      duplicates the input picks: what reassembles is the message.
// Built and run by tools/fuzz/run.

private func keys(_ n: UInt8) -> (Identity, FrameIdentity) {
    let id = Identity(account: try! SigningKeyPair(seed: SecretBytes(copying: [UInt8](repeating: 1, count: 32))),
                      deviceSigning: try! SigningKeyPair(seed: SecretBytes(copying: [UInt8](repeating: n, count: 32))),
                      deviceBox: try! BoxKeyPair(seed: SecretBytes(copying: [UInt8](repeating: n &+ 100, count: 32))),
                      backupKey: SecretBytes(copying: [UInt8](repeating: 9, count: 32)))
    return (id, FrameIdentity(deviceID: id.deviceID, userIDHash: id.userIDHash, box: id.deviceBox))
}

private let (alice, aliceFrame) = keys(2)
private let (bob, bobFrame) = keys(3)
private let (carol, _) = keys(4)
private let roster = Roster(members: [
    alice.deviceID: member(alice, revoked: false), bob.deviceID: member(bob, revoked: false), carol.deviceID: member(carol, revoked: true),
])
private let maxFrame = 64 << 10

private func member(_ id: Identity, revoked: Bool) -> RosterMember {
    RosterMember(deviceID: id.deviceID, name: "m", boxKey: id.deviceBox.publicKey, signingKey: id.deviceSigning.publicKey.bytes,
                 role: "device", issuedAt: Timestamp(seconds: 1), revokedAt: revoked ? Timestamp(seconds: 2) : nil)
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    writeSeeds {
        var sealer = FrameSealer(identity: bobFrame, session: [1, 1, 1, 1, 1, 1, 1, 1], sessionStart: 5, maxFrameSize: maxFrame)
        let frame = sealer.seal(SyncMessage(subKind: .stateDigest, payload: [1, 2, 3]), to: alice.deviceID, boxKey: alice.deviceBox.publicKey,
                                messageID: [0, 0, 0, 0, 0, 0, 0, 1])[0]
        return [[0] + frame, [1, 0, 0] + Array("a payload".utf8), [2, 3, 1, 0, 2] + [UInt8](repeating: 7, count: 3000)]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 3 {
    case 0:
        var replay = ReplayGuard()
        if case .success(let inner) = FrameOpener.open(input, maxSize: maxFrame, me: aliceFrame, roster: roster, replay: &replay) {
            check(inner.userIDHash == alice.userIDHash, "an opened frame is of our account")
            check(inner.sender == bob.deviceID || inner.subKind == .introduce, "only a trusted sibling's frame opens, or an introduction")
            check(inner.sender != carol.deviceID && inner.sender != alice.deviceID, "never a revoked device's frame, never our own")
        }
    case 1:
        guard input.count >= 3 else { return 0 }
        let position = Int(input[0]) << 8 | Int(input[1]), flip = input[2]
        var sealer = FrameSealer(identity: bobFrame, session: [2, 2, 2, 2, 2, 2, 2, 2], sessionStart: 6, maxFrameSize: maxFrame)
        let payload = Array(input.dropFirst(3).prefix(4000))
        // A message that would leave most of a large bucket padding goes
        // as several chunk frames: they open, and reassemble, to it whole.
        let frames = sealer.seal(SyncMessage(subKind: .stateDigest, payload: payload), to: alice.deviceID, boxKey: alice.deviceBox.publicKey,
                                 messageID: [0, 0, 0, 0, 0, 0, 0, 2])
        var frame = frames[0]
        var replay = ReplayGuard()
        if flip == 0 {
            var assembler = ChunkAssembler()
            var whole: SyncMessage?
            for piece in frames {
                guard case .success(let inner) = FrameOpener.open(piece, maxSize: maxFrame, me: aliceFrame, roster: roster, replay: &replay) else {
                    check(false, "a real frame opens")
                    return 0
                }
                if inner.subKind == .chunk, let chunk = Chunk.decode(inner.payload) {
                    whole = assembler.add(chunk, from: bob.deviceID, nowMs: 1) ?? whole
                } else {
                    whole = SyncMessage(subKind: inner.subKind, payload: inner.payload)
                }
            }
            check(whole?.subKind == .stateDigest && whole?.payload == payload, "a real message opens whole")
        } else {
            frame[position % frame.count] ^= flip
            if case .success = FrameOpener.open(frame, maxSize: maxFrame, me: aliceFrame, roster: roster, replay: &replay) {
                check(false, "a frame with a changed byte opened")
            }
        }
    default:
        guard input.count >= 2 else { return 0 }
        let room = 64 + Int(input[0]) * 4, order = input[1]
        let message = SyncMessage(subKind: .reconcileResponse, payload: Array(input.dropFirst(2)))
        let chunks = Chunk.split(message, messageID: [3, 3, 3, 3, 3, 3, 3, 3], room: room)
        var delivery = chunks
        if order & 1 != 0 { delivery.reverse() }
        if order & 2 != 0, let first = delivery.first { delivery.append(first) }   // a duplicate
        if order & 4 != 0, delivery.count > 2 { delivery.swapAt(0, delivery.count / 2) }
        var assembler = ChunkAssembler()
        var whole: [SyncMessage] = []
        for chunk in delivery {
            if let done = assembler.add(chunk, from: bob.deviceID, nowMs: 1) { whole.append(done) }
        }
        if chunks.count > 1 || !whole.isEmpty {
            check(whole.first == message, "chunks in any order reassemble the message (\(chunks.count) chunks)")
            check(whole.count <= 1, "a message reassembles once")
        }
    }
    return 0
}
