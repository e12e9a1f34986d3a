/// "Are we in sync?" in a few hundred bytes: a version byte, one 32-byte
/// root per namespace in `Namespace` order, and the generation (8 bytes,
/// big-endian). Its size never depends on the store's size.
public struct StateDigest: Equatable, Sendable {
    /// Bumped whenever the namespace set or any leaf encoding changes, so a
    /// fleet spanning such a change degrades to a clean no-reconcile rather
    /// than a false repair.
    public static let wireVersion: UInt8 = LeafEncoding.version
    public static let namespaces = Namespace.allCases
    public static let encodedSize = 1 + 32 * namespaces.count + 8

    public var roots: [Namespace: [UInt8]]
    public var generation: UInt64

    public init(roots: [Namespace: [UInt8]], generation: UInt64) {
        precondition(StateDigest.namespaces.allSatisfy { roots[$0]?.count == 32 }, "a 32-byte root for every namespace")
        self.roots = roots
        self.generation = generation
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = [StateDigest.wireVersion]
        out.reserveCapacity(StateDigest.encodedSize)
        for ns in StateDigest.namespaces { out += roots[ns]! }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((generation >> UInt64(shift)) & 0xFF)) }
        return out
    }

    public init(decoding bytes: [UInt8]) throws(DigestError) {
        guard let version = bytes.first else { throw .truncated(expected: StateDigest.encodedSize, found: 0) }
        guard version == StateDigest.wireVersion else {
            throw .incompatibleVersion(theirs: version, ours: StateDigest.wireVersion)
        }
        guard bytes.count == StateDigest.encodedSize else {
            throw .truncated(expected: StateDigest.encodedSize, found: bytes.count)
        }
        var roots: [Namespace: [UInt8]] = [:]
        var offset = 1
        for ns in StateDigest.namespaces {
            roots[ns] = Array(bytes[offset..<offset + 32])
            offset += 32
        }
        var generation: UInt64 = 0
        for b in bytes[offset..<offset + 8] { generation = generation << 8 | UInt64(b) }
        self.init(roots: roots, generation: generation)
    }

    /// The namespaces whose roots differ, in digest order.
    public func divergentNamespaces(from other: StateDigest) -> [Namespace] {
        StateDigest.namespaces.filter { roots[$0] != other.roots[$0] }
    }
}

public enum DigestError: Error, Equatable, Sendable, CustomStringConvertible {
    case incompatibleVersion(theirs: UInt8, ours: UInt8)
    case truncated(expected: Int, found: Int)

    public var description: String {
        switch self {
        case .incompatibleVersion(let theirs, let ours):
            return "state digest has wire version \(theirs), this build speaks \(ours): the sibling runs an incompatible version of quire"
        case .truncated(let expected, let found):
            return "state digest is \(found) bytes, expected \(expected)"
        }
    }
}
