import QuireCore
import QuireCrypto

/// Every place the simulator looks inside a row's version lives in this
/// file. The model (issue 10): a row holds heads, each tagged with the dot
/// (actor, counter) that wrote it, under a causal context; an actor is
/// (device, incarnation). A local write replaces every head with one new
/// head under a fresh dot; a delete mints no dot (its context is what it
/// removes), so the simulator gives each delete a marker dot of its own
/// (incarnation `deleteMarker`) that no row ever holds.
public enum RowObservation {
    /// Rows keep concurrent versions side by side: every write no later
    /// edit or delete saw must still be a head.
    public static let keepsConcurrentHeads = true

    /// The incarnation of the marker dots given to deletes.
    public static let deleteMarker = UInt64.max

    /// The dot a local write minted: `before` is the row as the device held
    /// it, `after` what the write returned. Nil when the write made no new
    /// version (content equal to what was stored).
    public static func mintedDot(by device: DeviceID, before: Row?, after: Row) -> Dot? {
        if after.isTombstone {
            guard let before, !before.isTombstone else { return nil }
            // A marker unique to this delete: its context, hashed.
            let tag = SHA256.hash(separator: "quire.simulation.delete", after.key.bytes + after.context.encoded())
            return Dot(actor: Actor(device: device, incarnation: deleteMarker), counter: tag.prefix(7).reduce(1) { $0 << 8 | UInt64($1) })
        }
        let old = Set(before?.heads.map(\.dot) ?? [])
        return after.heads.first { $0.dot.actor.device == device && !old.contains($0.dot) && !(before?.context.covers($0.dot) ?? false) }?.dot
    }

    /// Whether the row's causal history includes the write tagged `dot`
    /// (a delete's marker is never included: nothing holds a delete).
    public static func covers(_ row: Row?, _ dot: Dot) -> Bool {
        guard let row, dot.actor.incarnation != deleteMarker else { return false }
        return row.context.covers(dot)
    }

    /// Whether the row keeps a delete of the versions `removed`: each is in
    /// its history and none is a head (a delete that removed nothing the
    /// model knows is kept by any row).
    public static func keepsRemoval(_ row: Row?, of removed: [Dot]) -> Bool {
        guard !removed.isEmpty else { return true }
        guard let row else { return false }
        let heads = Set(row.heads.map(\.dot))
        return removed.allSatisfy { row.context.covers($0) && !heads.contains($0) }
    }

    /// The highest counter this device has minted in the row, over every
    /// incarnation of it. A restore that lowers it could let the device
    /// mint a counter again, unless it changed incarnation.
    public static func ownCounter(of device: DeviceID, in row: Row) -> UInt64 {
        row.context.counters.filter { $0.key.device == device }.values.max() ?? 0
    }

    /// What a file would show: nil for an absent row or a tombstone.
    public static func shown(_ row: Row?) -> RowContent? { row?.content }

    public static func isLive(_ row: Row?) -> Bool { row?.content != nil }

    public static func isTombstone(_ row: Row?) -> Bool { row?.isTombstone ?? false }

    /// The concurrent versions the row keeps, each with its dot.
    public static func heads(_ row: Row) -> [Head] {
        row.heads.map { Head(dot: $0.dot, content: $0.content) }
    }

    /// Identifies what a write put in the row, for "one dot, one content"
    /// (invariant 7): the new head's content digest (a delete: its marker).
    /// Residency is not content: a head digest names an offloaded body by
    /// its hash, like its leaf.
    public static func fingerprint(of row: Row) -> [UInt8] {
        guard let head = row.heads.first else { return SHA256.hash(separator: "quire.simulation.tombstone", row.key.bytes) }
        return LeafEncoding.headDigest(head)
    }

    /// The canonical bytes two converged replicas must agree on: the leaf
    /// (what the digest commits to), the context, and every head whole,
    /// bodies included (the leaf stands in a hash for a body).
    public static func canonicalBytes(of row: Row) -> [UInt8] {
        var out: [UInt8] = LeafEncoding.leaf(of: row) ?? []
        out += row.context.encoded()
        out.append(row.isTombstone ? 1 : 0)
        // Residency is per device (an offloaded body is a pointer to the
        // same content hash, which the leaf commits to): compare pointers.
        var pointers = row
        for head in row.heads {
            if case .note(var n) = head.content, n.body != nil {
                n.body = nil
                n.length = nil
                pointers.replaceHeadContent(head.dot, with: .note(n))
            }
        }
        out += pointers.encodedHeads(firstBodyApart: false)
        return out
    }

    /// The row's version in a few characters, for traces (`{ada/1f2e:3,ben/77a0:1}`).
    public static func describeVersion(_ row: Row?, names: [DeviceID: String]) -> String {
        guard let row else { return "absent" }
        let entries = row.context.counters.sorted { $0.key < $1.key }.map {
            "\(names[$0.key.device] ?? String($0.key.device.hex.prefix(6)))/\(String($0.key.incarnation, radix: 16).prefix(4)):\($0.value)"
        }
        return (row.isTombstone ? "tombstone " : "") + "{" + entries.joined(separator: ",") + "}" + (row.heads.count > 1 ? " \(row.heads.count) heads" : "")
    }

    /// The device part of an actor.
    public static func device(of dot: Dot) -> DeviceID? { dot.actor.device }
}

/// One concurrent version of a row.
public struct Head: Sendable {
    public let dot: Dot?
    public let content: RowContent
}
