import QuireCore

/// Rows on the wire: [key, version vector, fields or null for a tombstone],
/// the namespace given once per message. Fields use the row codec, whose
/// readers skip unknown keys, so a newer sibling's rows still decode.
public enum RowWire {
    public static func encode(_ row: Row) -> CBOR {
        .array([.bytes(row.key.bytes), row.version.vector.cbor, row.content.map { $0.fields(includeBody: true) } ?? .null])
    }

    /// A row of `namespace`, or nil if the item is not one (counted by the caller).
    public static func decode(_ item: CBOR, namespace: Namespace) -> Row? {
        guard let parts = try? item.asArray(), parts.count >= 3,
              let keyBytes = try? parts[0].asBytes(), let key = RowKey(bytes: keyBytes),
              let vector = try? VersionVector(cbor: parts[1]),
              // No device ever counts this high; a counter near the top
              // would make the next local edit of the row overflow.
              vector.counters.values.allSatisfy({ $0 < 1 << 48 }) else { return nil }
        if parts[2] == .null {
            guard namespace.hasTombstones, !vector.counters.isEmpty else { return nil }
            return .tombstone(namespace, key, vector: vector)
        }
        guard let content = try? RowContent.decode(namespace, fields: parts[2]), !vector.counters.isEmpty else { return nil }
        return Row(namespace: namespace, key: key, version: RowVersion(vector: vector, isTombstone: false), content: content)
    }
}
