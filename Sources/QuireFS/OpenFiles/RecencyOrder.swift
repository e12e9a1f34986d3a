/// Keys in the order they were last touched, the least recent first: the
/// eviction order of the mount's bounded caches (clean copies, baselines).
///
/// The cache keeps, with each key, the stamp its last `touch` returned;
/// an entry whose stamp is not its key's any more (touched again since, or
/// removed) is stale and skipped. Stale entries are dropped once they
/// outnumber the live ones, so the order stays within a constant of the
/// keys the cache holds and each touch pays for at most one, whatever the
/// pattern of touches. The stamps live in the cache's own table: one
/// lookup per key, not two.
struct RecencyOrder<Key: Hashable> {
    private var entries: [(key: Key, stamp: UInt64)] = []
    private var head = 0
    private var nextStamp: UInt64 = 0

    /// Entries queued, stale ones included (tests).
    var queued: Int { entries.count - head }

    /// Queues `key` as the most recent and returns the stamp to keep with
    /// it. `isCurrent` tells whether an older entry still names its key's
    /// stamp (`live`: how many keys the cache holds).
    mutating func touch(_ key: Key, live: Int, isCurrent: (Key, UInt64) -> Bool) -> UInt64 {
        if entries.count - head > 2 * live + 64 || head > entries.count / 2 {
            entries = entries[head...].filter { isCurrent($0.key, $0.stamp) }
            head = 0
        }
        nextStamp += 1
        entries.append((key, nextStamp))
        return nextStamp
    }

    /// The least recently touched key whose entry is current, taken out of
    /// the order (the cache then drops it).
    mutating func removeOldest(isCurrent: (Key, UInt64) -> Bool) -> Key? {
        while head < entries.count {
            let oldest = entries[head]
            head += 1
            if isCurrent(oldest.key, oldest.stamp) { return oldest.key }
        }
        return nil
    }
}

extension RecencyOrder {
    /// The least recently touched key whose entry is current, left in the order.
    func oldest(isCurrent: (Key, UInt64) -> Bool) -> Key? {
        entries[head...].first { isCurrent($0.key, $0.stamp) }?.key
    }

    /// The current keys from the least recently touched on, for as long as
    /// `include` holds, left in the order (stale entries at the front are
    /// dropped on the way).
    mutating func leading(isCurrent: (Key, UInt64) -> Bool, while include: (Key) -> Bool) -> [Key] {
        while head < entries.count, !isCurrent(entries[head].key, entries[head].stamp) { head += 1 }
        var found: [Key] = []
        for entry in entries[head...] where isCurrent(entry.key, entry.stamp) {
            guard include(entry.key) else { break }
            found.append(entry.key)
        }
        return found
    }
}
