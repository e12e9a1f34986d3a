import QuireCore

/// Key-prefix buckets: bucket (level L, prefix P) holds every key whose
/// first L nibbles equal P. Keys are uniformly random (or hashed), so the
/// finest level (3: 4,096 buckets) holds about 25 rows at 100,000 notes: a
/// range inside one bucket is summed from that handful of leaves, while a
/// bulk import rewrites only 4,369 buckets however many rows it brings.
enum Buckets {
    static let maxLevel = 3

    static func prefix(of key: RowKey, level: Int) -> Int64 {
        var v: Int64 = 0
        for i in 0..<level {
            let byte = key.bytes[i / 2]
            let nibble = i % 2 == 0 ? byte >> 4 : byte & 0x0F
            v = v << 4 | Int64(nibble)
        }
        return v
    }

    /// The first key of bucket (level, prefix): 16 bytes.
    static func lowerBound(level: Int, prefix: Int64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<level {
            let nibble = UInt8((prefix >> Int64(4 * (level - 1 - i))) & 0x0F)
            if i % 2 == 0 { out[i / 2] |= nibble << 4 } else { out[i / 2] |= nibble }
        }
        return out
    }

    /// The first key after bucket (level, prefix), or nil at the top end.
    static func upperBound(level: Int, prefix: Int64) -> [UInt8]? {
        let count = Int64(1) << Int64(4 * level)
        return prefix + 1 < count ? lowerBound(level: level, prefix: prefix + 1) : nil
    }

    /// Pending fingerprint deltas of one transaction, applied once at the
    /// end so a bulk write touches each bucket once.
    struct Deltas {
        /// Deltas of the finest buckets only; coarser levels are sums of
        /// these, derived once in `all` (one hash lookup per row, not five).
        private var finest: [BucketID: Fingerprint] = [:]

        mutating func add(_ ns: Namespace, _ key: RowKey, plus: Fingerprint, minus: Fingerprint) {
            if plus == minus { return }
            let id = BucketID(ns: ns.rawValue, level: Buckets.maxLevel, prefix: Buckets.prefix(of: key, level: Buckets.maxLevel))
            finest[id, default: .zero] += plus - minus
        }

        /// Every bucket's delta, every level.
        var all: [BucketID: Fingerprint] {
            var out = finest
            for (id, delta) in finest {
                for level in 0..<Buckets.maxLevel {
                    let coarse = BucketID(ns: id.ns, level: level, prefix: id.prefix >> Int64(4 * (Buckets.maxLevel - level)))
                    out[coarse, default: .zero] += delta
                }
            }
            return out
        }
    }

    struct BucketID: Hashable {
        let ns: UInt8
        let level: Int
        let prefix: Int64
    }
}

/// Bytewise comparisons of key bounds (an empty lower bound is "from the start").
enum KeyBound {
    static func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }
    static func lessOrEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { !b.lexicographicallyPrecedes(a) }
}

extension Statement {
    /// A bucket's fingerprint from its (count, sum) columns.
    func fingerprint(countColumn c: Int32) -> Fingerprint {
        Fingerprint(count: UInt64(bitPattern: int(c)), sum: blob(c + 1) ?? [UInt8](repeating: 0, count: 32))
    }
}
