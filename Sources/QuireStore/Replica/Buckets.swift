import QuireCore

/// Key-prefix buckets: bucket (level L, prefix P) is the `KeyPrefix` P of
/// level L, the fingerprint of every key whose first L nibbles equal P. Keys are uniformly random (or hashed), so the
/// finest level (3: 4,096 buckets) holds about 25 rows at 100,000 notes: a
/// range inside one bucket is summed from that handful of leaves, while a
/// bulk import rewrites only 4,369 buckets however many rows it brings.
enum Buckets {
    static let maxLevel = 3

    /// A bucket's stored prefix: the key's `KeyPrefix` at `level`, packed.
    static func prefix(of key: RowKey, level: Int) -> Int64 { KeyPrefix(key, level: level).value }

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

extension Statement {
    /// A bucket's fingerprint from its (count, sum) columns.
    func fingerprint(countColumn c: Int32) -> Fingerprint {
        Fingerprint(count: UInt64(bitPattern: int(c)), sum: blob(c + 1) ?? [UInt8](repeating: 0, count: 32))
    }
}
