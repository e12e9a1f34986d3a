import QuireCore

/// A row as stored: the columns of `rows`, decoded on demand.
/// `vv` holds the causal context; `content` the heads ([dot, fields] each,
/// the first note head's body in `body`, where offloading can clear it).
struct RowRecord {
    var namespace: Namespace
    var key: RowKey
    var context: VersionVector
    var isTombstone: Bool
    var leaf: [UInt8]?
    var content: [UInt8]?
    var body: [UInt8]?
    var isOffloaded: Bool
    var holders: [UInt8]?
    var size: Int = 0
    /// The first note head's content hash (the `hash` column).
    var hash: [UInt8]? = nil
    /// How many versions (heads) the row holds (the `versions` column).
    var versions = 1
    /// The change number of the version read (the `seq` column), read with
    /// it: a second query could see a version committed in between.
    var seq: Int64 = 0
    /// Whether `body` was read. A record loaded without it decodes to a row
    /// whose first note head is a pointer: fine for comparing versions,
    /// never to be written back.
    var isBodyLoaded = true

    static func load(_ db: Connection, _ ns: Namespace, _ key: RowKey, withBody: Bool) throws(StoreError) -> RowRecord? {
        let sql = "SELECT vv, tombstone, leaf, content, offloaded, holders, size, hash, versions, seq" + (withBody ? ", body, bodyFormat" : "")
            + " FROM rows WHERE ns = ? AND key = ?"
        return try db.queryOne(sql, [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { s throws(StoreError) in
            let context: VersionVector
            do { context = try VersionVector(cbor: try CBORReader.decode(s.blob(0) ?? [])) } catch {
                throw StoreError(.corrupt, "\(db.path): causal context of \(ns)/\(key) does not decode: \(error)")
            }
            return RowRecord(namespace: ns, key: key, context: context, isTombstone: s.int(1) != 0, leaf: s.blob(2), content: s.blob(3),
                             body: withBody ? s.blob(10).map { StoredBody.decode($0, format: s.int(11)) ?? [] } : nil, isOffloaded: s.int(4) != 0, holders: s.blob(5), size: Int(s.int(6)),
                             hash: s.blob(7), versions: Int(s.int(8)), seq: s.int(9), isBodyLoaded: withBody)
        }
    }

    /// The full row (bodies as stored: an offloaded note head has a nil body).
    func row(path: String) throws(StoreError) -> Row { try decode(path: path).row }

    /// The row, and whether its stored note body failed its hash (damaged
    /// on disk). A damaged body is never handed out: the row comes back as
    /// a pointer, as if the body were offloaded, and the caller records it
    /// (`WriteContext.setAsideDamagedBody`) so a good copy is fetched.
    func decode(path: String) throws(StoreError) -> (row: Row, isBodyDamaged: Bool) {
        if isTombstone { return (.tombstone(namespace, key, context: context), false) }
        guard let content else { throw StoreError(.corrupt, "\(path): live row \(namespace)/\(key) has no content") }
        do {
            var damaged = false
            var checkedAgainst: [UInt8]?
            var resident = namespace == .notebook && !isOffloaded && isBodyLoaded
            if resident, let hash {
                damaged = Note.bodyDigest(body ?? []) != hash
                resident = !damaged
                checkedAgainst = hash
            }
            let firstBody: [UInt8]?? = namespace == .notebook ? .some(resident ? (body ?? []) : nil) : .none
            var row = try Row.decode(namespace, key: key, context: context, heads: try CBORReader.decode(content),
                                     firstBody: firstBody, firstBodyHash: checkedAgainst)
            if isOffloaded || damaged, let first = row.heads.first, case .note(var n) = first.content {
                n.length = size
                row.replaceHeadContent(first.dot, with: .note(n))
            }
            return (row, damaged)
        } catch {
            throw StoreError(.corrupt, "\(path): row \(namespace)/\(key) does not decode: \(error)")
        }
    }
}
