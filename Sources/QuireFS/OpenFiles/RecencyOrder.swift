/// Keys in the order they were last touched, the least recent first: the
/// eviction order of the mount's bounded caches (clean copies, baselines).
///
/// Touching a key again leaves its old entry behind, marked stale by its
/// stamp and skipped; stale entries are dropped once they outnumber the
/// live ones, so the order stays within a constant of the keys it holds and
/// each touch pays for at most one, whatever the pattern of touches.
struct RecencyOrder<Key: Hashable> {
    /// Each key with the stamp of its live entry in `entries`.
    private var stamps: [Key: UInt64] = [:]
    private var entries: [(key: Key, stamp: UInt64)] = []
    private var head = 0
    private var nextStamp: UInt64 = 0

    var count: Int { stamps.count }
    /// Entries queued, stale ones included (tests).
    var queued: Int { entries.count - head }

    /// When `key` was last touched (a larger number is more recent).
    func lastTouched(_ key: Key) -> UInt64? { stamps[key] }

    /// `key` is now the most recent.
    mutating func touch(_ key: Key) {
        nextStamp += 1
        stamps[key] = nextStamp
        entries.append((key, nextStamp))
        if entries.count - head > 2 * stamps.count + 64 || head > entries.count / 2 {
            entries = entries[head...].filter { stamps[$0.key] == $0.stamp }
            head = 0
        }
    }

    mutating func remove(_ key: Key) { stamps[key] = nil }

    /// Takes the least recently touched key out of the order.
    mutating func removeOldest() -> Key? {
        while head < entries.count {
            let oldest = entries[head]
            head += 1
            if stamps[oldest.key] == oldest.stamp {
                stamps[oldest.key] = nil
                return oldest.key
            }
        }
        return nil
    }
}
