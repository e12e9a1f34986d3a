/// Reads CBOR from bytes that may be hostile. It refuses anything the writer
/// would not produce (non-shortest heads, indefinite lengths, floats, tags,
/// unsorted or duplicate map keys), bounds nesting depth and lengths, and
/// never reads past the input: a failure consumes nothing and says why.
public struct CBORReader: Sendable {
    public struct Limits: Sendable {
        public var maxDepth: Int
        public var maxItemLength: Int
        public init(maxDepth: Int = 32, maxItemLength: Int = 128 << 20) {
            self.maxDepth = maxDepth
            self.maxItemLength = maxItemLength
        }
    }

    private let input: [UInt8]
    private var position: Int
    private let limits: Limits

    public init(_ input: [UInt8], limits: Limits = Limits()) {
        self.input = input
        self.position = 0
        self.limits = limits
    }

    /// Decodes exactly one item that spans the whole input.
    public static func decode(_ input: [UInt8], limits: Limits = Limits()) throws(CBORError) -> CBOR {
        var r = CBORReader(input, limits: limits)
        let value = try r.readItem(depth: 0)
        if r.position != input.count { throw .trailingBytes(input.count - r.position) }
        return value
    }

    private mutating func byte() throws(CBORError) -> UInt8 {
        guard position < input.count else { throw .truncated }
        defer { position += 1 }
        return input[position]
    }

    private mutating func take(_ n: Int) throws(CBORError) -> ArraySlice<UInt8> {
        guard n >= 0, input.count - position >= n else { throw .truncated }
        defer { position += n }
        return input[position..<position + n]
    }

    private mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24: return UInt64(info)
        case 24:
            let v = UInt64(try byte())
            if v < 24 { throw .nonCanonical("one-byte argument below 24") }
            return v
        case 25, 26, 27:
            let n = 1 << Int(info - 24)
            var v: UInt64 = 0
            for b in try take(n) { v = (v << 8) | UInt64(b) }
            let floor: UInt64 = info == 25 ? 0x100 : info == 26 ? 0x10000 : 0x1_0000_0000
            if v < floor { throw .nonCanonical("argument not in shortest form") }
            return v
        case 31: throw .unsupported("indefinite length")
        default: throw .unsupported("reserved additional information \(info)")
        }
    }

    private mutating func length(_ info: UInt8) throws(CBORError) -> Int {
        let v = try argument(info)
        guard v <= UInt64(limits.maxItemLength) else { throw .tooLarge(Int(clamping: v)) }
        return Int(v)
    }

    private mutating func readItem(depth: Int) throws(CBORError) -> CBOR {
        guard depth <= limits.maxDepth else { throw .tooDeep }
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1F
        switch major {
        case 0: return .unsigned(try argument(info))
        case 1: return .negative(try argument(info))
        case 2: return .bytes(Array(try take(try length(info))))
        case 3:
            let raw = try take(try length(info))
            guard let s = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8 }
            return .text(s)
        case 4:
            let n = try length(info)
            // Each element takes at least one byte: refuse counts the input cannot hold.
            guard n <= input.count - position else { throw .truncated }
            var items: [CBOR] = []
            items.reserveCapacity(n)
            for _ in 0..<n { items.append(try readItem(depth: depth + 1)) }
            return .array(items)
        case 5:
            let n = try length(info)
            guard n <= (input.count - position) / 2 else { throw .truncated }
            var pairs: [(CBOR, CBOR)] = []
            var previousKey: ArraySlice<UInt8>? = nil
            for _ in 0..<n {
                let keyStart = position
                let key = try readItem(depth: depth + 1)
                let keyBytes = input[keyStart..<position]
                if let prev = previousKey, !prev.lexicographicallyPrecedes(keyBytes) {
                    throw .nonCanonical("map keys not in sorted order or duplicated")
                }
                previousKey = keyBytes
                pairs.append((key, try readItem(depth: depth + 1)))
            }
            return .map(pairs)
        case 6: throw .unsupported("tag")
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            default: throw .unsupported("simple value or float \(info)")
            }
        }
    }
}
