import QuireCore

extension SubKind {
    /// A device behind the fleet's generation that cannot read the anchor
    /// asks a sibling at a higher generation for its rows.
    public static let snapshotRequest = SubKind("snapshot_req")
    /// Every live row of one namespace at the sender's generation.
    public static let snapshotResponse = SubKind("snapshot_resp")

    static let snapshotKinds: Set<SubKind> = [.snapshotRequest, .snapshotResponse]
}

/// `snapshot_req {generation}`: the asker's generation (the answer is
/// gated on being ahead of it).
public struct SnapshotRequest: Equatable, Sendable {
    public var generation: UInt64

    public func encoded() -> [UInt8] { CBORWriter.encode(.map([(.unsigned(1), .unsigned(generation))])) }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> SnapshotRequest {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 4, maxItemLength: 1 << 10)).asFieldMap()
        return SnapshotRequest(generation: try f.required(1, "generation").asUInt())
    }
}

/// `snapshot_resp {generation, namespace, part, parts, rows}`: one namespace
/// per message (a namespace too large for one message cannot be served this
/// way; the anchor is the way for those).
public struct SnapshotResponse: Equatable, Sendable {
    public var generation: UInt64
    public var namespace: Namespace
    /// Which of the `parts` messages this is (one per namespace, in order).
    public var part: Int
    public var parts: Int
    public var rows: [Row]
    /// The sender's graveyard entries of this namespace (field 6, absent
    /// when empty and from senders that predate it).
    public var graveyard: [CollectedTombstone] = []
    /// The roster of the sender's last barrier (field 7; nil: not known).
    public var roster: [DeviceID]? = nil
    /// The first generation whose collections the sender's graveyard names
    /// in full, through this snapshot's (field 8, as the anchor's field 5;
    /// nil: not known, or from senders that predate it).
    public var graveyardSince: UInt64? = nil
    /// The round that committed the sender's generation (field 9; nil: not known).
    public var round: [UInt8]? = nil

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .unsigned(generation)), (.unsigned(2), .unsigned(UInt64(namespace.rawValue))),
                                      (.unsigned(3), .unsigned(UInt64(part))), (.unsigned(4), .unsigned(UInt64(parts))),
                                      (.unsigned(5), .array(rows.map(RowWire.encode)))]
        if !graveyard.isEmpty { fields.append((.unsigned(6), CollectedTombstone.encode(graveyard))) }
        if let roster { fields.append((.unsigned(7), .array(roster.sorted().map { .bytes($0.bytes) }))) }
        if let graveyardSince { fields.append((.unsigned(8), .unsigned(graveyardSince))) }
        if let round { fields.append((.unsigned(9), .bytes(round))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> SnapshotResponse {
        let f = try CBORReader.decode(bytes).asFieldMap()
        guard let ns = Namespace(rawValue: UInt8(clamping: try f.required(2, "namespace").asUInt())) else { throw .invalidValue("namespace") }
        let part = Int(clamping: try f.required(3, "part").asUInt()), parts = Int(clamping: try f.required(4, "parts").asUInt())
        guard parts > 0, parts <= Namespace.allCases.count, part < parts else { throw .invalidValue("snapshot part \(part) of \(parts)") }
        var rows: [Row] = []
        for item in try f.required(5, "rows").asArray() {
            guard let row = RowWire.decode(item, namespace: ns) else { throw .invalidValue("a \(ns) row of the snapshot") }
            rows.append(row)
        }
        let graveyard = try f.optional(6).map(CollectedTombstone.decode) ?? []
        guard graveyard.allSatisfy({ $0.namespace == ns }) else { throw .invalidValue("a graveyard entry of another namespace") }
        var roster: [DeviceID]?
        if let list = f.optional(7) {
            roster = []
            for item in try list.asArray() {
                guard let id = ID16(bytes: try item.asBytes()) else { throw .invalidValue("a roster entry") }
                roster?.append(id)
            }
        }
        let round = try f.optional(9)?.asBytes()
        guard round == nil || round?.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return SnapshotResponse(generation: try f.required(1, "generation").asUInt(), namespace: ns, part: part, parts: parts, rows: rows,
                                graveyard: graveyard, roster: roster, graveyardSince: try f.optional(8)?.asUInt(), round: round)
    }
}

/// The parts of a sibling's snapshot gathered so far (one sender, one generation).
struct SnapshotAssembly {
    var from: DeviceID
    var generation: UInt64
    var parts: Int
    var received: [Int: [Row]] = [:]
    var graveyard: [Int: [CollectedTombstone]] = [:]
    var roster: [DeviceID]?
    var graveyardSince: UInt64?
    var round: [UInt8]?
    /// When the last part arrived: the relay is lossy, so a snapshot that
    /// stopped arriving is asked for again.
    var lastPartMs: UInt64 = 0
    var isComplete: Bool { received.count == parts }
}
