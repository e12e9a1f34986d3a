import QuireCore

/// The outer envelope every sync frame travels in: the only bytes a relay or
/// an eavesdropper sees. Fixed binary header, then a sealed box:
///
///     magic "QS" | format 1 | wake class | box kind |
///     recipient device id (16) | claimed sender device id (16) |
///     box length (4, big-endian) | box
///
/// The claimed sender only chooses which roster key to try: nothing in it
/// is trusted until the box opens with that key and the inner header names
/// the same sender and our account. Parsing is pure and total: any input
/// yields an envelope or a `FrameDrop` reason, never a crash.
public struct Envelope: Equatable, Sendable {
    public static let magic: [UInt8] = [0x51, 0x53]     // "QS"
    public static let formatVersion: UInt8 = 1
    public static let headerSize = 2 + 1 + 1 + 1 + 16 + 16 + 4

    /// How the box was sealed.
    public enum BoxKind: UInt8, Sendable {
        /// crypto_box from the sender's device key to the recipient's.
        case authenticated = 0
        /// crypto_box_seal with no sender key: only for `introduce`, sent
        /// by a device whose certificate the recipient may not hold yet.
        case anonymous = 1
    }

    /// A coarse hint for a relay that wakes devices; sync traffic is silent,
    /// so a digest, a pull and a row transfer all look alike from outside.
    public enum WakeClass: UInt8, Sendable { case silent = 0 }

    /// The raw wake byte: a class this build does not know is a newer
    /// sender's hint, kept as it came (and treated as silent).
    public var wakeByte: UInt8
    public var wake: WakeClass { WakeClass(rawValue: wakeByte) ?? .silent }
    public var boxKind: BoxKind
    public var recipient: DeviceID
    public var claimedSender: DeviceID
    public var box: [UInt8]

    public init(wake: WakeClass = .silent, boxKind: BoxKind, recipient: DeviceID, claimedSender: DeviceID, box: [UInt8]) {
        self.init(wakeByte: wake.rawValue, boxKind: boxKind, recipient: recipient, claimedSender: claimedSender, box: box)
    }

    init(wakeByte: UInt8, boxKind: BoxKind, recipient: DeviceID, claimedSender: DeviceID, box: [UInt8]) {
        self.wakeByte = wakeByte
        self.boxKind = boxKind
        self.recipient = recipient
        self.claimedSender = claimedSender
        self.box = box
    }

    public func encoded() -> [UInt8] {
        var out = Envelope.magic
        out.reserveCapacity(Envelope.headerSize + box.count)
        out.append(Envelope.formatVersion)
        out.append(wakeByte)
        out.append(boxKind.rawValue)
        out += recipient.bytes
        out += claimedSender.bytes
        let n = UInt32(box.count)
        out += [UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
        out += box
        return out
    }

    /// Parses the header of hostile bytes. `maxSize` is checked first, so an
    /// oversize frame costs nothing. A frame that ends before its declared
    /// box length is `truncated`; anything else that does not fit is
    /// `malformed` (random bytes land here).
    public static func parse(_ bytes: [UInt8], maxSize: Int) -> Result<Envelope, FrameDrop> {
        guard bytes.count <= maxSize else { return .failure(.oversize) }
        guard bytes.count >= 3 else {
            return .failure(!bytes.isEmpty && bytes.elementsEqual(magic.prefix(bytes.count)) ? .truncated : .malformed)
        }
        guard bytes[0] == magic[0], bytes[1] == magic[1] else { return .failure(.malformed) }
        guard bytes[2] == formatVersion else { return .failure(.unsupportedFormat) }
        guard bytes.count >= headerSize else { return .failure(.truncated) }
        guard let kind = BoxKind(rawValue: bytes[4]) else { return .failure(.malformed) }
        let recipient = ID16(bytes: Array(bytes[5..<21]))!
        let sender = ID16(bytes: Array(bytes[21..<37]))!
        let declared = Int(bytes[37]) << 24 | Int(bytes[38]) << 16 | Int(bytes[39]) << 8 | Int(bytes[40])
        let available = bytes.count - headerSize
        if available < declared { return .failure(.truncated) }
        if available > declared { return .failure(.malformed) }
        return .success(Envelope(wakeByte: bytes[3], boxKind: kind, recipient: recipient, claimedSender: sender,
                                 box: Array(bytes[headerSize...])))
    }
}

/// Why an incoming frame was dropped. Every reason is counted and shown in
/// `quire status`; none of them touches the replica.
public enum FrameDrop: String, CaseIterable, Sendable, Error, CustomStringConvertible {
    /// Larger than the relay's frame limit.
    case oversize
    /// Not an envelope at all (random bytes).
    case malformed
    /// An envelope cut short.
    case truncated
    /// An envelope format this build does not speak.
    case unsupportedFormat
    /// Addressed to another device.
    case misaddressed
    /// The claimed sender is not on our roster (another account, or a device
    /// whose certificate has not reached us yet).
    case unknownSender
    /// The claimed sender's certificate has been revoked.
    case revoked
    /// The box does not open with the claimed sender's key (forged or damaged).
    case unauthenticated
    /// Opened, but the sender's account is not ours.
    case otherAccount
    /// A frame seen before (or from an older session of its sender).
    case replay
    /// A sub-kind this build does not know: ignored so newer siblings can add some.
    case unknownSubKind
    /// Authenticated, but the payload does not decode.
    case badPayload
    /// A state digest of another wire version (an incompatible quire).
    case incompatibleVersion
    /// A roster row whose certificate does not verify against the account key.
    case uncertifiedRoster
    /// A request across a generation gap (the barrier will handle it).
    case generationGap
    /// Chunks that could not be reassembled in time or within memory bounds.
    case chunkExpired
    /// A row from a sibling larger than `RowLimits` allows: refused, the
    /// rest of its message applied (the sender names the row in its status).
    case rowOverLimit
    /// Our own echo, or an anonymous box carrying anything but `introduce`.
    case unexpected
    /// Arrived faster than the engine could process them; shed at the door.
    case backlog
    /// A barrier commit for a round this device did not ack, already
    /// committed (a replay), or whose digest is no longer this device's.
    case barrierRefused

    public var description: String {
        switch self {
        case .oversize: return "oversize"
        case .malformed: return "random bytes / not an envelope"
        case .truncated: return "truncated"
        case .unsupportedFormat: return "unsupported envelope format"
        case .misaddressed: return "addressed to another device"
        case .unknownSender: return "unknown sender (another account, or not yet introduced)"
        case .revoked: return "from a revoked device"
        case .barrierRefused: return "barrier commit refused (not acked here, a replay, or a moved digest)"
        case .unauthenticated: return "failed to authenticate"
        case .otherAccount: return "from another account"
        case .replay: return "replayed"
        case .unknownSubKind: return "unknown sub-kind"
        case .badPayload: return "undecodable payload"
        case .incompatibleVersion: return "incompatible digest version"
        case .uncertifiedRoster: return "uncertified roster row"
        case .generationGap: return "across a generation gap"
        case .chunkExpired: return "chunks expired or over budget"
        case .rowOverLimit: return "rows over the size limit (refused)"
        case .unexpected: return "unexpected"
        case .backlog: return "shed under backlog"
        }
    }
}
