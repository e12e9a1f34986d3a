/// What a barrier collected: a deleted key and the causal context of its
/// tombstone, kept after the tombstone itself is gone (the graveyard).
///
/// A device put back from a backup holds versions the backup thinks no
/// sibling ever saw (written just before it, not yet confirmed). Recovery
/// keeps such versions (edit beats delete), which is right only if the
/// fleet never saw them. When the fleet saw one and then deleted and
/// collected its row, the collected tombstone's context names it: the
/// version is a deleted one, and recovery drops it instead of bringing the
/// row back. The graveyard rides in the anchor (and a sibling's snapshot).
public struct CollectedTombstone: Hashable, Sendable {
    public var namespace: Namespace
    public var key: RowKey
    public var context: VersionVector

    public init(namespace: Namespace, key: RowKey, context: VersionVector) {
        self.namespace = namespace
        self.key = key
        self.context = context
    }

    /// Whether the delete saw `head`: the context holds a later write of
    /// its actor on this row (an actor's dots on one row are made in
    /// sequence, by a replica that held the earlier ones), or that very
    /// write (same counter, its tag among those seen, or tags not known).
    public func saw(_ head: RowHead) -> Bool { context.saw(head.dot, tag: head.tag) }

    /// One entry per key, contexts joined, in namespace and key order.
    public static func joined(_ lists: [CollectedTombstone]...) -> [CollectedTombstone] {
        var byKey: [Namespace: [RowKey: VersionVector]] = [:]
        for e in lists.joined() {
            byKey[e.namespace, default: [:]][e.key] = byKey[e.namespace]?[e.key].map { $0.joined(with: e.context) } ?? e.context
        }
        return Namespace.allCases.flatMap { ns in
            (byKey[ns] ?? [:]).sorted { $0.key < $1.key }.map { CollectedTombstone(namespace: ns, key: $0.key, context: $0.value) }
        }
    }

    /// `[[namespace, [[key, context], ...]], ...]`, namespaces in order,
    /// keys sorted within each: one graveyard has one encoding.
    public static func encode(_ entries: [CollectedTombstone]) -> CBOR {
        var byNamespace: [Namespace: [CollectedTombstone]] = [:]
        for e in entries { byNamespace[e.namespace, default: []].append(e) }
        return .array(Namespace.allCases.compactMap { ns in
            guard let list = byNamespace[ns] else { return nil }
            return .array([.unsigned(UInt64(ns.rawValue)),
                           .array(list.sorted { $0.key < $1.key }.map { .array([.bytes($0.key.bytes), $0.context.cbor]) })])
        })
    }

    public static func decode(_ cbor: CBOR) throws(CBORError) -> [CollectedTombstone] {
        var out: [CollectedTombstone] = []
        for group in try cbor.asArray() {
            let parts = try group.asArray()
            guard parts.count == 2, let raw = UInt8(exactly: try parts[0].asUInt()), let ns = Namespace(rawValue: raw) else {
                throw .invalidValue("a graveyard group names no namespace")
            }
            for item in try parts[1].asArray() {
                let pair = try item.asArray()
                guard pair.count == 2, let key = ID16(bytes: try pair[0].asBytes()) else { throw .invalidValue("a graveyard entry") }
                out.append(CollectedTombstone(namespace: ns, key: key, context: try VersionVector(cbor: pair[1])))
            }
        }
        return out
    }
}
