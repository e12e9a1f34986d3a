import QuireCore

extension SubKind {
    /// The leader asks every roster device for its digest now.
    public static let gcPropose = SubKind("gc_propose")
    /// A device's digest at the moment it was asked (or that it declines:
    /// its cloud anchor is off).
    public static let gcAck = SubKind("gc_ack")
    /// The anchor landed: drop tombstones, move to the new generation.
    public static let gcCommit = SubKind("gc_commit")
    /// Just before the commit: every tombstone the round collects.
    public static let gcCollected = SubKind("gc_collected")
    /// A follower that committed without the list asks the round's leader for it again.
    public static let gcCollectedRequest = SubKind("gc_collected_req")

    static let barrierKinds: Set<SubKind> = [.gcPropose, .gcAck, .gcCommit, .gcCollected, .gcCollectedRequest]
}

/// `gc_propose {nonce (16 random bytes), digest}`.
public struct BarrierPropose: Equatable, Sendable {
    public var nonce: [UInt8]
    public var digest: [UInt8]

    public func encoded() -> [UInt8] { CBORWriter.encode(.map([(.unsigned(1), .bytes(nonce)), (.unsigned(2), .bytes(digest))])) }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> BarrierPropose {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 4, maxItemLength: 64 << 10)).asFieldMap()
        let nonce = try f.required(1, "nonce").asBytes()
        guard nonce.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return BarrierPropose(nonce: nonce, digest: try f.required(2, "digest").asBytes())
    }
}

/// `gc_ack {nonce, myDigest, declined, tombstones}`; `declined` when the
/// device's cloud anchor is off. `tombstones` (in the graveyard's form,
/// absent when none) are the ones the device will collect: digests leave
/// tombstones out, so a device may hold one its siblings never heard of (a
/// row deleted before it ever shipped), and the anchor's graveyard must
/// name it too, or a copy of that device put back later would bring the
/// row back. An ack without the field (an older device) names none.
public struct BarrierAck: Equatable, Sendable {
    public var nonce: [UInt8]
    public var digest: [UInt8]
    public var declined: Bool
    public var tombstones: [CollectedTombstone]

    public init(nonce: [UInt8], digest: [UInt8], declined: Bool, tombstones: [CollectedTombstone] = []) {
        self.nonce = nonce
        self.digest = digest
        self.declined = declined
        self.tombstones = tombstones
    }

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(nonce)), (.unsigned(2), .bytes(digest)), (.unsigned(3), .bool(declined))]
        if !tombstones.isEmpty { fields.append((.unsigned(4), CollectedTombstone.encode(tombstones))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> BarrierAck {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 12, maxItemLength: RowLimits.maxMessageBytes)).asFieldMap()
        let nonce = try f.required(1, "nonce").asBytes()
        guard nonce.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return BarrierAck(nonce: nonce, digest: try f.required(2, "digest").asBytes(), declined: try f.optional(3)?.asBool() ?? false,
                          // One entry per key, in order: one list, one encoding.
                          tombstones: CollectedTombstone.joined(try f.optional(4).map { v throws(CBORError) in try CollectedTombstone.decode(v) } ?? []))
    }
}

/// `gc_commit {nonce, digest, generation + 1}`.
public struct BarrierCommit: Equatable, Sendable {
    public var nonce: [UInt8]
    public var digest: [UInt8]
    public var generation: UInt64

    public func encoded() -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .bytes(nonce)), (.unsigned(2), .bytes(digest)), (.unsigned(3), .unsigned(generation))]))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> BarrierCommit {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 4, maxItemLength: 64 << 10)).asFieldMap()
        let nonce = try f.required(1, "nonce").asBytes()
        guard nonce.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return BarrierCommit(nonce: nonce, digest: try f.required(2, "digest").asBytes(), generation: try f.required(3, "generation").asUInt())
    }
}

/// `gc_collected {nonce, tombstones}`, sent by the leader just before each
/// `gc_commit`: every tombstone the round collects, the whole roster's union
/// as the anchor's graveyard names them (absent when none). A device buries
/// them all at the commit, so the snapshots it serves later can say its
/// graveyard names the round in full (`GraveyardCoverage`). A message of
/// its own, not a field of the commit: a device from before it ignores an
/// unknown kind, and would refuse a commit deeper than it reads. Without it
/// (lost, late, an older leader) the round is covered from its anchor, or
/// not at all.
public struct BarrierCollected: Equatable, Sendable {
    public var nonce: [UInt8]
    public var tombstones: [CollectedTombstone]

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(nonce))]
        if !tombstones.isEmpty { fields.append((.unsigned(2), CollectedTombstone.encode(tombstones))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> BarrierCollected {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 12, maxItemLength: RowLimits.maxMessageBytes)).asFieldMap()
        let nonce = try f.required(1, "nonce").asBytes()
        guard nonce.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return BarrierCollected(nonce: nonce,
                                tombstones: CollectedTombstone.joined(try f.optional(2).map { v throws(CBORError) in try CollectedTombstone.decode(v) } ?? []))
    }
}

/// `gc_collected_req {nonce}`: a follower whose `gc_collected` was lost
/// while the commit came asks the round's leader for the list again (the
/// answer is a `gc_collected`). A device from before ignores the kind, and
/// the follower then claims nothing for the round, as it would have.
public struct BarrierCollectedRequest: Equatable, Sendable {
    public var nonce: [UInt8]

    public func encoded() -> [UInt8] { CBORWriter.encode(.map([(.unsigned(1), .bytes(nonce))])) }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> BarrierCollectedRequest {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: 64)).asFieldMap()
        let nonce = try f.required(1, "nonce").asBytes()
        guard nonce.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return BarrierCollectedRequest(nonce: nonce)
    }
}
