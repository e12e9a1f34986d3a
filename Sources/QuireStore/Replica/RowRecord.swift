import QuireCore

/// A row as stored: the columns of `rows`, decoded on demand.
struct RowRecord {
    var namespace: Namespace
    var key: RowKey
    var vector: VersionVector
    var isTombstone: Bool
    var leaf: [UInt8]?
    var content: [UInt8]?
    var body: [UInt8]?
    var isOffloaded: Bool
    var holders: [UInt8]?
    var size: Int = 0

    static func load(_ db: Connection, _ ns: Namespace, _ key: RowKey, withBody: Bool) throws(StoreError) -> RowRecord? {
        let sql = "SELECT vv, tombstone, leaf, content, offloaded, holders, size" + (withBody ? ", body" : "") + " FROM rows WHERE ns = ? AND key = ?"
        return try db.queryOne(sql, [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { s throws(StoreError) in
            let vv: VersionVector
            do { vv = try VersionVector(cbor: try CBORReader.decode(s.blob(0) ?? [])) } catch {
                throw StoreError(.corrupt, "\(db.path): version vector of \(ns)/\(key) does not decode: \(error)")
            }
            return RowRecord(namespace: ns, key: key, vector: vv, isTombstone: s.int(1) != 0, leaf: s.blob(2), content: s.blob(3),
                             body: withBody ? s.blob(7) : nil, isOffloaded: s.int(4) != 0, holders: s.blob(5), size: Int(s.int(6)))
        }
    }

    /// The full row (bodies as stored: an offloaded note has a nil body).
    func row(path: String) throws(StoreError) -> Row {
        if isTombstone { return .tombstone(namespace, key, vector: vector) }
        guard let content else { throw StoreError(.corrupt, "\(path): live row \(namespace)/\(key) has no content") }
        do {
            let fields = try CBORReader.decode(content)
            var decoded = try RowContent.decode(namespace, fields: fields, body: nil)
            if case .note(var n) = decoded {
                n.body = isOffloaded ? nil : (body ?? [])
                n.length = isOffloaded ? size : nil
                decoded = .note(n)
            }
            return Row(namespace: namespace, key: key, version: RowVersion(vector: vector, isTombstone: false), content: decoded)
        } catch {
            throw StoreError(.corrupt, "\(path): row \(namespace)/\(key) does not decode: \(error)")
        }
    }
}
