/// A decoded CBOR data item (RFC 8949), limited to what Quire uses:
/// unsigned and negative integers, byte and text strings, arrays, maps,
/// booleans and null. Floats, tags and indefinite lengths are refused:
/// they have no deterministic encoding we would ever produce.
public enum CBOR: Equatable, Hashable, Sendable {
    case unsigned(UInt64)
    case negative(UInt64)          // the value is -1 - n
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([(CBOR, CBOR)])
    case bool(Bool)
    case null

    public static func == (lhs: CBOR, rhs: CBOR) -> Bool {
        switch (lhs, rhs) {
        case let (.unsigned(a), .unsigned(b)): return a == b
        case let (.negative(a), .negative(b)): return a == b
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.text(a), .text(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.map(a), .map(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.bool(a), .bool(b)): return a == b
        case (.null, .null): return true
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(CBORWriter.encode(self))
    }

    /// An integer value, from either sign.
    public static func int(_ v: Int64) -> CBOR {
        v >= 0 ? .unsigned(UInt64(v)) : .negative(UInt64(-1 - v))
    }
}

// MARK: - Typed access used by decoders (all throw CBORError on a mismatch).

extension CBOR {
    public func asUInt() throws(CBORError) -> UInt64 {
        guard case .unsigned(let v) = self else { throw .typeMismatch(expected: "unsigned integer", found: kindName) }
        return v
    }

    public func asInt() throws(CBORError) -> Int64 {
        switch self {
        case .unsigned(let v) where v <= UInt64(Int64.max): return Int64(v)
        case .negative(let v) where v <= UInt64(Int64.max): return -1 - Int64(v)
        default: throw .typeMismatch(expected: "64-bit integer", found: kindName)
        }
    }

    public func asBytes() throws(CBORError) -> [UInt8] {
        guard case .bytes(let v) = self else { throw .typeMismatch(expected: "byte string", found: kindName) }
        return v
    }

    public func asText() throws(CBORError) -> String {
        guard case .text(let v) = self else { throw .typeMismatch(expected: "text string", found: kindName) }
        return v
    }

    public func asArray() throws(CBORError) -> [CBOR] {
        guard case .array(let v) = self else { throw .typeMismatch(expected: "array", found: kindName) }
        return v
    }

    public func asBool() throws(CBORError) -> Bool {
        guard case .bool(let v) = self else { throw .typeMismatch(expected: "boolean", found: kindName) }
        return v
    }

    /// A map whose keys are small unsigned integers: the shape every Quire
    /// record uses, so unknown (newer) keys can be skipped by older readers.
    public func asFieldMap() throws(CBORError) -> CBORFields {
        guard case .map(let pairs) = self else { throw .typeMismatch(expected: "map", found: kindName) }
        var fields: [UInt64: CBOR] = [:]
        for (k, v) in pairs {
            guard case .unsigned(let key) = k else { throw .typeMismatch(expected: "integer map key", found: k.kindName) }
            fields[key] = v
        }
        return CBORFields(fields)
    }

    public var kindName: String {
        switch self {
        case .unsigned: return "unsigned integer"
        case .negative: return "negative integer"
        case .bytes: return "byte string"
        case .text: return "text string"
        case .array: return "array"
        case .map: return "map"
        case .bool: return "boolean"
        case .null: return "null"
        }
    }
}

/// Integer-keyed fields of a record. Missing required fields are a clear
/// error; optional ones read as nil, so older senders stay readable.
public struct CBORFields: Sendable {
    public let values: [UInt64: CBOR]
    public init(_ values: [UInt64: CBOR]) { self.values = values }

    public func required(_ key: UInt64, _ name: String) throws(CBORError) -> CBOR {
        guard let v = values[key] else { throw .missingField(name) }
        return v
    }

    public func optional(_ key: UInt64) -> CBOR? {
        guard let v = values[key], v != .null else { return nil }
        return v
    }
}

public enum CBORError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated
    case unsupported(String)
    case nonCanonical(String)
    case typeMismatch(expected: String, found: String)
    case missingField(String)
    case tooDeep
    case tooLarge(Int)
    case invalidUTF8
    case trailingBytes(Int)
    case invalidValue(String)

    public var description: String {
        switch self {
        case .truncated: return "CBOR: input ends in the middle of an item"
        case .unsupported(let what): return "CBOR: unsupported item (\(what))"
        case .nonCanonical(let what): return "CBOR: not in deterministic encoding (\(what))"
        case .typeMismatch(let e, let f): return "CBOR: expected \(e), found \(f)"
        case .missingField(let name): return "CBOR: required field '\(name)' is missing"
        case .tooDeep: return "CBOR: nesting deeper than the limit"
        case .tooLarge(let n): return "CBOR: item length \(n) exceeds the limit"
        case .invalidUTF8: return "CBOR: text string is not valid UTF-8"
        case .trailingBytes(let n): return "CBOR: \(n) bytes after the item"
        case .invalidValue(let what): return "CBOR: invalid value (\(what))"
        }
    }
}
