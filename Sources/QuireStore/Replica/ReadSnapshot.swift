import Foundation
import QuireCore

/// A consistent, read-only view of the replica: a read transaction on a
/// second connection, which WAL lets run beside writes. A read of many
/// steps (a reconcile answer, a pull's next request) sees one state, and
/// never holds the writer's lock: a save through the mount does not wait
/// for it, nor it for the save.
public final class ReadSnapshot {
    let db: Connection
    let path: String

    init(db: Connection, path: String) {
        self.db = db
        self.path = path
    }

    public func namespaceFingerprint(_ ns: Namespace) throws(StoreError) -> Fingerprint {
        try RangeReads.bucket(db, ns, level: 0, prefix: 0)
    }

    public func childFingerprints(_ ns: Namespace, of range: KeyPrefix) throws(StoreError) -> [Fingerprint] {
        try RangeReads.childFingerprints(db, ns, of: range)
    }

    public func leaves(_ ns: Namespace, in range: KeyPrefix = .root) throws(StoreError) -> [(key: RowKey, leaf: [UInt8])] {
        try RangeReads.leafList(db, ns, range.lowerBound, range.upperBound).map { (key: $0.0, leaf: $0.1) }
    }

    public func leaf(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> [UInt8]? {
        try db.queryOne("SELECT leaf FROM rows WHERE ns = ? AND key = ? AND tombstone = 0", [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { $0.blob(0) } ?? nil
    }

    public func tombstones(_ ns: Namespace, in range: KeyPrefix = .root) throws(StoreError) -> [Row] {
        try RangeReads.tombstones(db, ns, in: range, path: path)
    }

    /// A row as stored (a body damaged on disk comes back as a pointer, as
    /// the store's own reads give it; the store sets it aside when it next
    /// reads the row).
    public func row(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> Row? {
        try RowRecord.load(db, ns, key, withBody: true)?.decode(path: path).row
    }

    /// Every live row of a namespace, bodies included where resident.
    public func rows(_ ns: Namespace) throws(StoreError) -> [Row] {
        var out: [Row] = []
        for (key, _) in try RangeReads.leafList(db, ns, [], nil) {
            if let row = try row(ns, key) { out.append(row) }
        }
        return out
    }
}

extension ReplicaStore {
    /// Runs `body` on a consistent snapshot of the replica (see `ReadSnapshot`).
    public func withReadSnapshot<T>(_ body: (ReadSnapshot) throws -> T) throws -> T {
        try reader.run(body)
    }
}

/// The reader connection, opened on first use, one snapshot at a time.
final class SnapshotReader: @unchecked Sendable {
    private let path: String
    private let vfs: PowerLossDisk?
    private let lock = NSLock()
    private var connection: Connection?

    init(path: String, vfs: PowerLossDisk?) {
        self.path = path
        self.vfs = vfs
    }

    func run<T>(_ body: (ReadSnapshot) throws -> T) throws -> T {
        try transaction { db in try body(ReadSnapshot(db: db, path: path)) }
    }

    /// `body` on the reader connection inside one read transaction: its
    /// queries see one committed state, and take the file's locks once.
    func read<T>(_ body: (Connection) throws(StoreError) -> T) throws(StoreError) -> T {
        do { return try transaction(body) } catch let e as StoreError { throw e } catch { throw StoreError(.invalidInput, "\(error)") }
    }

    private func transaction<T>(_ body: (Connection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if connection == nil { connection = try Connection(path: path, readOnly: true, vfs: vfs) }
        let db = connection!
        try db.run("BEGIN")
        defer { try? db.run("COMMIT") }
        return try body(db)
    }
}

/// The range reads, on whichever connection: the writer's, under the
/// store's lock, or a snapshot's.
enum RangeReads {
    static func bucket(_ db: Connection, _ ns: Namespace, level: Int, prefix: Int64) throws(StoreError) -> Fingerprint {
        try db.queryOne("SELECT count, sum FROM buckets WHERE ns = ? AND level = ? AND prefix = ?",
                        [.int(Int64(ns.rawValue)), .int(Int64(level)), .int(prefix)]) {
            $0.fingerprint(countColumn: 0)
        } ?? .zero
    }

    /// Each namespace's whole-range fingerprint.
    static func topBuckets(_ db: Connection) throws(StoreError) -> [Namespace: Fingerprint] {
        var top: [Namespace: Fingerprint] = [:]
        for ns in Namespace.allCases { top[ns] = try bucket(db, ns, level: 0, prefix: 0) }
        return top
    }

    static func leafList(_ db: Connection, _ ns: Namespace, _ lo: [UInt8], _ hi: [UInt8]?) throws(StoreError) -> [(RowKey, [UInt8])] {
        var sql = "SELECT key, leaf FROM rows WHERE ns = ? AND tombstone = 0 AND key >= ?"
        var args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(lo)]
        if let hi { sql += " AND key < ?"; args.append(.blob(hi)) }
        sql += " ORDER BY key"
        return try db.query(sql, args) { (ID16(bytes: $0.blob(0) ?? [])!, $0.blob(1) ?? []) }
    }

    static func tombstones(_ db: Connection, _ ns: Namespace, in range: KeyPrefix, path: String) throws(StoreError) -> [Row] {
        var sql = "SELECT key, vv FROM rows WHERE ns = ? AND tombstone = 1 AND key >= ?"
        var args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(range.lowerBound)]
        if let upper = range.upperBound { sql += " AND key < ?"; args.append(.blob(upper)) }
        sql += " ORDER BY key"
        return try db.query(sql, args) { s throws(StoreError) in
            do {
                return Row.tombstone(ns, ID16(bytes: s.blob(0) ?? [])!, context: try VersionVector(cbor: try CBORReader.decode(s.blob(1) ?? [])))
            } catch { throw StoreError(.corrupt, "\(path): tombstone in \(ns) does not decode: \(error)") }
        }
    }

    static func childFingerprints(_ db: Connection, _ ns: Namespace, of range: KeyPrefix) throws(StoreError) -> [Fingerprint] {
        precondition(range.level < KeyPrefix.maxLevel)
        var out = [Fingerprint](repeating: .zero, count: 16)
        let level = range.level + 1
        guard level <= Buckets.maxLevel else {
            for (key, leaf) in try leafList(db, ns, range.lowerBound, range.upperBound) { out[range.childIndex(of: key)] += Fingerprint(leaf: leaf) }
            return out
        }
        let parent = range.value
        let rows = try db.query("SELECT prefix, count, sum FROM buckets WHERE ns = ? AND level = ? AND prefix >= ? AND prefix < ?",
                                [.int(Int64(ns.rawValue)), .int(Int64(level)), .int(parent << 4), .int((parent + 1) << 4)]) {
            (Int($0.int(0) & 0x0F), $0.fingerprint(countColumn: 1))
        }
        for (child, fp) in rows { out[child] = fp }
        return out
    }
}
