import Foundation
import QuireCore

/// Trash and earlier versions: the text a notebook row had before a write
/// replaced it or deleted it, kept on this device only, for a while.
///
/// Never hashed, never synced, never in an anchor (rule 1: a device's own
/// memory of what it held is not something a merge converges): each device
/// keeps what it held. Written in the transaction of the change that
/// replaced the text (rule 4), from `WriteContext.writeRow`, the one place
/// a row is written, so a local edit and a sibling's change arriving by sync
/// are kept alike. Bounded by age and by size (`KeptLimits`); the oldest go
/// first. See mount/README.md, "Trash and earlier versions".
public enum KeptReason: Int64, Sendable, CaseIterable {
    case editedHere = 0
    case editedElsewhere = 1
    case deletedHere = 2
    case deletedElsewhere = 3

    public var isDeletion: Bool { self == .deletedHere || self == .deletedElsewhere }

    /// What `quire trash` says.
    public var words: String {
        switch self {
        case .editedHere: return "edited here"
        case .editedElsewhere: return "edited on another device"
        case .deletedHere: return "deleted here"
        case .deletedElsewhere: return "deleted on another device"
        }
    }

    /// The same, as one word for JSON.
    public var code: String {
        switch self {
        case .editedHere: return "edited-here"
        case .editedElsewhere: return "edited-elsewhere"
        case .deletedHere: return "deleted-here"
        case .deletedElsewhere: return "deleted-elsewhere"
        }
    }
}

/// Where a kept text shows: a deleted file in `.quire/trash/`, every other
/// kept text in `.quire/versions/`.
public enum KeptPlace: String, Sendable, CaseIterable {
    case trash, versions
}

/// One kept text, without its bytes.
public struct KeptVersion: Equatable, Sendable {
    /// Never reused (AUTOINCREMENT): the mount derives inode numbers from it.
    public var id: Int64
    public var key: RowKey
    public var kind: NoteKind
    public var title: String
    /// The titles of the folders it was in, from the top of the notebook.
    public var folderPath: [String]
    /// The folder row it was in (nil: the top).
    public var folderKey: RowKey?
    /// When this device replaced or deleted it.
    public var keptAt: Timestamp
    /// When that text was written.
    public var writtenAt: Timestamp
    /// Its file time set by utimensat, if one was (nanoseconds).
    public var modifiedAt: Int64?
    public var reason: KeptReason
    /// Bytes as written.
    public var size: Int
    /// Bytes the replica spends on it (deflated where that saves space).
    public var storedSize: Int
    public var tags: [String]
    /// Whether its row is live now; false also for a row the barrier collected.
    public var isRowLive: Bool
    /// Whether its row is still in the replica (live or a tombstone).
    public var isRowPresent: Bool
    /// Trash: the deletion kept last for a row that is not live now.
    /// Versions: everything else.
    public var place: KeptPlace = .versions
}

/// How much is kept: for how long, and how many bytes at most (the oldest
/// are dropped first). Zero for either keeps nothing.
public struct KeptLimits: Equatable, Sendable {
    public static let defaultDays = 30
    public static let defaultMebibytes = 512

    public var days: Int
    public var bytes: Int64

    public init(days: Int = KeptLimits.defaultDays, mebibytes: Int = KeptLimits.defaultMebibytes) {
        self.days = max(0, days)
        self.bytes = Int64(max(0, mebibytes)) << 20
    }

    public var isOff: Bool { days == 0 || bytes == 0 }
}

/// What `quire status` shows.
public struct KeptUsage: Equatable, Sendable {
    public var trashFiles = 0
    public var trashBytes: Int64 = 0
    public var versions = 0
    public var versionsBytes: Int64 = 0
    public var limits = KeptLimits()
    /// The last prune that failed (a full disk): it is tried again later,
    /// and what it would have dropped stays.
    public var pruneProblem: String?
}

/// What a prune dropped.
public struct KeptPruning: Equatable, Sendable {
    public var expired = 0
    public var overSize = 0
    public var freedBytes: Int64 = 0
    /// What the kept texts hold after the prune.
    public var keptBytes: Int64 = 0
}

/// The limits this store applies and when it last pruned: per process,
/// set from the device's prefs when the device is opened.
final class KeptPolicy: @unchecked Sendable {
    private let lock = NSLock()
    private var _limits = KeptLimits()
    private var _lastPrune: Int64?
    /// What the kept texts hold, as the last prune found it plus at most
    /// what was kept since (nil before the first prune): the size limit is
    /// checked against it at every text kept, without summing the table.
    private var _keptBytes: Int64?
    private var _problem: String?
    /// The age limit is applied in the write path at most this often (and
    /// at the first write after opening): it is a range delete, but need
    /// not run per edit. The size limit is applied as soon as it is passed.
    static let pruneInterval: Int64 = 300

    var limits: KeptLimits {
        get { lock.lock(); defer { lock.unlock() }; return _limits }
        set { lock.lock(); _limits = newValue; _lastPrune = nil; _keptBytes = nil; lock.unlock() }
    }

    var problem: String? {
        get { lock.lock(); defer { lock.unlock() }; return _problem }
        set { lock.lock(); _problem = newValue; lock.unlock() }
    }

    /// Whether a prune is due at `now` (the interval passed, or what is
    /// kept may be over the size limit: the limit is a limit, never a
    /// target overshot for minutes); if so, it counts as done now.
    func claimPrune(at now: Int64) -> Bool {
        lock.lock(); defer { lock.unlock() }
        if let last = _lastPrune, now >= last, now - last < Self.pruneInterval, let kept = _keptBytes, kept <= _limits.bytes { return false }
        _lastPrune = now
        return true
    }

    func noteKept(bytes: Int) {
        lock.lock(); _keptBytes = _keptBytes.map { $0 + Int64(bytes) }; lock.unlock()
    }

    func notePruneFailed() {
        lock.lock(); _keptBytes = 0; lock.unlock()
    }

    /// What a prune that succeeded left.
    func notePruned(leaving bytes: Int64) {
        lock.lock(); _keptBytes = bytes; lock.unlock()
    }
}

extension ReplicaStore {
    /// How long and how much this store keeps (from the device's prefs;
    /// `DeviceHome.open` sets it). Applies from the next write.
    public var keptLimits: KeptLimits {
        get { keptPolicy.limits }
        set { keptPolicy.limits = newValue }
    }

    /// Every kept text (deleted files and earlier versions), oldest first,
    /// without bytes.
    public func keptVersions() throws(StoreError) -> [KeptVersion] {
        try read { () throws(StoreError) -> [KeptVersion] in try KeptTable.list(db, path: path) }
    }

    /// The bytes of a kept text, checked against the hash they had.
    public func keptBytes(_ id: Int64) throws(StoreError) -> [UInt8] {
        try read { () throws(StoreError) -> [UInt8] in try KeptTable.bytes(db, id, path: path) }
    }

    /// The text a row had when this device deleted it, from the trash (nil:
    /// its last kept text is not that deletion, or none was kept: the trash
    /// is off, the body was offloaded, or it was pruned).
    public func deletedText(_ key: RowKey) throws(StoreError) -> [UInt8]? {
        try read { () throws(StoreError) -> [UInt8]? in
            guard let (id, reason) = try db.queryOne(
                "SELECT id, reason FROM kept WHERE key = ? AND kind != \(NoteKind.folder.rawValue) ORDER BY id DESC LIMIT 1",
                [.blob(key.bytes)], { ($0.int(0), $0.int(1)) }), reason == KeptReason.deletedHere.rawValue else { return nil }
            return try KeptTable.bytes(db, id, path: path)
        }
    }

    /// Counts and disk use of trash and versions, and the limits (one
    /// aggregate: `.quire/status` asks at every read).
    public func keptUsage() throws(StoreError) -> KeptUsage {
        var usage = KeptUsage(limits: keptLimits, pruneProblem: keptPolicy.problem)
        let groups = try read { () throws(StoreError) -> [(Bool, Int, Int64)] in
            try db.query("SELECT \(KeptTable.isTrash), count(*), coalesce(sum(k.stored), 0) \(KeptTable.from) GROUP BY 1") {
                ($0.int(0) != 0, Int($0.int(1)), $0.int(2))
            }
        }
        for (isTrash, count, bytes) in groups {
            if isTrash { usage.trashFiles = count; usage.trashBytes = bytes } else { usage.versions = count; usage.versionsBytes = bytes }
        }
        return usage
    }

    /// Drops what is older than the limits allow, then the oldest until the
    /// rest fits. One transaction: a failure (a full disk) drops nothing.
    @discardableResult
    public func pruneKept() throws(StoreError) -> KeptPruning {
        let result = try write { ctx in try KeptTable.prune(ctx.db, limits: keptLimits, now: ctx.now.seconds) }
        keptPolicy.notePruned(leaving: result.keptBytes)
        keptPolicy.problem = nil
        return result
    }
}

/// The `kept` table: SQL only, no policy.
enum KeptTable {
    /// Appended to `Schema.all`. `stored` sits before the blob so size sums
    /// read the covering index, not the bodies.
    static let migration = """
        CREATE TABLE kept(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL, stored INTEGER NOT NULL,
            key BLOB NOT NULL, kind INTEGER NOT NULL, reason INTEGER NOT NULL,
            title TEXT NOT NULL, folder BLOB, parent BLOB,
            written INTEGER NOT NULL, mtime INTEGER, size INTEGER NOT NULL, hash BLOB NOT NULL,
            tags BLOB, bodyFormat INTEGER NOT NULL DEFAULT 0, body BLOB
        );
        CREATE INDEX kept_key ON kept(key, id);
        CREATE INDEX kept_at ON kept(at, stored);
        """

    /// Kept texts with their row's state. Folders are kept only to name the
    /// path of what was in them (a sibling's delete of a folder can arrive
    /// before those of its files): never listed.
    static let from = """
        FROM kept k LEFT JOIN rows r ON r.ns = \(Namespace.notebook.rawValue) AND r.key = k.key
         WHERE k.kind != \(NoteKind.folder.rawValue)
        """

    /// The one rule for the trash: the last kept text of a row that is not
    /// live (a tombstone, or collected), when that text is its deletion.
    static let isTrash = """
        (k.reason IN (\(KeptReason.deletedHere.rawValue), \(KeptReason.deletedElsewhere.rawValue)) AND coalesce(r.tombstone, 1) = 1
         AND k.id = (SELECT max(k2.id) FROM kept k2 WHERE k2.key = k.key AND k2.kind != \(NoteKind.folder.rawValue)))
        """

    static let columns = "k.id, k.key, k.kind, k.reason, k.title, k.folder, k.parent, k.at, k.written, k.mtime, k.size, k.stored, k.tags, r.tombstone, "
        + isTrash

    static func list(_ db: Connection, path: String) throws(StoreError) -> [KeptVersion] {
        try db.query("SELECT \(columns) \(from) ORDER BY k.id") { s throws(StoreError) in try decode(s, path: path) }
    }

    static func decode(_ s: Statement, path: String) throws(StoreError) -> KeptVersion {
        let id = s.int(0)
        do {
            return KeptVersion(
                id: id, key: ID16(bytes: s.blob(1) ?? []) ?? ID16(bytes: [UInt8](repeating: 0, count: 16))!,
                kind: NoteKind(rawValue: UInt8(clamping: s.int(2))) ?? .file,
                title: s.text(4) ?? "", folderPath: try texts(s.blob(5)), folderKey: s.blob(6).flatMap(ID16.init(bytes:)),
                keptAt: Timestamp(seconds: s.int(7)), writtenAt: Timestamp(seconds: s.int(8)),
                modifiedAt: s.isNull(9) ? nil : s.int(9), reason: KeptReason(rawValue: s.int(3)) ?? .editedElsewhere,
                size: Int(s.int(10)), storedSize: Int(s.int(11)), tags: try texts(s.blob(12)),
                isRowLive: !s.isNull(13) && s.int(13) == 0, isRowPresent: !s.isNull(13), place: s.int(14) != 0 ? .trash : .versions)
        } catch {
            throw StoreError(.corrupt, "\(path): kept text \(id) does not decode: \(error)")
        }
    }

    static func texts(_ blob: [UInt8]?) throws(CBORError) -> [String] {
        guard let blob, !blob.isEmpty else { return [] }
        var out: [String] = []
        for item in try CBORReader.decode(blob).asArray() { out.append(try item.asText()) }
        return out
    }

    static func encode(_ texts: [String]) -> [UInt8] { CBORWriter.encode(.array(texts.map { .text($0) })) }

    static func bytes(_ db: Connection, _ id: Int64, path: String) throws(StoreError) -> [UInt8] {
        guard let (stored, format, hash, kind) = try db.queryOne("SELECT body, bodyFormat, hash, kind FROM kept WHERE id = ?", [.int(id)], {
            ($0.blob(0) ?? [], $0.int(1), $0.blob(2) ?? [], $0.int(3))
        }) else {
            throw StoreError(.notFound, "no kept text \(id) (it may have been pruned)")
        }
        guard kind != Int64(NoteKind.folder.rawValue) else { throw StoreError(.invalidInput, "kept entry \(id) is a folder: it has no text") }
        // Bytes copied as stored are checked here, not when kept: damage on
        // disk is refused, never shown as the text that was there.
        guard let body = StoredBody.decode(stored, format: format), Note.bodyDigest(body) == hash else {
            throw StoreError(.corrupt, "\(path): kept text \(id) is damaged on disk (it does not match the hash it was kept with)")
        }
        return body
    }

    /// Drops what is older than `limits.days`, then, when the rest is over
    /// `limits.bytes`, the oldest until it is at most `target` (the write
    /// path leaves some room below the limit, so the texts kept next do
    /// not each need a drop).
    static func prune(_ db: Connection, limits: KeptLimits, now: Int64, target: Int64? = nil) throws(StoreError) -> KeptPruning {
        var result = KeptPruning()
        // Off: nothing is kept, so nothing stays either.
        let cutoff = limits.isOff ? Int64.max : now - Int64(limits.days) * 86_400
        if let (count, bytes) = try db.queryOne("SELECT count(*), coalesce(sum(stored), 0) FROM kept WHERE at < ?", [.int(cutoff)], {
            (Int($0.int(0)), $0.int(1))
        }), count > 0 {
            try db.run("DELETE FROM kept WHERE at < ?", [.int(cutoff)])
            result.expired = count
            result.freedBytes += bytes
        }
        var total = try db.queryOne("SELECT coalesce(sum(stored), 0) FROM kept") { $0.int(0) } ?? 0
        result.keptBytes = total
        guard total > limits.bytes else { return result }
        let fit = min(target ?? limits.bytes, limits.bytes)
        // Oldest first (ids grow with time, whatever the clock does).
        var last: Int64?
        for (id, stored) in try db.query("SELECT id, stored FROM kept ORDER BY id", [], { ($0.int(0), $0.int(1)) }) {
            guard total > fit else { break }
            total -= stored
            result.overSize += 1
            result.freedBytes += stored
            last = id
        }
        if let last { try db.run("DELETE FROM kept WHERE id <= ?", [.int(last)]) }
        result.keptBytes = total
        return result
    }
}

extension KeptLimits {
    /// The limits a device's prefs set (`quire config trash-days`, `trash-size`).
    public init(prefs: Prefs) {
        self.init(days: prefs.keptDays ?? Self.defaultDays, mebibytes: prefs.keptMebibytes ?? Self.defaultMebibytes)
    }
}
