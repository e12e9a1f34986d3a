import QuireCore

/// Bodies damaged on disk. Every resident note body is checked against its
/// content hash whenever it is read; one that fails is never shown or
/// served. It is set aside exactly like an offloaded body (no edit: the
/// leaf names the content hash either way), so a read recalls a good copy
/// from the holders, the homebase or any sibling that holds those bytes,
/// as a checksumming filesystem repairs a block from a mirror.
extension ReplicaStore {
    /// Notes whose stored body was found damaged, newest first.
    public func damagedBodies() throws(StoreError) -> [DamagedBody] {
        try read { () throws(StoreError) -> [DamagedBody] in
            try db.query("SELECT key, name, hash, at, repaired FROM damaged ORDER BY id DESC") {
                DamagedBody(key: ID16(bytes: $0.blob(0) ?? [])!, name: $0.text(1) ?? "", contentHash: $0.blob(2) ?? [],
                            foundAt: Timestamp(seconds: $0.int(3)), repairedAt: $0.isNull(4) ? nil : Timestamp(seconds: $0.int(4)))
            }
        }
    }

    /// Reads every resident note body and sets aside those that fail their
    /// hash (fsck); returns how many were found.
    @discardableResult
    public func checkBodies() throws(StoreError) -> Int {
        let keys = try read { () throws(StoreError) -> [RowKey] in
            try db.query("SELECT key FROM rows WHERE ns = ? AND tombstone = 0 AND offloaded = 0",
                         [.int(Int64(Namespace.notebook.rawValue))]) { ID16(bytes: $0.blob(0) ?? [])! }
        }
        var found = 0
        for key in keys where try loadRow(.notebook, key).wasDamaged { found += 1 }
        return found
    }

    /// A row as readers get it: a damaged body is set aside first.
    /// `seq`: the change number of the version read.
    func loadRow(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> (row: Row?, seq: Int64, wasDamaged: Bool) {
        let decoded = try read { () throws(StoreError) -> (row: Row, isBodyDamaged: Bool, seq: Int64)? in
            guard let record = try RowRecord.load(db, ns, key, withBody: true) else { return nil }
            let (row, isBodyDamaged) = try record.decode(path: path)
            return (row, isBodyDamaged, record.seq)
        }
        guard let decoded else { return (nil, 0, false) }
        guard decoded.isBodyDamaged else { return (decoded.row, decoded.seq, false) }
        try write { ctx in
            if let record = try RowRecord.load(ctx.db, ns, key, withBody: true) { _ = try ctx.decodeSettingAside(record) }
        }
        return (decoded.row, decoded.seq, true)
    }
}

public struct DamagedBody: Equatable, Sendable {
    public var key: RowKey
    public var name: String
    public var contentHash: [UInt8]
    public var foundAt: Timestamp
    public var repairedAt: Timestamp?
}

extension WriteContext {
    /// Decodes a record inside a write, setting a damaged body aside in
    /// this transaction (a save over a damaged note still lands).
    mutating func decodeSettingAside(_ record: RowRecord) throws(StoreError) -> Row {
        let (row, damaged) = try record.decode(path: store.path)
        if damaged, let hash = record.hash {
            try db.run("UPDATE rows SET body = NULL, offloaded = 1, holders = NULL, seq = ? WHERE ns = ? AND key = ?",
                       [.int(seq), .int(Int64(record.namespace.rawValue)), .blob(record.key.bytes)])
            try db.run("INSERT INTO damaged(key, hash, name, at) VALUES (?, ?, ?, ?)",
                       [.blob(record.key.bytes), .blob(hash), .text(row.content?.displayName ?? ""), .int(now.seconds)])
        }
        return row
    }
}
