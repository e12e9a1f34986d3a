import QuireCore

/// What the FUSE mount needs beyond the plain row API: local edits that
/// report their change number (so the mount can tell its own writes from
/// everyone else's in the change feed), and the save-by-rename replacement.
extension ReplicaStore {
    /// The outcome of one local edit made through the mount.
    public struct MountEdit: Sendable {
        public var row: Row
        /// The change number the edit was written under; nil when the content
        /// equalled the stored row and nothing was written.
        public var seq: Int64?
        /// The source row of a replacement was removed without a trace
        /// (it had never been advertised); false when it became a tombstone.
        public var sourcePurged = false
    }

    /// `put` that also reports the change number of the write.
    /// For prose (notebook, saga), `shown` is what this device last showed
    /// of the row (the bytes the open file read): removed paragraphs become
    /// paragraph tombstones computed against it, never against the record.
    public func putFromMount(_ content: RowContent, key: RowKey?, shown: [UInt8]? = nil) throws(StoreError) -> MountEdit {
        try write { ctx in
            let before = ctx.rowsWritten
            let row = try ctx.putMountEdit(content, key: key, shown: shown)
            // An edit equal to the stored row writes nothing and has no change number.
            return MountEdit(row: row, seq: ctx.rowsWritten > before ? ctx.seq : nil)
        }
    }

    /// `delete` that also reports the change number of the tombstone.
    public func deleteFromMount(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> MountEdit {
        try write { ctx in MountEdit(row: try ctx.deleteLocal(namespace, key), seq: ctx.seq) }
    }

    /// The save-by-rename of editors, in one transaction: `content` becomes
    /// a new version of the row `target` (which keeps its key and history),
    /// and the row `source` the content came from goes away. A source that
    /// was created on this device and never advertised (every version of it
    /// still waits in the outbox) is removed outright: no other device can
    /// know it, so a tombstone would only be noise. Otherwise it becomes a
    /// tombstone like any deletion.
    public func replaceFromMount(target: RowKey, with content: RowContent, removing source: RowKey?,
                                 shown: [UInt8]? = nil) throws(StoreError) -> MountEdit {
        try write { ctx in
            var edit = MountEdit(row: try ctx.putMountEdit(content, key: target, shown: shown), seq: ctx.seq)
            if let source, source != target {
                edit.sourcePurged = try ctx.purgeIfUnadvertised(content.namespace, source)
                if !edit.sourcePurged,
                   let existing = try RowRecord.load(ctx.db, content.namespace, source, withBody: false), !existing.isTombstone {
                    _ = try ctx.deleteLocal(content.namespace, source)
                }
            }
            return edit
        }
    }

    /// Removes a row that never left this device; false (and nothing done)
    /// when any sibling may know it.
    @discardableResult
    public func purgeIfUnadvertised(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> Bool {
        try write { ctx in try ctx.purgeIfUnadvertised(namespace, key) }
    }
}

extension WriteContext {
    /// A mount edit: prose goes through the paragraph-aware save.
    mutating func putMountEdit(_ content: RowContent, key: RowKey?, shown: [UInt8]?) throws(StoreError) -> Row {
        switch content.namespace {
        case .notebook, .saga: return try saveProse(content, key: key, shown: shown)
        default: return try putLocal(content, key: key)
        }
    }

    /// See `ReplicaStore.replaceFromMount`. The leaf leaves the fingerprints
    /// in the same transaction, so the digest never counts a purged row.
    mutating func purgeIfUnadvertised(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> Bool {
        guard let existing = try RowRecord.load(db, ns, key, withBody: false), !existing.isTombstone else { return false }
        let me = store.deviceID
        // Only this device ever wrote it ...
        guard existing.vector.counters.keys.allSatisfy({ $0 == me }) else { return false }
        // ... and every one of its versions still waits to be advertised.
        let pending = try db.queryOne("SELECT count(*) FROM outbox WHERE ns = ? AND key = ?",
                                      [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { $0.int(0) } ?? 0
        guard pending > 0, UInt64(pending) >= existing.vector[me] else { return false }
        try db.run("DELETE FROM rows WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
        try db.run("DELETE FROM outbox WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
        try db.run("DELETE FROM shadows WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
        if let leaf = existing.leaf {
            deltas.add(ns, key, plus: .zero, minus: Fingerprint(leaf: leaf))
        }
        return true
    }
}

extension RowSummary {
    /// The listing entry of a row just written, so the mount can update its
    /// directory view without listing the namespace again.
    public init(row: Row, seq: Int64) {
        var size = 0
        switch row.content {
        case .note(let n)?: size = n.body?.count ?? 0
        case .saga(let s)?: size = s.text.count
        default: size = 0
        }
        self.init(namespace: row.namespace, key: row.key, name: row.content?.displayName ?? "", size: size,
                  updatedAt: row.content?.updatedAt ?? Timestamp(seconds: 0), isTombstone: row.isTombstone,
                  isOffloaded: { if case .note(let n)? = row.content { return n.body == nil } else { return false } }(), seq: seq)
    }
}

extension ReplicaStore {
    /// Several local edits as one transaction (RENAME_EXCHANGE swaps two
    /// rows' contents: both happen or neither does). Each is a mount edit,
    /// so prose gets paragraph tombstones for the text it replaced (against
    /// the stored record): a sibling's concurrent edit of the old text must
    /// not bring it back beside the swapped-in one.
    public func putAllFromMount(_ edits: [(content: RowContent, key: RowKey)]) throws(StoreError) -> [MountEdit] {
        try write { ctx in
            var out: [MountEdit] = []
            for edit in edits { out.append(MountEdit(row: try ctx.putMountEdit(edit.content, key: edit.key, shown: nil), seq: ctx.seq)) }
            return out
        }
    }
}
