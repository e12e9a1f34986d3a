import Foundation

/// Keys that each run out a grace after they were last renewed: the mount's
/// claims on names it created (`NameIndex`) and its files waiting to become
/// rows (`ProvisionalFiles`).
///
/// Keys run out in the order they were renewed, so finding the expired
/// ones and the next deadline costs what has expired, not every key: a
/// copy of 100,000 files into the mount holds 100,000 claims for the
/// grace, and the change feed asks after each commit.
struct GraceTable<Key: Hashable> {
    private var renewed: [Key: (at: Date, stamp: UInt64)] = [:]
    private var order = RecencyOrder<Key>()

    /// Entries in the expiry order, stale ones included (tests).
    var queued: Int { order.queued }
    var count: Int { renewed.count }
    var keys: Dictionary<Key, (at: Date, stamp: UInt64)>.Keys { renewed.keys }
    func contains(_ key: Key) -> Bool { renewed[key] != nil }
    func renewedAt(_ key: Key) -> Date? { renewed[key]?.at }

    /// Adds `key`, or starts its grace again, from `now`.
    mutating func renew(_ key: Key, at now: Date) {
        let stamp: UInt64
        // Scoped: the copy is gone before the write, which then copies nothing.
        do { let held = renewed; stamp = order.touch(key, live: held.count) { held[$0]?.stamp == $1 } }
        renewed[key] = (now, stamp)
    }

    /// Whether `key` was held.
    @discardableResult
    mutating func remove(_ key: Key) -> Bool { renewed.removeValue(forKey: key) != nil }

    /// Keys not renewed within `grace` of `now`, the longest waiting first;
    /// they stay until renewed or removed.
    mutating func expired(at now: Date, grace: TimeInterval) -> [Key] {
        let renewed = self.renewed
        return order.leading(isCurrent: { renewed[$0]?.stamp == $1 }) { key in
            renewed[key].map { now.timeIntervalSince($0.at) >= grace } ?? false
        }
    }

    /// When the key renewed longest ago runs out.
    func nextDeadline(grace: TimeInterval) -> Date? {
        order.oldest { renewed[$0]?.stamp == $1 }.flatMap { renewed[$0]?.at.addingTimeInterval(grace) }
    }
}
