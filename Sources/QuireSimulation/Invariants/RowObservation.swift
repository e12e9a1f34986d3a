import QuireCore
import QuireCrypto

/// Every place the simulator looks inside a row's version lives in this
/// file, so that the row-model rewrite (issue 10: heads tagged with dots
/// under a causal context, actors that are (device, incarnation)) is one
/// small change here rather than a hunt through the workload and checks.
///
/// Today's model: a row holds one value (or a tombstone) under a version
/// vector of per-device counters; a local write bumps this device's entry,
/// so the write's dot is (device id, its new counter). After the rewrite:
/// `mintedDot` reads the new head's dot, `covers` asks the context, `heads`
/// returns every head with its dot, and `keepsConcurrentHeads` turns true,
/// which switches on the strict half of the lost-write check.
public enum RowObservation {
    /// Whether a row keeps concurrent versions side by side (heads). While
    /// false, a value that lost a last-writer tie to a concurrent write is
    /// gone by design of the model, and only what the row shows can be held
    /// to account; when true, every unsuperseded write must be a head.
    public static let keepsConcurrentHeads = false

    /// The dot a local write minted: `before` is the row as the device held
    /// it, `after` what the write returned. Nil when the write made no new
    /// version (content equal to what was stored).
    public static func mintedDot(by device: DeviceID, before: Row?, after: Row) -> Dot? {
        let old = before?.version.vector[device] ?? 0
        let new = after.version.vector[device]
        guard new > old else { return nil }
        return Dot(actor: device.bytes, counter: new)
    }

    /// Whether the row's causal history includes the write tagged `dot`.
    public static func covers(_ row: Row?, _ dot: Dot) -> Bool {
        guard let row, let device = ID16(bytes: Array(dot.actor.prefix(16))) else { return false }
        return row.version.vector[device] >= dot.counter
    }

    /// The highest counter this device has minted in the row, as far as
    /// the row knows (after the rewrite: over every incarnation of it). A
    /// restore that lowers it would let the device mint a counter again.
    public static func ownCounter(of device: DeviceID, in row: Row) -> UInt64 {
        row.version.vector[device]
    }

    /// What a file would show: nil for an absent row or a tombstone.
    public static func shown(_ row: Row?) -> RowContent? { row?.content }

    public static func isLive(_ row: Row?) -> Bool { row?.content != nil }

    public static func isTombstone(_ row: Row?) -> Bool { row?.isTombstone ?? false }

    /// The concurrent versions the row keeps, each with its dot when the
    /// model records one (today: the one value, whose dot is not recorded).
    public static func heads(_ row: Row) -> [Head] {
        guard let content = row.content else { return [] }
        return [Head(dot: nil, content: content)]
    }

    /// Identifies what a write put in the row, for "one dot, one content"
    /// (invariant 7): the content's canonical CBOR (a tombstone: a marker).
    /// Residency is not content: an offloaded note is fingerprinted by its
    /// body's hash, like its leaf.
    public static func fingerprint(of row: Row) -> [UInt8] {
        guard let content = row.content else { return SHA256.hash(separator: "quire.simulation.tombstone", row.key.bytes) }
        return SHA256.hash(separator: "quire.simulation.content", CBORWriter.encode(content.fields(includeBody: false)))
    }

    /// The canonical bytes two converged replicas must agree on: the leaf
    /// (what the digest commits to) followed by the version and the whole
    /// content, body included (the leaf stands in a hash for the body).
    public static func canonicalBytes(of row: Row) -> [UInt8] {
        var out: [UInt8] = LeafEncoding.leaf(of: row) ?? []
        out += row.version.vector.encoded()
        out.append(row.isTombstone ? 1 : 0)
        if let content = row.content { out += CBORWriter.encode(content.fields()) }
        return out
    }

    /// The row's version in a few characters, for traces (`{ada:3,ben:1}`).
    public static func describeVersion(_ row: Row?, names: [DeviceID: String]) -> String {
        guard let row else { return "absent" }
        let entries = row.version.vector.sortedEntries.map { "\(names[$0.0] ?? String($0.0.hex.prefix(6))):\($0.1)" }
        return (row.isTombstone ? "tombstone " : "") + "{" + entries.joined(separator: ",") + "}"
    }

    /// The device part of an actor (today the actor is the device).
    public static func device(of dot: Dot) -> DeviceID? { ID16(bytes: Array(dot.actor.prefix(16))) }
}

/// A write's tag within one row: (actor, counter).
public struct Dot: Hashable, Sendable {
    public let actor: [UInt8]
    public let counter: UInt64

    public init(actor: [UInt8], counter: UInt64) {
        self.actor = actor
        self.counter = counter
    }
}

/// One concurrent version of a row.
public struct Head: Sendable {
    public let dot: Dot?
    public let content: RowContent
}
