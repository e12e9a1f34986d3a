import Foundation
import QuireCore

/// The replica: one SQLite database per device, in WAL mode. It is the only
/// code that talks to SQLite. Every mutation is one transaction that writes
/// the row, its version, its leaf, the fingerprint buckets and (for local
/// edits) the outbox record together.
public final class ReplicaStore: @unchecked Sendable {
    public let path: String
    public let deviceID: DeviceID
    let clock: any Clock
    let random: any RandomSource
    // One connection, serialised: FUSE callbacks and the sync loop come in
    // on many threads. Cross-process safety is SQLite's own locking.
    let lock = NSRecursiveLock()
    let db: Connection
    let commitObservers = CommitObservers()
    /// The second connection consistent reads run on (`ReadSnapshot`).
    let reader: SnapshotReader
    /// Trash and earlier versions: limits and prune timing (KeptVersions.swift).
    let keptPolicy = KeptPolicy()

    /// Opens (or with `create`, creates) the replica at `path`.
    /// `restoring`: a restore put this file in place and calls
    /// `finishRestore` next, which mints the new incarnation and records the
    /// file; any other open of a file that is not the one this device last
    /// recorded mints one at once (ReplicaStore+FileIdentity.swift).
    public init(path: String, deviceID: DeviceID, create: Bool = false,
                clock: any Clock = SystemClock(), random: any RandomSource = SystemRandom(),
                vfs: PowerLossDisk? = nil, restoring: Bool = false) throws(StoreError) {
        self.path = path
        self.deviceID = deviceID
        self.clock = clock
        self.random = random
        let isNew = !FileManager.default.fileExists(atPath: path)
        if !create && isNew {
            throw StoreError(.notFound, "no replica at \(path); run 'quire init' first")
        }
        if create && vfs == nil && isNew {
            // Made 0600 before SQLite opens it: SQLite gives the WAL and SHM
            // files the database's mode, so all three are owner-only
            // whatever the umask of the process that made them.
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw StoreError(.permission, "cannot create \(path): \(String(cString: strerror(errno)))") }
            fchmod(fd, 0o600)
            close(fd)
        }
        db = try Connection(path: path, vfs: vfs)
        reader = SnapshotReader(path: path, vfs: vfs)
        try prepareSchema(create: create)
        if isNew {
            try write { ctx in try ctx.recordFileIdentity() }
        } else if !restoring {
            try checkFileIdentity()
        }
    }

    private func prepareSchema(create: Bool) throws(StoreError) {
        // The first read is where SQLite notices a file that is not a database.
        let appID = try db.queryOne("PRAGMA application_id") { $0.int(0) } ?? 0
        let tableCount = try db.queryOne("SELECT count(*) FROM sqlite_master") { $0.int(0) } ?? 0
        if appID != Schema.applicationID {
            if appID != 0 || tableCount > 0 {
                throw StoreError(.foreign, "\(path) is an SQLite database but not a quire replica; refusing to touch it")
            }
            if !create {
                throw StoreError(.foreign, "\(path) is empty, not a quire replica; run 'quire init'")
            }
        }
        try db.execute("PRAGMA journal_mode=WAL")
        // FULL: every commit fsyncs the WAL before it returns, so whatever a
        // sibling is shown (advertised, served, acked) or fsync/close reports
        // done is on disk (rule 4). NORMAL (a commit survives a killed
        // process, not a power cut) only for the benchmarks' side-by-side.
        try db.execute("PRAGMA synchronous=" + (ProcessInfo.processInfo.environment["QUIRE_BENCH_SYNCHRONOUS"] == "NORMAL" ? "NORMAL" : "FULL"))
        try db.execute("PRAGMA foreign_keys=ON")
        // Random row keys spread index writes over the whole B-tree; a larger
        // page cache keeps bulk imports from thrashing.
        try db.execute("PRAGMA cache_size=-65536")
        let version = Int(try db.queryOne("PRAGMA user_version") { $0.int(0) } ?? 0)
        if version == 0 {
            // Offloading frees body pages; incremental vacuum hands them back
            // to the file system. It must be chosen before the first table.
            try db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        }
        let migrations = Schema.all
        if version > migrations.count {
            throw StoreError(.foreign, "\(path) was written by a newer quire (schema \(version)); upgrade quire")
        }
        for (index, migration) in migrations.enumerated() where index >= version {
            do {
                try db.transaction {
                    try db.execute(migration.sql)
                    try migration.convert?(db, random)
                    try db.execute("PRAGMA user_version=\(index + 1)")
                    try db.execute("PRAGMA application_id=\(Schema.applicationID)")
                }
            } catch let e as StoreError { throw e } catch { throw StoreError(.sqlite(-1), "\(error)") }
        }
    }

    /// Runs `body` under the lock inside one immediate transaction.
    /// Observers hear of the commit once the lock is released.
    /// `zeroingFreedPages: false` lets SQLite leave pages the transaction
    /// frees as they are (its secure delete, on in Debian's build, writes
    /// them over with zeros first, which needs room a full disk lacks).
    func write<T>(zeroingFreedPages: Bool = true, _ body: (inout WriteContext) throws -> T) throws(StoreError) -> T {
        lock.lock()
        let value: T
        do {
            defer { lock.unlock() }
            let saved = zeroingFreedPages ? nil : try db.queryOne("PRAGMA secure_delete") { $0.int(0) }
            if saved != nil { try db.execute("PRAGMA secure_delete = FAST") }
            defer { if let saved { try? db.execute("PRAGMA secure_delete = \(saved)") } }
            value = try transactionBody(body)
        }
        commitObservers.notify()
        return value
    }

    private func transactionBody<T>(_ body: (inout WriteContext) throws -> T) throws(StoreError) -> T {
        do {
            return try db.transaction {
                var ctx = try WriteContext(store: self)
                let value = try body(&ctx)
                try ctx.finish()
                return value
            }
        } catch let e as StoreError {
            throw e
        } catch let e as CBORError {
            throw StoreError(.corrupt, "\(path): stored row does not decode: \(e)")
        } catch {
            throw StoreError(.invalidInput, "\(error)")
        }
    }

    func read<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: - Local edits

    /// Writes `content` as a local edit: bumps this device's counter, stamps
    /// updatedAt and the editor, and records the outbox note, all in one
    /// transaction. Writing content equal to what is stored is a no-op (no
    /// new version), so saving an unchanged file does not make a version.
    @discardableResult
    public func put(_ content: RowContent, key explicitKey: RowKey? = nil) throws(StoreError) -> Row {
        try write { ctx in try ctx.putLocal(content, key: explicitKey) }
    }

    /// Many new rows as local edits in one transaction (bulk import).
    @discardableResult
    public func putMany(_ contents: [RowContent]) throws(StoreError) -> [Row] {
        // Keys drawn in one call: one trip to the system's randomness, not one per row.
        let randomness = random.bytes(16 * contents.count)
        let ahead = BodiesAhead.start(contents)
        defer { ahead?.stop() }
        return try write { ctx in
            ctx.bodiesAhead = ahead
            var rows: [Row] = []
            rows.reserveCapacity(contents.count)
            for (i, c) in contents.enumerated() {
                let key = ID16(bytes: Array(randomness[(16 * i)..<(16 * i + 16)]))!
                rows.append(try ctx.putLocal(c, key: nil, freshRandomKey: key))
            }
            return rows
        }
    }

    /// Deletes a row: writes a tombstone with this device's counter bumped.
    /// Tombstones are never dropped here; only the barrier may collect them.
    @discardableResult
    public func delete(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> Row {
        try deleteFromMount(namespace, key).row
    }

    // MARK: - Reads

    /// A row, bodies included where resident (a body that fails its hash
    /// is set aside and the row comes back as a pointer: see +Damage).
    public func row(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> Row? {
        try loadRow(namespace, key).row
    }

    /// A row and the change number of that very version, read in one
    /// query (nil: no row). Two reads could straddle a version committed
    /// in between (the sync engine, another process) and pair one
    /// version's text with another's number, and a reader's pages and
    /// baseline are tracked by that number.
    public func rowWithChangeNumber(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> (row: Row, changeNumber: Int64)? {
        let loaded = try loadRow(namespace, key)
        return loaded.row.map { ($0, loaded.seq) }
    }

    /// A row without its note body (the first note head comes back as a
    /// pointer, its length known), with the change number of that version
    /// (read together, as `rowWithChangeNumber`): its title, tags, times and
    /// place, for a caller that replaces the body anyway, at no inflate or
    /// hash of the old one. Other namespaces keep their text in the heads:
    /// read whole.
    public func rowWithoutBody(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> (row: Row, changeNumber: Int64)? {
        guard namespace == .notebook else { return try rowWithChangeNumber(namespace, key) }
        return try read { () throws(StoreError) -> (row: Row, changeNumber: Int64)? in
            guard let record = try RowRecord.load(db, namespace, key, withBody: false) else { return nil }
            var row = try record.row(path: path)
            if let first = row.heads.first, case .note(var n) = first.content, n.body == nil {
                n.length = record.size
                row.replaceHeadContent(first.dot, with: .note(n))
            }
            return (row, record.seq)
        }
    }

    /// The change number of a live row (it moves with every new version,
    /// from here or a sibling); nil for no row or a tombstone.
    public func changeNumber(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> Int64? {
        try read { () throws(StoreError) -> Int64? in
            try db.queryOne("SELECT seq FROM rows WHERE ns = ? AND key = ? AND tombstone = 0",
                            [.int(Int64(namespace.rawValue)), .blob(key.bytes)]) { $0.int(0) }
        }
    }

    /// Live rows (and, if asked, tombstones) of a namespace, in key order,
    /// without note bodies (listing must not read every body).
    public func summaries(_ namespace: Namespace, includeTombstones: Bool = false) throws(StoreError) -> [RowSummary] {
        try read { () throws(StoreError) -> [RowSummary] in
            try db.query("SELECT key, name, size, updated, tombstone, offloaded, seq, kind, parent, mtime, versions FROM rows WHERE ns = ?" +
                         (includeTombstones ? "" : " AND tombstone = 0") + " ORDER BY key", [.int(Int64(namespace.rawValue))]) { s in
                RowSummary(namespace: namespace, key: ID16(bytes: s.blob(0) ?? [])!, name: s.text(1) ?? "", size: Int(s.int(2)),
                           updatedAt: Timestamp(seconds: s.int(3)), isTombstone: s.int(4) != 0, isOffloaded: s.int(5) != 0, seq: s.int(6),
                           place: RowPlace.read(s, from: 7))
            }
        }
    }

    /// Live rows whose display name equals `name` (titles need not be unique).
    public func find(_ namespace: Namespace, name: String) throws(StoreError) -> [RowKey] {
        try read { () throws(StoreError) -> [RowKey] in
            try db.query("SELECT key FROM rows WHERE ns = ? AND tombstone = 0 AND name = ? ORDER BY key",
                         [.int(Int64(namespace.rawValue)), .text(name)]) { ID16(bytes: $0.blob(0) ?? [])! }
        }
    }

    /// Counts of live rows and tombstones.
    public func counts(_ namespace: Namespace) throws(StoreError) -> (live: Int, tombstones: Int) {
        // One read transaction on the reader connection: both counts of one state.
        try reader.read { db throws(StoreError) -> (live: Int, tombstones: Int) in
            // Both counts come from indexes alone (rows_key, rows_tombstones):
            // no row is read, so a status stays cheap at any size.
            let ns: [SQLValue] = [.int(Int64(namespace.rawValue))]
            let all = try db.queryOne("SELECT count(*) FROM rows WHERE ns = ?", ns) { Int($0.int(0)) } ?? 0
            let tombstones = try db.queryOne("SELECT count(*) FROM rows WHERE ns = ? AND tombstone = 1", ns) { Int($0.int(0)) } ?? 0
            return (all - tombstones, tombstones)
        }
    }

    /// Rows changed (by anyone: local edits, sync, another process) after
    /// change number `seq`, for the mount to invalidate its caches. A row a
    /// barrier collected since comes as a tombstone.
    public func changes(since seq: Int64) throws(StoreError) -> [RowSummary] {
        try read { () throws(StoreError) -> [RowSummary] in
            try db.query("""
                SELECT ns, key, name, size, updated, tombstone, offloaded, seq, kind, parent, mtime, versions FROM rows WHERE seq > ?1
                UNION ALL SELECT ns, key, '', 0, at, 1, 0, seq, 0, NULL, NULL, 1 FROM collected WHERE seq > ?1
                ORDER BY 8
                """, [.int(seq)]) { s in
                RowSummary(namespace: Namespace(rawValue: UInt8(s.int(0)))!, key: ID16(bytes: s.blob(1) ?? [])!, name: s.text(2) ?? "",
                           size: Int(s.int(3)), updatedAt: Timestamp(seconds: s.int(4)), isTombstone: s.int(5) != 0,
                           isOffloaded: s.int(6) != 0, seq: s.int(7), place: RowPlace.read(s, from: 8))
            }
        }
    }

    /// The latest change number (advances with every committed write).
    public func changeSequence() throws(StoreError) -> Int64 {
        try read { () throws(StoreError) -> Int64 in try db.queryOne("SELECT value FROM meta WHERE name = 'seq'") { $0.int(0) } ?? 0 }
    }

    /// Makes everything committed so far (by any connection) durable against
    /// power loss: an fsync of the WAL and the database file, whatever the
    /// synchronous mode, never a passive checkpoint (which skips its fsync
    /// when a reader holds the WAL). Acks and fsync(2) rely on it.
    public func sync() throws(StoreError) {
        try read { () throws(StoreError) in try db.syncToDisk() }
    }

    /// Checkpoints the WAL fully and truncates it (benchmarks, backups, and
    /// a mount or sync that stops, so the database file alone holds every row).
    public func compact() throws(StoreError) {
        try read { () throws(StoreError) in try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// A consistent copy of the database (SQLite's online backup API).
    public func backup(to destination: String) throws(StoreError) {
        try read { () throws(StoreError) in try db.backup(to: destination) }
    }

    // MARK: - Outbox

    /// Local edits not yet advertised: (outbox id, namespace, last key).
    /// One record covers all edits of one namespace in one transaction.
    public func pendingOutbox(limit: Int = 10_000) throws(StoreError) -> [(id: Int64, namespace: Namespace, key: RowKey)] {
        try read { () throws(StoreError) -> [(id: Int64, namespace: Namespace, key: RowKey)] in
            try db.query("SELECT id, ns, key FROM outbox ORDER BY id LIMIT ?", [.int(Int64(limit))]) {
                (id: $0.int(0), namespace: Namespace(rawValue: UInt8($0.int(1)))!, key: ID16(bytes: $0.blob(2) ?? [])!)
            }
        }
    }

    /// How many local edits wait to be advertised.
    public func pendingEdits() throws(StoreError) -> Int {
        try read { () throws(StoreError) -> Int in Int(try db.queryOne("SELECT coalesce(sum(edits), 0) FROM outbox") { $0.int(0) } ?? 0) }
    }

    /// Clears outbox records up to `id` once an advertisement covering them went out.
    public func clearOutbox(through id: Int64) throws(StoreError) {
        try write { ctx in try ctx.db.run("DELETE FROM outbox WHERE id <= ?", [.int(id)]) }
    }
}

/// What listing needs about a row, without its content.
public struct RowSummary: Equatable, Sendable {
    public var namespace: Namespace
    public var key: RowKey
    public var name: String
    public var size: Int
    public var updatedAt: Timestamp
    public var isTombstone: Bool
    public var isOffloaded: Bool
    public var seq: Int64
    /// Where a notebook row sits in the folder tree (the defaults elsewhere).
    public var place = RowPlace()

    public init(namespace: Namespace, key: RowKey, name: String, size: Int, updatedAt: Timestamp, isTombstone: Bool,
                isOffloaded: Bool, seq: Int64, place: RowPlace = RowPlace()) {
        self.namespace = namespace
        self.key = key
        self.name = name
        self.size = size
        self.updatedAt = updatedAt
        self.isTombstone = isTombstone
        self.isOffloaded = isOffloaded
        self.seq = seq
        self.place = place
    }
}

/// A notebook row's kind and place in the folder tree, and how many
/// versions it holds (an attachment with several shows conflict copies).
public struct RowPlace: Equatable, Sendable {
    public var kind: NoteKind = .note
    public var folder: RowKey?
    public var modifiedAt: Int64?
    public var versions = 1

    public init(kind: NoteKind = .note, folder: RowKey? = nil, modifiedAt: Int64? = nil, versions: Int = 1) {
        self.kind = kind
        self.folder = folder
        self.modifiedAt = modifiedAt
        self.versions = versions
    }

    /// Read from the `kind, parent, mtime, versions` columns starting at `column`.
    static func read(_ s: Statement, from column: Int32) -> RowPlace {
        RowPlace(kind: NoteKind(rawValue: UInt8(clamping: s.int(column))) ?? .note, folder: s.blob(column + 1).flatMap(ID16.init(bytes:)),
                 modifiedAt: s.isNull(column + 2) ? nil : s.int(column + 2), versions: Int(s.int(column + 3)))
    }
}
