/// Writes CBOR in RFC 8949 §4.2.1 deterministic ("core deterministic")
/// encoding: shortest-form heads, definite lengths only, map keys sorted by
/// the bytewise order of their encodings. One value has exactly one encoding,
/// which is what lets two devices produce byte-identical leaves.
public struct CBORWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    public static func encode(_ value: CBOR) -> [UInt8] {
        var w = CBORWriter()
        w.write(value)
        return w.bytes
    }

    /// The length of `value`'s encoding, without encoding it: for values
    /// decoded by `CBORReader` (which accepts only this encoding), the
    /// length of the bytes they came from.
    public static func encodedSize(of value: CBOR) -> Int {
        switch value {
        case .unsigned(let v), .negative(let v): return headSize(v)
        case .bytes(let b): return headSize(UInt64(b.count)) + b.count
        case .text(let s): return headSize(UInt64(s.utf8.count)) + s.utf8.count
        case .array(let items): return items.reduce(headSize(UInt64(items.count))) { $0 + encodedSize(of: $1) }
        case .map(let pairs): return pairs.reduce(headSize(UInt64(pairs.count))) { $0 + encodedSize(of: $1.0) + encodedSize(of: $1.1) }
        case .bool, .null: return 1
        }
    }

    /// The size of a shortest-form head (`head`) carrying `v`.
    private static func headSize(_ v: UInt64) -> Int {
        switch v {
        case 0..<24: return 1
        case 24...0xFF: return 2
        case 0x100...0xFFFF: return 3
        case 0x10000...0xFFFF_FFFF: return 5
        default: return 9
        }
    }

    public mutating func write(_ value: CBOR) {
        switch value {
        case .unsigned(let v): head(0, v)
        case .negative(let v): head(1, v)
        case .bytes(let b): writeBytes(b)
        case .text(let s): writeText(s)
        case .array(let items):
            head(4, UInt64(items.count))
            for item in items { write(item) }
        case .map(let pairs) where CBORWriter.hasAscendingSmallIntegerKeys(pairs):
            // Integer keys already in order encode in order: no sort needed.
            head(5, UInt64(pairs.count))
            for (k, v) in pairs { write(k); write(v) }
        case .map(let pairs):
            let encoded = pairs.map { (CBORWriter.encode($0.0), CBORWriter.encode($0.1)) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            head(5, UInt64(encoded.count))
            for (k, v) in encoded { bytes += k; bytes += v }
        case .bool(let b): bytes.append(b ? 0xF5 : 0xF4)
        case .null: bytes.append(0xF6)
        }
    }

    private static func hasAscendingSmallIntegerKeys(_ pairs: [(CBOR, CBOR)]) -> Bool {
        var previous: UInt64? = nil
        for (k, _) in pairs {
            // Below 2^64 the shortest-form encoding of unsigned integers sorts
            // bytewise exactly as the integers do.
            guard case .unsigned(let v) = k else { return false }
            if let previous, v <= previous { return false }
            previous = v
        }
        return true
    }

    // Streaming writers used by the leaf encoders, to avoid building a tree.

    public mutating func writeUInt(_ v: UInt64) { head(0, v) }

    public mutating func writeInt(_ v: Int64) {
        if v >= 0 { head(0, UInt64(v)) } else { head(1, UInt64(-1 - v)) }
    }

    public mutating func writeBytes<C: Collection>(_ b: C) where C.Element == UInt8 {
        head(2, UInt64(b.count))
        bytes.append(contentsOf: b)
    }

    public mutating func writeText(_ s: String) {
        let utf8 = s.utf8
        head(3, UInt64(utf8.count))
        // Native strings are contiguous: copy the bytes without iterating.
        if utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func writeArrayHeader(_ count: Int) { head(4, UInt64(count)) }

    /// A map header; the caller writes keys in canonical (sorted) order.
    public mutating func writeMapHeader(_ count: Int) { head(5, UInt64(count)) }

    /// Appends an already-encoded CBOR item (a stored field map).
    public mutating func writeEncoded(_ item: [UInt8]) { bytes += item }

    public mutating func writeBool(_ b: Bool) { bytes.append(b ? 0xF5 : 0xF4) }

    /// An optional with a presence marker: absent is an empty array (0x80),
    /// present is a one-element array (0x81 …). The head byte is the presence
    /// byte, so absent and empty ("" or []) can never encode the same.
    public mutating func writeOptional<T>(_ value: T?, _ body: (inout CBORWriter, T) -> Void) {
        if let value {
            writeArrayHeader(1)
            body(&self, value)
        } else {
            writeArrayHeader(0)
        }
    }

    private mutating func head(_ major: UInt8, _ v: UInt64) {
        let m = major << 5
        switch v {
        case 0..<24: bytes.append(m | UInt8(v))
        case 24...0xFF: bytes.append(m | 24); bytes.append(UInt8(v))
        case 0x100...0xFFFF:
            bytes.append(m | 25)
            bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xFF))
        case 0x10000...0xFFFF_FFFF:
            bytes.append(m | 26)
            for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(shift)) & 0xFF)) }
        default:
            bytes.append(m | 27)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(shift)) & 0xFF)) }
        }
    }
}
