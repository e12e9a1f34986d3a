import Foundation
import QuireCore

/// Rows created through this mount that keep their plain name for now,
/// with when each claim was last renewed (`NameIndex`).
///
/// Claims expire in the order they were renewed, so finding the expired
/// ones and the next deadline costs what has expired, not every claim: a
/// copy of 100,000 files into the mount holds 100,000 claims for the grace,
/// and the change feed asks after each commit.
struct ClaimTable {
    private var renewed: [RowRef: (at: Date, stamp: UInt64)] = [:]
    private var order = RecencyOrder<RowRef>()

    /// Entries in the expiry order, stale ones included (tests).
    var queued: Int { order.queued }
    var count: Int { renewed.count }
    var refs: Dictionary<RowRef, (at: Date, stamp: UInt64)>.Keys { renewed.keys }
    func contains(_ ref: RowRef) -> Bool { renewed[ref] != nil }

    /// Claims `ref`, or starts its grace again, from `now`.
    mutating func renew(_ ref: RowRef, at now: Date) {
        let stamp: UInt64
        // Scoped: the copy is gone before the write, which then copies nothing.
        do { let held = renewed; stamp = order.touch(ref, live: held.count) { held[$0]?.stamp == $1 } }
        renewed[ref] = (now, stamp)
    }

    /// Whether `ref` was claimed.
    mutating func remove(_ ref: RowRef) -> Bool { renewed.removeValue(forKey: ref) != nil }

    /// Claims not renewed within `grace` of `now`, by key; they stay claimed
    /// until renewed or removed.
    mutating func expired(at now: Date, grace: TimeInterval) -> [RowRef] {
        let renewed = self.renewed
        return order.leading(isCurrent: { renewed[$0]?.stamp == $1 }) { ref in
            renewed[ref].map { now.timeIntervalSince($0.at) > grace } ?? false
        }.sorted { $0.key < $1.key }
    }

    /// When the claim renewed longest ago runs out.
    mutating func nextDeadline(grace: TimeInterval) -> Date? {
        let renewed = self.renewed
        return order.oldest { renewed[$0]?.stamp == $1 }.flatMap { renewed[$0]?.at.addingTimeInterval(grace) }
    }
}
