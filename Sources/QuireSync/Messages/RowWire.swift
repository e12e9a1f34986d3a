import QuireCore

/// Rows on the wire: [key, causal context, heads], the namespace given once
/// per message; heads are [dot, fields] pairs (none for a tombstone).
/// Fields use the row codec, whose readers skip unknown keys, so a newer
/// sibling's rows still decode.
public enum RowWire {
    public static func encode(_ row: Row) -> CBOR {
        .array([.bytes(row.key.bytes), row.context.cbor, row.headsCBOR])
    }

    /// A row of `namespace`, or nil if the item is not one (counted by the caller).
    public static func decode(_ item: CBOR, namespace: Namespace) -> Row? {
        guard let parts = try? item.asArray(), parts.count >= 3,
              let keyBytes = try? parts[0].asBytes(), let key = RowKey(bytes: keyBytes),
              let context = try? VersionVector(cbor: parts[1]),
              // No device ever counts this high; a counter near the top
              // would make the next local edit of the row overflow.
              context.counters.values.allSatisfy({ $0 < 1 << 48 }),
              let row = try? Row.decode(namespace, key: key, context: context, heads: parts[2]),
              // A head its own context does not name by its tag would make
              // the join depend on the order rows meet.
              row.heads.allSatisfy(row.saw) else { return nil }
        if row.isTombstone && !namespace.hasTombstones { return nil }
        return row
    }
}
