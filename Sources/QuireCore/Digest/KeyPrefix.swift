/// A key range named by a prefix of nibbles: the range of every key that
/// starts with them. The root (no nibbles) is the whole key space; a
/// prefix's 16 children tile it exactly, so ranges always tile the key
/// space with no gaps (the first lower bound is empty, the last upper bound
/// open) and a key the requester has never seen still lands in some range.
/// The one model of key ranges: the store's fingerprint buckets are the
/// prefixes of the first few levels, and reconciliation speaks of nothing else.
public struct KeyPrefix: Hashable, Sendable, CustomStringConvertible {
    public static let maxLevel = 32
    public static let root = KeyPrefix(uncheckedNibbles: [])

    /// Each element 0...15.
    public let nibbles: [UInt8]

    init(uncheckedNibbles: [UInt8]) { self.nibbles = uncheckedNibbles }

    /// The prefix of `key` at `level` (its first `level` nibbles).
    public init(_ key: RowKey, level: Int) {
        precondition(level >= 0 && level <= KeyPrefix.maxLevel)
        nibbles = (0..<level).map { KeyPrefix.nibble(of: key, at: $0) }
    }

    /// The prefix of a bucket, from its stored level and packed value.
    public init?(level: Int, value: Int64) {
        guard level >= 0 && level <= 15 else { return nil }
        nibbles = (0..<level).map { UInt8((value >> Int64(4 * (level - 1 - $0))) & 0x0F) }
    }

    /// The nibbles as one integer (a bucket's stored prefix; levels up to 15).
    public var value: Int64 {
        precondition(level <= 15)
        return nibbles.reduce(Int64(0)) { $0 << 4 | Int64($1) }
    }

    /// The prefix one level up (the root is its own parent).
    public var parent: KeyPrefix { KeyPrefix(uncheckedNibbles: Array(nibbles.dropLast())) }

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

    public static func nibble(of key: RowKey, at index: Int) -> UInt8 {
        let byte = key.bytes[index / 2]
        return index % 2 == 0 ? byte >> 4 : byte & 0x0F
    }

    static func pack(_ nibbles: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (nibbles.count + 1) / 2)
        for (i, n) in nibbles.enumerated() { out[i / 2] |= i % 2 == 0 ? n << 4 : n }
        return out
    }

    public var description: String { nibbles.isEmpty ? "*" : nibbles.map { String($0, radix: 16) }.joined() + "*" }
}
