import QuireCore

/// A sync sub-kind: a short ASCII name inside the sealed box. Never a type
/// tag on the outside: every sync frame is one envelope type, so the parser
/// that runs on hostile bytes has one shape, and sub-kinds are parsed only
/// for frames that already proved they come from our own account.
public struct SubKind: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }

    public static let stateDigest = SubKind("state_digest")
    public static let reconcileRequest = SubKind("reconcile_req")
    public static let reconcileResponse = SubKind("reconcile_resp")
    /// A new device's certificate, sealed anonymously to each roster member.
    public static let introduce = SubKind("introduce")
    /// One piece of a message larger than the relay's frame limit.
    public static let chunk = SubKind("chunk")

    public static let known: Set<SubKind> = Set<SubKind>([.stateDigest, .reconcileRequest, .reconcileResponse, .introduce, .chunk])
        .union(SubKind.offloadKinds).union(SubKind.barrierKinds).union(SubKind.snapshotKinds)
        .union(SubKind.keyKinds)
    public var description: String { name }
}

/// The plaintext inside the box: a fixed binary header, then the payload.
///
///     sender device id (16) | sender userIDHash (32) |
///     session id (8) | session start (8, BE) | sequence (8, BE) |
///     sub-kind length (1) | sub-kind (ASCII) | payload (CBOR)
///
/// The header is fixed-width binary, not CBOR, so the account check
/// (`userIDHash`) happens before any variable-length parsing at all.
/// (session, start, sequence) feed the replay guard.
public struct InnerFrame: Equatable, Sendable {
    public static let fixedSize = 16 + 32 + 8 + 8 + 8 + 1

    public var sender: DeviceID
    public var userIDHash: [UInt8]
    public var session: [UInt8]
    public var sessionStart: UInt64
    public var sequence: UInt64
    public var subKind: SubKind
    public var payload: [UInt8]

    public init(sender: DeviceID, userIDHash: [UInt8], session: [UInt8], sessionStart: UInt64, sequence: UInt64,
                subKind: SubKind, payload: [UInt8]) {
        precondition(userIDHash.count == 32 && session.count == 8)
        precondition(!subKind.name.isEmpty && subKind.name.utf8.count < 64)
        self.sender = sender
        self.userIDHash = userIDHash
        self.session = session
        self.sessionStart = sessionStart
        self.sequence = sequence
        self.subKind = subKind
        self.payload = payload
    }

    public func encoded() -> [UInt8] {
        var out = sender.bytes + userIDHash + session
        out.reserveCapacity(InnerFrame.fixedSize + 32 + payload.count)
        appendBigEndian(sessionStart, to: &out)
        appendBigEndian(sequence, to: &out)
        let name = Array(subKind.name.utf8)
        out.append(UInt8(name.count))
        out += name
        out += payload
        return out
    }

    /// The header fields, parsed without looking at the sub-kind or payload.
    public struct Header: Sendable {
        public var sender: DeviceID
        public var userIDHash: [UInt8]
    }

    public static func parseHeader(_ bytes: [UInt8]) -> Header? {
        guard bytes.count >= fixedSize else { return nil }
        return Header(sender: ID16(bytes: Array(bytes[0..<16]))!, userIDHash: Array(bytes[16..<48]))
    }

    /// Parses everything; only called once the header passed the account check.
    public static func parse(_ bytes: [UInt8]) -> InnerFrame? {
        guard let header = parseHeader(bytes) else { return nil }
        let session = Array(bytes[48..<56])
        let start = readBigEndian(bytes, at: 56)
        let sequence = readBigEndian(bytes, at: 64)
        let nameLength = Int(bytes[72])
        guard nameLength > 0, nameLength < 64, bytes.count >= fixedSize + nameLength else { return nil }
        let nameBytes = bytes[fixedSize..<fixedSize + nameLength]
        // Printable ASCII only: a sub-kind is a name, never arbitrary text.
        guard nameBytes.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }) else { return nil }
        return InnerFrame(sender: header.sender, userIDHash: header.userIDHash, session: session, sessionStart: start,
                          sequence: sequence, subKind: SubKind(String(decoding: nameBytes, as: UTF8.self)),
                          payload: Array(bytes[(fixedSize + nameLength)...]))
    }
}

func appendBigEndian(_ v: UInt64, to out: inout [UInt8]) {
    for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((v >> UInt64(shift)) & 0xFF)) }
}

func readBigEndian(_ bytes: [UInt8], at offset: Int) -> UInt64 {
    var v: UInt64 = 0
    for b in bytes[offset..<offset + 8] { v = v << 8 | UInt64(b) }
    return v
}
