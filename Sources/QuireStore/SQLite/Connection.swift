import CSQLite
import Foundation

/// A value bound to or read from SQLite.
public enum SQLValue: Equatable, Sendable {
    case int(Int64)
    case blob([UInt8])
    case text(String)
    case null
}

/// One SQLite connection. The only type in Quire that holds an sqlite3
/// handle; callers serialise access (ReplicaStore holds it under a lock).
final class Connection {
    private var handle: OpaquePointer?
    let path: String
    private var cache: [StatementText: Statement] = [:]

    /// The disk this connection's files live on, when not the normal one
    /// (held so that the VFS outlives every file opened through it).
    private let disk: PowerLossDisk?

    init(path: String, readOnly: Bool = false, vfs disk: PowerLossDisk? = nil) throws(StoreError) {
        self.path = path
        self.disk = disk
        if let disk, disk.deadFilesOpen > 0 {
            throw StoreError(.locked, "cannot open \(path): \(disk.deadFilesOpen) files opened before the power cut on \(disk.name) are still open; close every connection opened before powerLoss() first")
        }
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, disk?.name)
        handle = db
        if rc != SQLITE_OK {
            let detail = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            handle = nil
            throw StoreError.fromSQLite(code: rc, detail: detail, path: path, sql: nil)
        }
        sqlite3_extended_result_codes(db, 1)
        // Another process (the mount daemon, a CLI call) may hold the write
        // lock briefly; wait for it rather than failing at once.
        let timeout = ProcessInfo.processInfo.environment["QUIRE_BUSY_TIMEOUT_MS"].flatMap { Int32($0) } ?? 5000
        sqlite3_busy_timeout(db, timeout)
    }

    deinit {
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
    }

    func execute(_ sql: String) throws(StoreError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let detail = err.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(err)
            throw StoreError.fromSQLite(code: rc, detail: detail, path: path, sql: sql)
        }
    }

    /// A prepared statement, cached by its SQL text.
    func prepare(_ sql: String) throws(StoreError) -> Statement {
        let text = StatementText(sql)
        if let s = cache[text] {
            s.reset()
            return s
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, sql) }
        let s = Statement(stmt, connection: self, sql: sql)
        cache[text] = s
        return s
    }

    /// Runs one statement with arguments, discarding results.
    func run(_ sql: String, _ args: [SQLValue] = []) throws(StoreError) {
        let s = try prepare(sql)
        try s.bind(args)
        while try s.step() {}
    }

    /// Runs a query and maps each row.
    func query<T>(_ sql: String, _ args: [SQLValue] = [], _ map: (Statement) throws(StoreError) -> T) throws(StoreError) -> [T] {
        let s = try prepare(sql)
        try s.bind(args)
        var out: [T] = []
        while try s.step() { out.append(try map(s)) }
        return out
    }

    func queryOne<T>(_ sql: String, _ args: [SQLValue] = [], _ map: (Statement) throws(StoreError) -> T) throws(StoreError) -> T? {
        let s = try prepare(sql)
        try s.bind(args)
        guard try s.step() else { return nil }
        let value = try map(s)
        s.reset()
        return value
    }

    /// BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any error: the whole body is
    /// one write or none of it is.
    /// The three statements are prepared once (`run`): a save by rename
    /// pays no parse for them.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try run("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try run("COMMIT")
            return value
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    /// fsync of the WAL (or rollback journal) and of the database file,
    /// through SQLite's own handles: when it returns, everything committed so
    /// far, by any connection, is on disk. Unlike a passive checkpoint it
    /// always syncs (a checkpoint that a reader holds back syncs nothing).
    func syncToDisk() throws(StoreError) {
        for op in [SQLITE_FCNTL_JOURNAL_POINTER, SQLITE_FCNTL_FILE_POINTER] {
            var file: UnsafeMutablePointer<sqlite3_file>? = nil
            guard sqlite3_file_control(handle, "main", op, &file) == SQLITE_OK,
                  let file, let sync = file.pointee.pMethods?.pointee.xSync else { continue }
            let rc = sync(file, SQLITE_SYNC_NORMAL)
            if rc != SQLITE_OK {
                throw StoreError.fromSQLite(code: rc, detail: "fsync failed", path: path, sql: op == SQLITE_FCNTL_FILE_POINTER ? "fsync database" : "fsync WAL")
            }
        }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    var lastMessage: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection" }

    func error(_ rc: Int32, _ sql: String?) -> StoreError {
        StoreError.fromSQLite(code: sqlite3_extended_errcode(handle) != 0 ? sqlite3_extended_errcode(handle) : rc,
                              detail: lastMessage, path: path, sql: sql)
    }

    /// SQLite's online backup API: copies this database into `destination`
    /// page by page, consistent even while others write.
    func backup(to destinationPath: String) throws(StoreError) {
        let dest = try Connection(path: destinationPath)
        guard let b = sqlite3_backup_init(dest.handle, "main", handle, "main") else {
            throw dest.error(sqlite3_errcode(dest.handle), "backup")
        }
        var rc: Int32
        repeat {
            rc = sqlite3_backup_step(b, 256)
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { sqlite3_sleep(20) }
        } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
        sqlite3_backup_finish(b)
        if rc != SQLITE_DONE { throw dest.error(rc, "backup") }
    }
}

/// A prepared statement; finalized when released.
final class Statement {
    private let stmt: OpaquePointer
    private unowned let connection: Connection
    let sql: String

    init(_ stmt: OpaquePointer, connection: Connection, sql: String) {
        self.stmt = stmt
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(stmt) }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func bind(_ args: [SQLValue]) throws(StoreError) {
        for (i, value) in args.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .int(let v): rc = sqlite3_bind_int64(stmt, index, v)
            case .text(let s): rc = sqlite3_bind_text(stmt, index, s, -1, csqlite_transient())
            case .blob(let b):
                rc = b.withUnsafeBytes { buf in
                    // An empty blob must stay a blob, not NULL.
                    sqlite3_bind_blob(stmt, index, buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(b.count), csqlite_transient())
                }
            case .null: rc = sqlite3_bind_null(stmt, index)
            }
            if rc != SQLITE_OK { throw connection.error(rc, sql) }
        }
    }

    /// Advances; true while a row is available.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let e = connection.error(rc, sql)
            sqlite3_reset(stmt)
            throw e
        }
    }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(stmt, column) else { return nil }
        return String(cString: p)
    }

    func blob(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let n = Int(sqlite3_column_bytes(stmt, column))
        guard n > 0, let p = sqlite3_column_blob(stmt, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}

/// A statement's SQL as the cache's key. Hashing every byte of a long
/// statement costs more than running a small one: the length and three
/// words sampled from it tell statements apart well enough (equal samples
/// cost a full comparison, never a wrong statement).
private struct StatementText: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            guard bytes.count >= 8 else { return hasher.combine(bytes: UnsafeRawBufferPointer(bytes)) }
            let raw = UnsafeRawBufferPointer(bytes)
            hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: bytes.count / 2 - 4, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
        }
    }
}
