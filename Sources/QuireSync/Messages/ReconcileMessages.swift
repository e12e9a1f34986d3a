import QuireCore
import QuireCrypto

/// A range's fingerprint as it travels: the count and 8 bytes of a hash of
/// (session salt, count, sum). Salting with the session means an accidental
/// 64-bit collision cannot hide the same difference twice: the next round
/// hashes differently, while the root digest keeps saying "not equal".
public struct RangeSummary: Equatable, Sendable {
    public var count: UInt64
    public var hash: [UInt8]

    public static let hashSize = 8

    public init(count: UInt64, hash: [UInt8]) {
        self.count = count
        self.hash = hash
    }

    public init(_ fingerprint: Fingerprint, salt: [UInt8]) {
        var h = SHA256()
        h.updateSeparator("quire.sync.range")
        h.update(salt)
        var out: [UInt8] = []
        appendBigEndian(fingerprint.count, to: &out)
        h.update(out)
        h.update(fingerprint.sumBytes)
        self.init(count: fingerprint.count, hash: Array(h.finalize().prefix(Self.hashSize)))
    }
}

/// (key, first 16 bytes of its leaf): the entries of a small range.
public struct KeyLeaf: Equatable, Sendable {
    public var key: RowKey
    public var leaf: [UInt8]

    public static let leafSize = 16
    public static let size = 16 + leafSize

    public init(key: RowKey, leaf: [UInt8]) {
        self.key = key
        self.leaf = Array(leaf.prefix(Self.leafSize))
    }

    static func pack(_ entries: [KeyLeaf]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(entries.count * size)
        for e in entries { out += e.key.bytes; out += e.leaf }
        return out
    }

    static func unpack(_ bytes: [UInt8]) throws(CBORError) -> [KeyLeaf] {
        guard bytes.count % size == 0 else { throw .invalidValue("key list length") }
        return stride(from: 0, to: bytes.count, by: size).map {
            KeyLeaf(key: RowKey(bytes: Array(bytes[$0..<$0 + 16]))!, leaf: Array(bytes[$0 + 16..<$0 + size]))
        }
    }
}

/// What a puller asks about one range.
public enum RequestItem: Equatable, Sendable {
    /// My 16 child summaries of this range (the range itself is known to differ).
    case children(KeyPrefix, [RangeSummary])
    /// All my entries in this range: send the rows I lack or hold differently.
    case keys(KeyPrefix, [KeyLeaf])
    /// I hold many rows here and you few: send your entries and tombstones.
    case probe(KeyPrefix)
    /// Send these rows (live or tombstone).
    case want([RowKey])
    /// Send the whole namespace (settings: a small dictionary, no tree).
    case whole
}

/// What a responder says about one range.
public enum ResponseItem: Equatable, Sendable {
    /// The range differs and you hold few rows there: send me your keys.
    case mismatch(KeyPrefix)
    /// The range differs; here are my 16 child summaries.
    case children(KeyPrefix, [RangeSummary])
    /// The range differs and I hold few rows there: my entries.
    case keyList(KeyPrefix, [KeyLeaf])
}

/// `reconcile_req`: one step of a pull of one namespace.
public struct ReconcileRequest: Equatable, Sendable {
    public var namespace: Namespace
    public var session: [UInt8]
    public var step: UInt64
    public var generation: UInt64
    public var items: [RequestItem]

    public init(namespace: Namespace, session: [UInt8], step: UInt64, generation: UInt64, items: [RequestItem]) {
        self.namespace = namespace; self.session = session; self.step = step; self.generation = generation; self.items = items
    }

    public func encoded() -> [UInt8] {
        let items: [CBOR] = self.items.map { item in
            switch item {
            case .children(let p, let s): return .array([.unsigned(0)] + p.cbor + summariesCBOR(s))
            case .keys(let p, let e): return .array([.unsigned(1)] + p.cbor + [.bytes(KeyLeaf.pack(e))])
            case .probe(let p): return .array([.unsigned(2)] + p.cbor)
            case .want(let keys): return .array([.unsigned(3), .bytes(keys.flatMap(\.bytes))])
            case .whole: return .array([.unsigned(4)])
            }
        }
        return CBORWriter.encode(.map([(.unsigned(1), .unsigned(UInt64(namespace.rawValue))), (.unsigned(2), .bytes(session)),
                                       (.unsigned(3), .unsigned(step)), (.unsigned(4), .array(items)),
                                       (.unsigned(5), .unsigned(generation))]))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> ReconcileRequest {
        let f = try CBORReader.decode(bytes, limits: messageLimits).asFieldMap()
        let ns = try namespaceField(f)
        let session = try sessionField(f)
        var items: [RequestItem] = []
        for raw in try f.required(4, "items").asArray() {
            let a = try raw.asArray()
            guard let kind = try a.first?.asUInt() else { throw .invalidValue("empty request item") }
            switch kind {
            case 0:
                guard a.count >= 5 else { throw .invalidValue("children item") }
                items.append(.children(try KeyPrefix.decode(level: a[1], packed: a[2]), try summaries(a[3], a[4])))
            case 1:
                guard a.count >= 4 else { throw .invalidValue("keys item") }
                items.append(.keys(try KeyPrefix.decode(level: a[1], packed: a[2]), try KeyLeaf.unpack(try a[3].asBytes())))
            case 2:
                guard a.count >= 3 else { throw .invalidValue("probe item") }
                items.append(.probe(try KeyPrefix.decode(level: a[1], packed: a[2])))
            case 3:
                guard a.count >= 2 else { throw .invalidValue("want item") }
                let b = try a[1].asBytes()
                guard b.count % 16 == 0 else { throw .invalidValue("want keys") }
                items.append(.want(stride(from: 0, to: b.count, by: 16).map { RowKey(bytes: Array(b[$0..<$0 + 16]))! }))
            case 4:
                items.append(.whole)
            default:
                continue   // a newer sibling's item kind: skip it, answer the rest
            }
        }
        return ReconcileRequest(namespace: ns, session: session, step: try f.optional(3)?.asUInt() ?? 0,
                                generation: try f.optional(5)?.asUInt() ?? 0, items: items)
    }
}

/// `reconcile_resp`: rows (with version vectors), tombstones, and what the
/// puller should look at next. Never sent when nothing differs.
public struct ReconcileResponse: Equatable, Sendable {
    public var namespace: Namespace
    public var session: [UInt8]
    public var step: UInt64
    public var rows: [Row]
    public var items: [ResponseItem]
    /// The responder stopped adding rows at its size cap; pull again.
    public var isTruncated: Bool
    /// Rows that did not decode (a bug or a newer field shape), skipped.
    public var undecodableRows = 0
    /// Carries one row too large for the response proper, sent on its own
    /// just before it: rows only, it says nothing about ranges and neither
    /// advances nor ends the pull.
    public var isRowsOnly = false
    /// The responder's generation (nil from a build that did not send it);
    /// a receiver at another generation refuses the rows.
    public var generation: UInt64? = nil

    public init(namespace: Namespace, session: [UInt8], step: UInt64, rows: [Row], items: [ResponseItem], isTruncated: Bool) {
        self.namespace = namespace; self.session = session; self.step = step; self.rows = rows; self.items = items
        self.isTruncated = isTruncated
    }

    public var isEmpty: Bool { rows.isEmpty && items.isEmpty }

    public func encoded() -> [UInt8] { encodedCountingRows().bytes }

    /// The encoding, and how many of its bytes are the rows' own encodings
    /// (`SyncMetrics.rowBytesOut`), counted as they are written. The
    /// fields go in ascending key order: the canonical map, as
    /// `CBORWriter.write(.map)` would lay it out.
    func encodedCountingRows() -> (bytes: [UInt8], rowBytes: Int) {
        let items: [CBOR] = self.items.map { item in
            switch item {
            case .mismatch(let p): return .array([.unsigned(0)] + p.cbor)
            case .children(let p, let s): return .array([.unsigned(1)] + p.cbor + summariesCBOR(s))
            case .keyList(let p, let e): return .array([.unsigned(2)] + p.cbor + [.bytes(KeyLeaf.pack(e))])
            }
        }
        var w = CBORWriter()
        w.writeMapHeader(5 + (isTruncated ? 1 : 0) + (isRowsOnly ? 1 : 0) + (generation == nil ? 0 : 1))
        w.writeUInt(1); w.writeUInt(UInt64(namespace.rawValue))
        w.writeUInt(2); w.writeBytes(session)
        w.writeUInt(3); w.writeUInt(step)
        w.writeUInt(4); w.writeArrayHeader(rows.count)
        let rowsStart = w.bytes.count
        for row in rows { w.write(RowWire.encode(row)) }
        let rowBytes = w.bytes.count - rowsStart
        w.writeUInt(5); w.write(.array(items))
        if isTruncated { w.writeUInt(6); w.writeBool(true) }
        if isRowsOnly { w.writeUInt(7); w.writeBool(true) }
        if let generation { w.writeUInt(8); w.writeUInt(generation) }
        return (w.bytes, rowBytes)
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> ReconcileResponse {
        try decodeCountingRows(bytes).response
    }

    /// The response, and how many of its bytes are the encodings of the
    /// rows that decoded (`SyncMetrics.rowBytesIn`): measured on the decoded
    /// values, which the reader accepts only in the one canonical encoding,
    /// so no row is encoded again to be counted.
    static func decodeCountingRows(_ bytes: [UInt8]) throws(CBORError) -> (response: ReconcileResponse, rowBytes: Int) {
        let f = try CBORReader.decode(bytes, limits: messageLimits).asFieldMap()
        let ns = try namespaceField(f)
        var rows: [Row] = []
        var undecodable = 0
        var rowBytes = 0
        // A catch-up's responses carry hundreds of rows, each checked
        // against its hash: decoded on every core, kept in order.
        let decoded = try (f.optional(4)?.asArray() ?? []).concurrentMap { item in
            RowWire.decode(item, namespace: ns).map { ($0, CBORWriter.encodedSize(of: item)) }
        }
        for entry in decoded {
            if let (row, size) = entry {
                rows.append(row)
                rowBytes += size
            } else {
                undecodable += 1
            }
        }
        var items: [ResponseItem] = []
        for raw in try f.optional(5)?.asArray() ?? [] {
            let a = try raw.asArray()
            guard let kind = try a.first?.asUInt() else { throw .invalidValue("empty response item") }
            switch kind {
            case 0:
                guard a.count >= 3 else { throw .invalidValue("mismatch item") }
                items.append(.mismatch(try KeyPrefix.decode(level: a[1], packed: a[2])))
            case 1:
                guard a.count >= 5 else { throw .invalidValue("children item") }
                items.append(.children(try KeyPrefix.decode(level: a[1], packed: a[2]), try summaries(a[3], a[4])))
            case 2:
                guard a.count >= 4 else { throw .invalidValue("key list item") }
                items.append(.keyList(try KeyPrefix.decode(level: a[1], packed: a[2]), try KeyLeaf.unpack(try a[3].asBytes())))
            default:
                continue
            }
        }
        var response = ReconcileResponse(namespace: ns, session: try sessionField(f), step: try f.optional(3)?.asUInt() ?? 0,
                                          rows: rows, items: items, isTruncated: try f.optional(6)?.asBool() ?? false)
        response.undecodableRows = undecodable
        response.isRowsOnly = try f.optional(7)?.asBool() ?? false
        response.generation = try f.optional(8)?.asUInt()
        return (response, rowBytes)
    }
}

/// `state_digest`: the encoded digest, kept as bytes so a digest of another
/// wire version still parses far enough to be named in `quire status`, and
/// an echo of the recipient's digest as last received (8 bytes of its hash,
/// empty if none): a relay with no mailbox may have lost our last
/// advertisement, and the echo is how we find out without a timer.
/// It also tells the recipient the newest session of its own that the
/// sender accepted (`SessionSeen`): a device put back from a copy of its
/// directory has an older session stamp, and learns here to start after it.
/// And how many live rows the sender holds (for a catching-up sibling's "what
/// remains"). And whether the sender holds tombstones worth a barrier
/// (field 6): the leader may hold none (a device that joined after the
/// deletes never needed them), and it must still call the round. And the
/// nonce of the barrier round that committed the sender's generation (field
/// 7, when it knows it), so a device behind recovers only from that
/// round's anchor. Fields a receiver does not know are ignored.
public struct DigestMessage: Equatable, Sendable {
    public var digest: [UInt8]
    public var echo: [UInt8]
    public var recipientSession: SessionSeen?
    public var rows: UInt64?
    public var holdsCollectable: Bool
    public var round: [UInt8]?

    public init(digest: [UInt8], echo: [UInt8] = [], recipientSession: SessionSeen? = nil, rows: UInt64? = nil, holdsCollectable: Bool = false,
                round: [UInt8]? = nil) {
        self.digest = digest
        self.echo = echo
        self.recipientSession = recipientSession
        self.rows = rows
        self.holdsCollectable = holdsCollectable
        self.round = round
    }

    public static func echo(of digest: [UInt8]?) -> [UInt8] {
        guard let digest else { return [] }
        return Array(SHA256.hash(separator: "quire.sync.echo", digest).prefix(8))
    }

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(digest)), (.unsigned(2), .bytes(echo))]
        if let recipientSession {
            fields.append((.unsigned(3), .unsigned(recipientSession.start)))
            if let id = recipientSession.id { fields.append((.unsigned(4), .bytes(id))) }
        }
        if let rows { fields.append((.unsigned(5), .unsigned(rows))) }
        if holdsCollectable { fields.append((.unsigned(6), .bool(true))) }
        if let round { fields.append((.unsigned(7), .bytes(round))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> DigestMessage {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 4, maxItemLength: 64 << 10)).asFieldMap()
        var session: SessionSeen?
        if let start = try f.optional(3)?.asUInt() {
            let id = try f.optional(4)?.asBytes()
            guard id == nil || id?.count == 8 else { throw .invalidValue("session id") }
            session = SessionSeen(start: start, id: id)
        }
        let round = try f.optional(7)?.asBytes()
        guard round == nil || round?.count == 16 else { throw .invalidValue("a barrier nonce is 16 bytes") }
        return DigestMessage(digest: try f.required(1, "digest").asBytes(), echo: try f.optional(2)?.asBytes() ?? [],
                             recipientSession: session, rows: try f.optional(5)?.asUInt(), holdsCollectable: try f.optional(6)?.asBool() ?? false,
                             round: round)
    }
}

/// `introduce`: the statements that make the sender a member of the
/// account (every statement of its device log, so the receiver can follow
/// the chain of admits), and, from a device still waiting to be admitted,
/// its enrolment signed by the invite's one-time pairing key. Field 1 (one
/// row) is what devices before the device log sent; it is still read.
public struct IntroduceMessage: Equatable, Sendable {
    public static let maxRows = 256

    /// Longest refusal text kept (a sibling's words, shown to the user).
    public static let maxRefusalBytes = 512

    public var rows: [Row]
    public var enrolment: [UInt8]?
    /// Sent back to a joining device whose enrolment a trusted sibling
    /// refused (an invite already used, or expired): why, in words. Older
    /// versions skip the field.
    public var refusal: String?

    public init(rows: [Row], enrolment: [UInt8]? = nil, refusal: String? = nil) {
        self.rows = rows
        self.enrolment = enrolment
        self.refusal = refusal
    }
    public init(row: Row) { self.init(rows: [row]) }

    public var row: Row? { rows.first }

    public func encoded() -> [UInt8] {
        var f: [(CBOR, CBOR)] = [(.unsigned(2), .array(rows.prefix(Self.maxRows).map(RowWire.encode)))]
        if let enrolment { f.append((.unsigned(3), .bytes(enrolment))) }
        if let refusal {
            var kept = ""
            for c in refusal {
                guard kept.utf8.count + c.utf8.count <= Self.maxRefusalBytes else { break }
                kept.append(c)
            }
            f.append((.unsigned(4), .text(kept)))
        }
        return CBORWriter.encode(.map(f))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> IntroduceMessage {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 10, maxItemLength: 256 << 10)).asFieldMap()
        var rows: [Row] = []
        if let one = f.optional(1) {
            guard let row = RowWire.decode(one, namespace: .devices) else { throw .invalidValue("roster row") }
            rows.append(row)
        }
        if let many = f.optional(2) {
            let items = try many.asArray()
            guard items.count <= maxRows else { throw .invalidValue("too many roster rows") }
            for item in items {
                guard let row = RowWire.decode(item, namespace: .devices) else { throw .invalidValue("roster row") }
                rows.append(row)
            }
        }
        let refusal = try f.optional(4)?.asText()
        if let refusal, refusal.utf8.count > maxRefusalBytes { throw .invalidValue("refusal too long") }
        return IntroduceMessage(rows: rows, enrolment: try f.optional(3)?.asBytes(), refusal: refusal)
    }
}

let messageLimits = CBORReader.Limits(maxDepth: 16, maxItemLength: ChunkAssembler.maxMessageBytes)

private func summariesCBOR(_ s: [RangeSummary]) -> [CBOR] {
    [.array(s.map { .unsigned($0.count) }), .bytes(s.flatMap(\.hash))]
}

private func summaries(_ counts: CBOR, _ hashes: CBOR) throws(CBORError) -> [RangeSummary] {
    let c = try counts.asArray()
    let h = try hashes.asBytes()
    guard c.count == 16, h.count == 16 * RangeSummary.hashSize else { throw .invalidValue("16 child summaries") }
    var out: [RangeSummary] = []
    for (i, item) in c.enumerated() {
        out.append(RangeSummary(count: try item.asUInt(), hash: Array(h[(i * RangeSummary.hashSize)..<((i + 1) * RangeSummary.hashSize)])))
    }
    return out
}

private func namespaceField(_ f: CBORFields) throws(CBORError) -> Namespace {
    let raw = try f.required(1, "namespace").asUInt()
    guard raw < 256, let ns = Namespace(rawValue: UInt8(raw)) else { throw .invalidValue("namespace \(raw)") }
    return ns
}

private func sessionField(_ f: CBORFields) throws(CBORError) -> [UInt8] {
    let s = try f.required(2, "session").asBytes()
    guard s.count == 8 else { throw .invalidValue("session id") }
    return s
}
