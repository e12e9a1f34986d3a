import QuireCore

/// Sub-kinds of offload and recall. Like every sub-kind they are parsed only
/// inside a frame that opened with a roster key of our own account.
extension SubKind {
    /// A body to keep: answered by `offload_ack` only once it is committed.
    public static let offloadPut = SubKind("offload_put")
    public static let offloadAck = SubKind("offload_ack")
    /// "Send me the body with this hash."
    public static let recallRequest = SubKind("recall_req")
    public static let recallResponse = SubKind("recall_resp")
    /// "Which of these bodies do you hold?" The holder re-hashes each body
    /// before it says yes, so the same question is fsck's verification and
    /// the offloader's count of resident copies elsewhere.
    public static let holdQuery = SubKind("hold_query")
    public static let holdAnswer = SubKind("hold_resp")
    /// "I no longer rely on your copies of these": a counted copy's pin goes.
    public static let holdRelease = SubKind("hold_release")

    public static let offloadKinds: Set<SubKind> = [.offloadPut, .offloadAck, .recallRequest, .recallResponse, .holdQuery, .holdAnswer,
                                                    .holdRelease]
}

/// Bodies travel as one byte string; a message may carry up to 64 MiB of
/// body plus a little framing (the chunk assembler allows for that).
let offloadMessageLimits = CBORReader.Limits(maxDepth: 4, maxItemLength: OffloadLimits.maxBodyBytes + 4096)

public enum OffloadLimits {
    /// The largest body that can be offloaded or recalled.
    public static let maxBodyBytes = 64 << 20
    /// Entries in one hold query (a query for more is split).
    public static let maxQueryItems = 4096
}

private func hashField(_ f: CBORFields, _ key: UInt64) throws(CBORError) -> [UInt8] {
    let h = try f.required(key, "contentHash").asBytes()
    guard h.count == 32 else { throw .invalidValue("content hash length") }
    return h
}

private func idField(_ f: CBORFields, _ key: UInt64, _ name: String, count: Int) throws(CBORError) -> [UInt8] {
    let v = try f.required(key, name).asBytes()
    guard v.count == count else { throw .invalidValue("\(name) length") }
    return v
}

private func keyField(_ f: CBORFields, _ key: UInt64) throws(CBORError) -> RowKey? {
    guard let raw = f.optional(key) else { return nil }
    guard let k = RowKey(bytes: try raw.asBytes()) else { throw .invalidValue("row key length") }
    return k
}

/// `offload_put {opID, contentHash, key?, body}`. The op id is chosen once
/// per note and kept across retries, so a repeated put is recognisable
/// (and harmless: holding is idempotent).
public struct OffloadPut: Equatable, Sendable {
    public var opID: [UInt8]
    public var contentHash: [UInt8]
    public var key: RowKey?
    public var body: [UInt8]

    public init(opID: [UInt8], contentHash: [UInt8], key: RowKey?, body: [UInt8]) {
        self.opID = opID; self.contentHash = contentHash; self.key = key; self.body = body
    }

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(opID)), (.unsigned(2), .bytes(contentHash))]
        if let key { fields.append((.unsigned(3), .bytes(key.bytes))) }
        fields.append((.unsigned(4), .bytes(body)))
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> OffloadPut {
        let f = try CBORReader.decode(bytes, limits: offloadMessageLimits).asFieldMap()
        let body = try f.required(4, "body").asBytes()
        guard body.count <= OffloadLimits.maxBodyBytes else { throw .invalidValue("body larger than 64 MiB") }
        return OffloadPut(opID: try idField(f, 1, "opID", count: 16), contentHash: try hashField(f, 2), key: try keyField(f, 3), body: body)
    }
}

/// `offload_ack {opID, contentHash, refusal?}`: without a refusal it says
/// "the body is committed here"; with one, why it was not kept.
public struct OffloadAck: Equatable, Sendable {
    public var opID: [UInt8]
    public var contentHash: [UInt8]
    public var refusal: String?

    public init(opID: [UInt8], contentHash: [UInt8], refusal: String? = nil) {
        self.opID = opID; self.contentHash = contentHash; self.refusal = refusal
    }

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(opID)), (.unsigned(2), .bytes(contentHash))]
        if let refusal { fields.append((.unsigned(3), .text(refusal))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> OffloadAck {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: 4096)).asFieldMap()
        return OffloadAck(opID: try idField(f, 1, "opID", count: 16), contentHash: try hashField(f, 2), refusal: try f.optional(3)?.asText())
    }
}

/// `recall_req {contentHash, key?}`: the key lets a sibling that holds the
/// note resident serve it from its own row.
public struct RecallRequest: Equatable, Sendable {
    public var contentHash: [UInt8]
    public var key: RowKey?

    public init(contentHash: [UInt8], key: RowKey?) { self.contentHash = contentHash; self.key = key }

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(contentHash))]
        if let key { fields.append((.unsigned(2), .bytes(key.bytes))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> RecallRequest {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: 4096)).asFieldMap()
        return RecallRequest(contentHash: try hashField(f, 1), key: try keyField(f, 2))
    }
}

/// `recall_resp {contentHash, body | refusal}`. The requester checks the
/// body against the hash before it stores anything.
public struct RecallResponse: Equatable, Sendable {
    public var contentHash: [UInt8]
    public var body: [UInt8]?
    public var refusal: String?

    public init(contentHash: [UInt8], body: [UInt8]?, refusal: String? = nil) {
        self.contentHash = contentHash; self.body = body; self.refusal = refusal
    }

    public func encoded() -> [UInt8] {
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(contentHash))]
        if let body { fields.append((.unsigned(2), .bytes(body))) }
        if let refusal { fields.append((.unsigned(3), .text(refusal))) }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> RecallResponse {
        let f = try CBORReader.decode(bytes, limits: offloadMessageLimits).asFieldMap()
        let body = try f.optional(2)?.asBytes()
        let refusal = try f.optional(3)?.asText()
        guard body != nil || refusal != nil else { throw .missingField("body or refusal") }
        return RecallResponse(contentHash: try hashField(f, 1), body: body, refusal: refusal)
    }
}

/// `hold_query {queryID, [[contentHash, key?]...], counting?, epoch?}`.
/// `counting` (an offload's required copies) says the held copies will be
/// counted: the holder pins them before it answers, at `epoch` (the asker's
/// clock in ms). Absent, it is a check (fsck).
public struct HoldQuery: Equatable, Sendable {
    public struct Item: Equatable, Sendable {
        public var contentHash: [UInt8]
        public var key: RowKey?
        public init(contentHash: [UInt8], key: RowKey?) { self.contentHash = contentHash; self.key = key }
    }

    public var queryID: [UInt8]
    public var items: [Item]
    public var counting: Int?
    public var epoch: UInt64

    public init(queryID: [UInt8], items: [Item], counting: Int? = nil, epoch: UInt64 = 0) {
        self.queryID = queryID; self.items = items; self.counting = counting; self.epoch = epoch
    }

    public func encoded() -> [UInt8] {
        let list: [CBOR] = items.map { .array([.bytes($0.contentHash)] + ($0.key.map { [.bytes($0.bytes)] } ?? [])) }
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .bytes(queryID)), (.unsigned(2), .array(list))]
        if let counting {
            fields.append((.unsigned(3), .unsigned(UInt64(counting))))
            fields.append((.unsigned(4), .unsigned(epoch)))
        }
        return CBORWriter.encode(.map(fields))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> HoldQuery {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 4, maxItemLength: 1 << 20)).asFieldMap()
        let raw = try f.required(2, "items").asArray()
        guard raw.count <= OffloadLimits.maxQueryItems else { throw .invalidValue("too many hold query items") }
        var items: [Item] = []
        for entry in raw {
            let parts = try entry.asArray()
            guard let first = parts.first, case .bytes(let hash) = first, hash.count == 32 else { throw .invalidValue("hold query item") }
            var key: RowKey? = nil
            if parts.count > 1 {
                guard let k = RowKey(bytes: try parts[1].asBytes()) else { throw .invalidValue("row key length") }
                key = k
            }
            items.append(Item(contentHash: hash, key: key))
        }
        var counting: Int? = nil
        if let raw = try f.optional(3)?.asUInt() {
            guard (1...1024).contains(raw) else { throw .invalidValue("a hold query counting \(raw) copies") }
            counting = Int(raw)
        }
        return HoldQuery(queryID: try idField(f, 1, "queryID", count: 8), items: items, counting: counting,
                         epoch: counting == nil ? 0 : try f.optional(4)?.asUInt() ?? 0)
    }
}

/// `hold_release {[contentHash...], epoch}`: the sender's pins on these
/// copies made up to `epoch` (its clock in ms) go.
public struct HoldRelease: Equatable, Sendable {
    public var hashes: [[UInt8]]
    public var epoch: UInt64

    public init(hashes: [[UInt8]], epoch: UInt64) { self.hashes = hashes; self.epoch = epoch }

    public func encoded() -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .bytes(hashes.flatMap { $0 })), (.unsigned(2), .unsigned(epoch))]))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> HoldRelease {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: 1 << 20)).asFieldMap()
        let packed = try f.required(1, "hashes").asBytes()
        guard packed.count % 32 == 0 else { throw .invalidValue("released hashes length") }
        return HoldRelease(hashes: stride(from: 0, to: packed.count, by: 32).map { Array(packed[$0..<$0 + 32]) },
                           epoch: try f.required(2, "epoch").asUInt())
    }
}

/// `hold_resp {queryID, [contentHash...], durable?}`: the hashes the sender
/// holds, each re-checked against its bytes just now; `durable` says it
/// keeps them as a homebase (held for others), not only as its own notes.
public struct HoldAnswer: Equatable, Sendable {
    public var queryID: [UInt8]
    public var held: [[UInt8]]
    public var isHomebase: Bool

    public init(queryID: [UInt8], held: [[UInt8]], isHomebase: Bool) {
        self.queryID = queryID; self.held = held; self.isHomebase = isHomebase
    }

    public func encoded() -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .bytes(queryID)), (.unsigned(2), .bytes(held.flatMap { $0 })),
                                (.unsigned(3), .bool(isHomebase))]))
    }

    public static func decode(_ bytes: [UInt8]) throws(CBORError) -> HoldAnswer {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: 1 << 20)).asFieldMap()
        let packed = try f.required(2, "held").asBytes()
        guard packed.count % 32 == 0 else { throw .invalidValue("held hashes length") }
        let held = stride(from: 0, to: packed.count, by: 32).map { Array(packed[$0..<$0 + 32]) }
        return HoldAnswer(queryID: try idField(f, 1, "queryID", count: 8), held: held, isHomebase: try f.optional(3)?.asBool() ?? false)
    }
}
