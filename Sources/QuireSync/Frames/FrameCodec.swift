import QuireCore
import QuireCrypto

/// Who we are, as the frame layer needs it.
public struct FrameIdentity: Sendable {
    public let deviceID: DeviceID
    public let userIDHash: [UInt8]
    public let box: BoxKeyPair

    public init(deviceID: DeviceID, userIDHash: [UInt8], box: BoxKeyPair) {
        self.deviceID = deviceID
        self.userIDHash = userIDHash
        self.box = box
    }
}

/// Seals outgoing messages: numbers frames within this session and splits
/// messages that do not fit the relay into individually sealed chunks.
public struct FrameSealer: Sendable {
    public let identity: FrameIdentity
    public let session: [UInt8]
    public let sessionStart: UInt64
    public private(set) var sequence: UInt64 = 0
    /// The largest frame the relay carries.
    public let maxFrameSize: Int

    /// Envelope header, box overhead, padding length, inner header and a sub-kind name.
    public static let overhead = OpaqueEnvelope.headerSize + max(Box.overhead, Box.anonymousOverhead) + OpaqueEnvelope.lengthSize
        + InnerFrame.fixedSize + 24

    public init(identity: FrameIdentity, session: [UInt8], sessionStart: UInt64, maxFrameSize: Int) {
        self.identity = identity
        self.session = session
        self.sessionStart = sessionStart
        self.maxFrameSize = maxFrameSize
    }

    /// The frames that carry `message` to `recipient`: one, or several
    /// chunks if it is larger than a frame. `messageID` names the chunks.
    public mutating func seal(_ message: SyncMessage, to recipient: DeviceID, boxKey: BoxPublicKey,
                              messageID: @autoclosure () -> [UInt8]) -> [[UInt8]] {
        let room = maxFrameSize - FrameSealer.overhead
        let chunkRoom = FrameSealer.chunkRoom(payload: message.payload.count, maxFrameSize: maxFrameSize)
        if chunkRoom == nil && message.payload.count <= room {
            return [sealOne(message.subKind, message.payload, to: recipient, boxKey: boxKey)]
        }
        return Chunk.split(message, messageID: messageID(), room: chunkRoom ?? room).map {
            sealOne(.chunk, $0.encoded(), to: recipient, boxKey: boxKey)
        }
    }

    /// The chunk size for a message that would leave most of its frames'
    /// buckets padding: a 20 KiB message goes as two 16 KiB frames rather
    /// than one of 64 KiB. nil: the largest frames (or one frame) cost the
    /// fewest bytes on the wire. Messages larger than a few frames pad only
    /// their last one and keep the largest.
    static func chunkRoom(payload: Int, maxFrameSize: Int) -> Int? {
        let chunkFields = 32   // `Chunk.split`'s allowance for the chunk map
        let wrapped = payload + 32   // the sub-kind name chunks carry the payload with
        func bucket(_ bytes: Int) -> Int { min(OpaqueEnvelope.buckets.first { $0 >= bytes } ?? maxFrameSize, maxFrameSize) }
        func chunked(_ frame: Int) -> Int? {
            let piece = frame - overhead - chunkFields
            guard piece >= 256 else { return nil }
            let count = (wrapped + piece - 1) / piece
            let last = wrapped - (count - 1) * piece
            return (count - 1) * frame + bucket(last + overhead + chunkFields)
        }
        let room = maxFrameSize - overhead
        guard payload <= 4 * room else { return nil }
        var best = payload <= room ? bucket(payload + overhead) : chunked(maxFrameSize) ?? Int.max
        var choice: Int?
        for frame in OpaqueEnvelope.buckets where frame < maxFrameSize {
            // Worth more frames only for a real saving (each costs a send).
            if let bytes = chunked(frame), bytes * 8 < best * 7 {
                best = bytes
                choice = frame - overhead
            }
        }
        return choice
    }

    /// A frame sealed anonymously (only `introduce` travels this way).
    public mutating func sealAnonymously(_ message: SyncMessage, to recipient: DeviceID, boxKey: BoxPublicKey) -> [UInt8] {
        let inner = nextInner(message.subKind, message.payload)
        return OpaqueEnvelope.make(inner: inner.encoded(), boxOverhead: Box.anonymousOverhead, maxFrameSize: maxFrameSize) {
            Box.sealAnonymously($0, to: boxKey)
        }
    }

    private mutating func sealOne(_ subKind: SubKind, _ payload: [UInt8], to recipient: DeviceID, boxKey: BoxPublicKey) -> [UInt8] {
        let inner = nextInner(subKind, payload)
        let box = identity.box
        return OpaqueEnvelope.make(inner: inner.encoded(), boxOverhead: Box.overhead, maxFrameSize: maxFrameSize) {
            Box.seal($0, to: boxKey, from: box)
        }
    }

    private mutating func nextInner(_ subKind: SubKind, _ payload: [UInt8]) -> InnerFrame {
        sequence += 1
        return InnerFrame(sender: identity.deviceID, userIDHash: identity.userIDHash, session: session,
                          sessionStart: sessionStart, sequence: sequence, subKind: subKind, payload: payload)
    }
}

/// Opens an incoming frame, in exactly this order, stopping at the first
/// failure: size limit → envelope parse → (format 2) the box opens with a
/// trusted device's key, else anonymously, else it is counted as a revoked
/// device's or an unknown sender's; (format 1, still read) addressed to us
/// → the claimed sender's roster key (unknown, revoked) → open the box →
/// then, for both: inner sender is the one whose key opened it →
/// `userIDHash` is ours → replay → only then the sub-kind. Nothing before
/// the account check parses anything of variable shape.
public enum FrameOpener {
    public static func open(_ bytes: [UInt8], maxSize: Int, me: FrameIdentity, roster: Roster,
                            replay: inout ReplayGuard) -> Result<InnerFrame, FrameDrop> {
        guard bytes.count <= maxSize else { return .failure(.oversize) }
        let claimedSender: DeviceID?
        let boxKind: Envelope.BoxKind
        let plain: [UInt8]
        if OpaqueEnvelope.isOpaque(bytes) {
            switch OpaqueEnvelope.open(bytes, me: me, roster: roster) {
            case .failure(let drop): return .failure(drop)
            case .success(let opened): (claimedSender, boxKind, plain) = opened
            }
        } else {
            let envelope: Envelope
            switch Envelope.parse(bytes, maxSize: maxSize) {
            case .failure(let drop): return .failure(drop)
            case .success(let e): envelope = e
            }
            guard envelope.recipient == me.deviceID else { return .failure(.misaddressed) }
            guard envelope.claimedSender != me.deviceID else { return .failure(.unexpected) }
            boxKind = envelope.boxKind
            claimedSender = envelope.claimedSender
            switch envelope.boxKind {
            case .authenticated:
                guard let member = roster[envelope.claimedSender] else { return .failure(.unknownSender) }
                guard !member.isRevoked else { return .failure(.revoked) }
                guard let opened = try? Box.open(envelope.box, from: member.boxKey, to: me.box) else { return .failure(.unauthenticated) }
                plain = opened
            case .anonymous:
                // A revoked device may not re-introduce itself either.
                if roster[envelope.claimedSender]?.isRevoked == true { return .failure(.revoked) }
                guard let opened = try? Box.openAnonymous(envelope.box, to: me.box) else { return .failure(.unauthenticated) }
                plain = opened
            }
        }
        guard let header = InnerFrame.parseHeader(plain) else { return .failure(.badPayload) }
        if let claimedSender {
            guard header.sender == claimedSender else { return .failure(.unauthenticated) }
        } else {
            // Format 2, anonymous: the inner header is all that names the sender.
            guard header.sender != me.deviceID else { return .failure(.unexpected) }
            if roster[header.sender]?.isRevoked == true { return .failure(.revoked) }
        }
        guard header.userIDHash == me.userIDHash else { return .failure(.otherAccount) }
        guard let inner = InnerFrame.parse(plain) else { return .failure(.badPayload) }
        if boxKind == .anonymous {
            guard inner.subKind == .introduce else { return .failure(.unexpected) }
            // An anonymous box proves nothing about its sender: anyone who
            // knows our userIDHash (a revoked device does) can claim a live
            // sibling's id. Letting it into the replay guard would let a
            // forged session start poison that sibling's window (its real
            // frames refused as replays, the floor persisted) and let made-up
            // ids grow the guard without bound. `introduce` is idempotent and
            // its row must verify against the account key, so it needs none.
            return .success(inner)
        }
        guard replay.accept(sender: inner.sender, session: inner.session, start: inner.sessionStart, sequence: inner.sequence) else {
            return .failure(.replay)
        }
        return .success(inner)
    }
}
