import CSQLite

/// Every failure of the store, able to say in one line what failed, on
/// what, and what the user can do.
public struct StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        case locked          // another process holds the database
        case corrupt         // the file is damaged or not a database
        case foreign         // a valid SQLite file that is not a quire replica
        case diskFull
        case readOnly
        case permission
        case notFound
        case invalidInput
        case conflict
        case sqlite(Int32)
        /// A system call outside SQLite failed (its errno).
        case system(Int32)
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// Maps an SQLite result code to a kind and a sentence a person can act on.
    static func fromSQLite(code: Int32, detail: String, path: String, sql: String?) -> StoreError {
        let primary = code & 0xFF
        let context = sql.map { " (while running: \($0.prefix(60)))" } ?? ""
        switch primary {
        case SQLITE_BUSY, SQLITE_LOCKED:
            return StoreError(.locked, "database \(path) is locked by another process; try again when it finishes")
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StoreError(.corrupt, "database \(path) is damaged or not a database (\(detail)); restore it from a backup or move it aside")
        case SQLITE_FULL:
            return StoreError(.diskFull, "disk full while writing \(path); nothing was changed, free some space and retry")
        case SQLITE_READONLY:
            return StoreError(.readOnly, "database \(path) is read-only (\(detail))")
        case SQLITE_PERM, SQLITE_AUTH:
            return StoreError(.permission, "permission denied on \(path) (\(detail))")
        case SQLITE_CANTOPEN:
            return StoreError(.permission, "cannot open database \(path) (\(detail)); check that the directory exists and is writable")
        case SQLITE_IOERR:
            if code == SQLITE_IOERR | (13 << 8) /* SQLITE_IOERR_WRITE? */ || detail.contains("disk") {
                return StoreError(.diskFull, "I/O error writing \(path): \(detail); nothing was changed")
            }
            return StoreError(.sqlite(code), "I/O error on \(path): \(detail)\(context)")
        default:
            return StoreError(.sqlite(code), "database error on \(path): \(detail)\(context)")
        }
    }
}
