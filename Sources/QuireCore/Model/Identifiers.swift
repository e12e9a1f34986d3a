import QuireCrypto

/// A fixed 16-byte identifier. Row keys, device ids and event ids are all
/// this shape; ordering is bytewise, which is also the key-space order that
/// fingerprint ranges tile.
public struct ID16: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public init?(hex: String) {
        guard let b = Hex.decode(hex), b.count == 16 else { return nil }
        self.bytes = b
    }

    /// A fresh random identifier from the given source.
    public static func random(using source: some RandomSource) -> ID16 {
        ID16(bytes: source.bytes(16))!
    }

    /// A stable identifier derived from a name, so two devices that create
    /// "the same" row independently (a journal day, a settings key) collide
    /// on purpose and merge instead of duplicating.
    public static func derived(separator: String, name: String) -> ID16 {
        ID16(bytes: Array(SHA256.hash(separator: separator, Array(name.utf8)).prefix(16)))!
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }

    /// The identifier in the 8-4-4-4-12 form of a UUID: the UID a card
    /// without one is given from its row key.
    public var uuidText: String {
        let h = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(h[$0]) }.joined(separator: "-")
    }

    public static func < (lhs: ID16, rhs: ID16) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}

/// The stable cross-device key of a row: 16 bytes, never a local row id.
public typealias RowKey = ID16
/// A device's identity in version vectors: the first 16 bytes of the
/// SHA-256 of its Ed25519 signing key, so it cannot be chosen freely.
public typealias DeviceID = ID16

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = digitValue(chars[i]), let lo = digitValue(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// The value of one hex digit (either case), or nil.
    public static func digitValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
