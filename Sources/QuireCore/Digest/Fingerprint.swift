import QuireCrypto

/// The fingerprint of a set of leaves: their count and their sum modulo
/// 2^256. Why additive, not a Merkle tree over sorted leaves:
///  - a tree that pairs sorted leaves by position cannot be updated cheaply
///    (one insert shifts every pairing after it); a sum depends only on the
///    set, so a write is `sum += new - old`, O(1) per stored level;
///  - sums compose: the fingerprint of any key range is the sum of the
///    fingerprints of the prefix buckets that tile it, so the store keeps
///    bucket sums for a few prefix lengths and answers any range in
///    O(16 · levels) lookups, the basis of recursive range reconciliation.
/// The count is compared beside the sum so equality is structural, not only
/// collision-dependent. Sums of hashes can be attacked with generalised
/// birthday methods by someone who chooses many leaves; only the account's
/// own authenticated devices can insert leaves, and a collision could only
/// hide a difference from sync, never forge or read data.
public struct Fingerprint: Equatable, Hashable, Sendable {
    public private(set) var count: UInt64
    /// Little-endian 64-bit limbs of the 256-bit sum.
    public private(set) var limbs: (UInt64, UInt64, UInt64, UInt64)

    public static let zero = Fingerprint(count: 0, limbs: (0, 0, 0, 0))

    public init(count: UInt64, limbs: (UInt64, UInt64, UInt64, UInt64)) {
        self.count = count
        self.limbs = limbs
    }

    /// From the stored form: count and the 32-byte big-endian sum.
    public init(count: UInt64, sum: [UInt8]) {
        precondition(sum.count == 32)
        func limb(_ i: Int) -> UInt64 {
            var v: UInt64 = 0
            for b in sum[(24 - 8 * i)..<(32 - 8 * i)] { v = v << 8 | UInt64(b) }
            return v
        }
        self.init(count: count, limbs: (limb(0), limb(1), limb(2), limb(3)))
    }

    public init(leaf: [UInt8]) {
        self.init(count: 1, sum: leaf)
    }

    public static func == (a: Fingerprint, b: Fingerprint) -> Bool {
        a.count == b.count && a.limbs.0 == b.limbs.0 && a.limbs.1 == b.limbs.1 && a.limbs.2 == b.limbs.2 && a.limbs.3 == b.limbs.3
    }

    public func hash(into h: inout Hasher) {
        h.combine(count); h.combine(limbs.0); h.combine(limbs.1); h.combine(limbs.2); h.combine(limbs.3)
    }

    /// 32 bytes, big-endian.
    public var sumBytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(32)
        for l in [limbs.3, limbs.2, limbs.1, limbs.0] {
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((l >> UInt64(shift)) & 0xFF)) }
        }
        return out
    }

    public static func + (a: Fingerprint, b: Fingerprint) -> Fingerprint {
        var carry: UInt64 = 0
        func add(_ x: UInt64, _ y: UInt64) -> UInt64 {
            let (s1, o1) = x.addingReportingOverflow(y)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
            return s2
        }
        let l0 = add(a.limbs.0, b.limbs.0)
        let l1 = add(a.limbs.1, b.limbs.1)
        let l2 = add(a.limbs.2, b.limbs.2)
        let l3 = add(a.limbs.3, b.limbs.3)
        return Fingerprint(count: a.count &+ b.count, limbs: (l0, l1, l2, l3))
    }

    public static func - (a: Fingerprint, b: Fingerprint) -> Fingerprint {
        var borrow: UInt64 = 0
        func sub(_ x: UInt64, _ y: UInt64) -> UInt64 {
            let (d1, o1) = x.subtractingReportingOverflow(y)
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
            return d2
        }
        let l0 = sub(a.limbs.0, b.limbs.0)
        let l1 = sub(a.limbs.1, b.limbs.1)
        let l2 = sub(a.limbs.2, b.limbs.2)
        let l3 = sub(a.limbs.3, b.limbs.3)
        return Fingerprint(count: a.count &- b.count, limbs: (l0, l1, l2, l3))
    }

    public static func += (a: inout Fingerprint, b: Fingerprint) { a = a + b }
    public static func -= (a: inout Fingerprint, b: Fingerprint) { a = a - b }

    /// The 32-byte root this fingerprint stands for: hashed under the inner
    /// node separator, which no leaf uses, over the count and the sum.
    public var root: [UInt8] {
        var h = SHA256()
        h.updateSeparator(Fingerprint.nodeSeparator)
        var c = count.bigEndian
        let countBytes = withUnsafeBytes(of: &c) { Array($0) }
        h.update(countBytes)
        h.update(sumBytes)
        return h.finalize()
    }

    public static let nodeSeparator = "quire.state.node"
}
