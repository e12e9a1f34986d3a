import QuireCore

/// A key range named by a prefix of nibbles: the range of every key that
/// starts with them. The root (no nibbles) is the whole key space; a
/// prefix's 16 children tile it exactly, so ranges always tile the key
/// space with no gaps (the first lower bound is empty, the last upper bound
/// open) and a key the requester has never seen still lands in some range.
public struct KeyPrefix: Hashable, Sendable, CustomStringConvertible {
    public static let maxLevel = 32
    public static let root = KeyPrefix(uncheckedNibbles: [])

    /// Each element 0...15.
    public let nibbles: [UInt8]

    init(uncheckedNibbles: [UInt8]) { self.nibbles = uncheckedNibbles }

    public init?(nibbles: [UInt8]) {
        guard nibbles.count <= KeyPrefix.maxLevel, nibbles.allSatisfy({ $0 < 16 }) else { return nil }
        self.nibbles = nibbles
    }

    public var level: Int { nibbles.count }

    public func child(_ index: Int) -> KeyPrefix {
        precondition(index >= 0 && index < 16 && level < KeyPrefix.maxLevel)
        return KeyPrefix(uncheckedNibbles: nibbles + [UInt8(index)])
    }

    public var children: [KeyPrefix] { (0..<16).map(child) }

    /// Packed nibbles (high half first); the inclusive lower bound of the range.
    public var lowerBound: [UInt8] { KeyPrefix.pack(nibbles) }

    /// The exclusive upper bound, or nil at the top of the key space.
    public var upperBound: [UInt8]? {
        var n = nibbles
        while let last = n.last {
            if last < 15 { n[n.count - 1] = last + 1; return KeyPrefix.pack(n) }
            n.removeLast()
        }
        return nil
    }

    public func contains(_ key: RowKey) -> Bool {
        for (i, nibble) in nibbles.enumerated() where KeyPrefix.nibble(of: key, at: i) != nibble { return false }
        return true
    }

    /// Which child of this prefix `key` falls in.
    public func childIndex(of key: RowKey) -> Int { Int(KeyPrefix.nibble(of: key, at: level)) }

    static func nibble(of key: RowKey, at index: Int) -> UInt8 {
        let byte = key.bytes[index / 2]
        return index % 2 == 0 ? byte >> 4 : byte & 0x0F
    }

    static func pack(_ nibbles: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (nibbles.count + 1) / 2)
        for (i, n) in nibbles.enumerated() { out[i / 2] |= i % 2 == 0 ? n << 4 : n }
        return out
    }

    /// Wire form: [level, packed nibbles].
    var cbor: [CBOR] { [.unsigned(UInt64(level)), .bytes(lowerBound)] }

    static func decode(level: CBOR, packed: CBOR) throws(CBORError) -> KeyPrefix {
        let l = try level.asUInt()
        let bytes = try packed.asBytes()
        guard l <= UInt64(maxLevel), bytes.count == (Int(l) + 1) / 2 else { throw .invalidValue("key prefix") }
        var nibbles: [UInt8] = []
        for i in 0..<Int(l) { nibbles.append(i % 2 == 0 ? bytes[i / 2] >> 4 : bytes[i / 2] & 0x0F) }
        // The unused low half of an odd-length prefix must be zero: one range, one encoding.
        if l % 2 == 1, bytes.last! & 0x0F != 0 { throw .invalidValue("key prefix padding") }
        return KeyPrefix(uncheckedNibbles: nibbles)
    }

    public var description: String { nibbles.isEmpty ? "*" : nibbles.map { String($0, radix: 16) }.joined() + "*" }
}
