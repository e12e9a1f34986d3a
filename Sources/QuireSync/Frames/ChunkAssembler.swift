import QuireCore

/// One logical message: a sub-kind and its payload. Messages larger than
/// the relay's frame limit travel as `chunk` frames, each sealed and
/// authenticated on its own.
public struct SyncMessage: Equatable, Sendable {
    public var subKind: SubKind
    public var payload: [UInt8]

    public init(subKind: SubKind, payload: [UInt8]) {
        self.subKind = subKind
        self.payload = payload
    }

    /// CBOR [sub-kind, payload]: what the chunks of a large message carry.
    func encodedForChunks() -> [UInt8] {
        CBORWriter.encode(.array([.text(subKind.name), .bytes(payload)]))
    }

    static func decodeFromChunks(_ bytes: [UInt8]) -> SyncMessage? {
        guard let items = try? CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: ChunkAssembler.maxMessageBytes)).asArray(),
              items.count == 2, let name = try? items[0].asText(), !name.isEmpty, name.utf8.count < 64,
              name != SubKind.chunk.name, let payload = try? items[1].asBytes() else { return nil }
        return SyncMessage(subKind: SubKind(name), payload: payload)
    }
}

/// A piece of a large message.
public struct Chunk: Equatable, Sendable {
    public var messageID: [UInt8]
    public var index: Int
    public var count: Int
    public var data: [UInt8]

    public func encoded() -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .bytes(messageID)), (.unsigned(2), .unsigned(UInt64(index))),
                                (.unsigned(3), .unsigned(UInt64(count))), (.unsigned(4), .bytes(data))]))
    }

    public static func decode(_ bytes: [UInt8]) -> Chunk? {
        guard let f = try? CBORReader.decode(bytes, limits: .init(maxDepth: 2, maxItemLength: 16 << 20)).asFieldMap(),
              let id = try? f.required(1, "id").asBytes(), id.count == 8,
              let index = try? f.required(2, "index").asUInt(), let count = try? f.required(3, "count").asUInt(),
              count >= 1, count <= UInt64(ChunkAssembler.maxChunks), index < count,
              let data = try? f.required(4, "data").asBytes() else { return nil }
        return Chunk(messageID: id, index: Int(index), count: Int(count), data: data)
    }

    /// Splits `message` into chunks whose encoded form fits `room` bytes.
    static func split(_ message: SyncMessage, messageID: [UInt8], room: Int) -> [Chunk] {
        let bytes = message.encodedForChunks()
        let piece = max(room - 32, 64)   // the chunk map's own fields
        let count = (bytes.count + piece - 1) / piece
        return (0..<count).map { i in
            Chunk(messageID: messageID, index: i, count: count, data: Array(bytes[(i * piece)..<min(bytes.count, (i + 1) * piece)]))
        }
    }
}

/// Reassembles chunks of authenticated frames. Memory is bounded: at most a
/// few messages in progress per sender, a cap on every message and on the
/// total, and a timeout after which an incomplete message is dropped.
public struct ChunkAssembler: Sendable {
    public static let maxChunks = 4096
    /// A row at the wire limit (a reconcile response carrying it alone) or
    /// a 64 MiB note body (offload_put, recall_resp), plus framing: see `RowLimits`.
    public static let maxMessageBytes = RowLimits.maxMessageBytes
    public static let maxTotalBytes = 128 << 20
    public static let maxPerSender = 4
    /// An incomplete message is dropped when no chunk of it arrived for
    /// this long (measured from its latest chunk, not its first: a message
    /// at the size limit may take longer than this to cross a slow link).
    public static let timeoutMilliseconds: UInt64 = 30_000

    struct Pending: Sendable {
        var count: Int
        var parts: [Int: [UInt8]] = [:]
        var bytes = 0
        var startedMs: UInt64
        var lastChunkMs: UInt64
    }

    private var pending: [DeviceID: [[UInt8]: Pending]] = [:]
    /// Recently completed message ids per sender: a late duplicate chunk
    /// must not start a new partial message that then sits until it expires.
    private var completed: [DeviceID: [[UInt8]]] = [:]
    private var totalBytes = 0
    public private(set) var expired = 0

    public init() {}

    /// Adds a chunk; returns the whole message once every chunk arrived.
    /// Duplicated chunks are ignored; chunks over a bound are refused.
    public mutating func add(_ chunk: Chunk, from sender: DeviceID, nowMs: UInt64) -> SyncMessage? {
        expire(nowMs: nowMs)
        if completed[sender]?.contains(chunk.messageID) == true { return nil }
        var forSender = pending[sender] ?? [:]
        var entry: Pending
        if let existing = forSender[chunk.messageID] {
            entry = existing
            guard entry.count == chunk.count else { return nil }
        } else {
            if forSender.count >= ChunkAssembler.maxPerSender {
                // Drop the oldest in-progress message of this sender to make room.
                if let oldest = forSender.min(by: { $0.value.startedMs < $1.value.startedMs }) {
                    totalBytes -= oldest.value.bytes
                    forSender[oldest.key] = nil
                    expired += 1
                }
            }
            entry = Pending(count: chunk.count, startedMs: nowMs, lastChunkMs: nowMs)
        }
        entry.lastChunkMs = nowMs
        if entry.parts[chunk.index] == nil {
            guard entry.bytes + chunk.data.count <= ChunkAssembler.maxMessageBytes,
                  totalBytes + chunk.data.count <= ChunkAssembler.maxTotalBytes else {
                totalBytes -= entry.bytes
                forSender[chunk.messageID] = nil
                pending[sender] = forSender
                expired += 1
                return nil
            }
            entry.parts[chunk.index] = chunk.data
            entry.bytes += chunk.data.count
            totalBytes += chunk.data.count
        }
        if entry.parts.count == entry.count {
            forSender[chunk.messageID] = nil
            pending[sender] = forSender.isEmpty ? nil : forSender
            totalBytes -= entry.bytes
            var done = completed[sender] ?? []
            done.append(chunk.messageID)
            if done.count > 32 { done.removeFirst(done.count - 32) }
            completed[sender] = done
            var whole: [UInt8] = []
            whole.reserveCapacity(entry.bytes)
            for i in 0..<entry.count { whole += entry.parts[i]! }
            return SyncMessage.decodeFromChunks(whole)
        }
        forSender[chunk.messageID] = entry
        pending[sender] = forSender
        return nil
    }

    /// Drops messages that did not complete in time.
    public mutating func expire(nowMs: UInt64) {
        for (sender, messages) in pending {
            var kept = messages
            for (id, entry) in messages where nowMs &- entry.lastChunkMs > ChunkAssembler.timeoutMilliseconds {
                kept[id] = nil
                totalBytes -= entry.bytes
                expired += 1
            }
            pending[sender] = kept.isEmpty ? nil : kept
        }
    }

    public var bufferedBytes: Int { totalBytes }
}
