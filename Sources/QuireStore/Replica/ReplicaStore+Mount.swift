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
        /// False for a deletion the disk had no room to keep a copy of in
        /// the trash (`deleteFromMount`).
        public var keptInTrash = true
    }

    /// `put` that also reports the change number of the write.
    /// For prose (notebook, saga), `shown` is what this device last showed
    /// of the row (the bytes the open file read): removed paragraphs become
    /// paragraph tombstones computed against it, never against the record.
    /// With no `shown`, the stored text is the baseline; `shownVersion`
    /// (when given) is the change number of the version that was shown, and
    /// a row stored past it meanwhile is counted against no baseline at all.
    /// For an attachment, `basedOn` is the text the writer's copy held
    /// before its writes: a stored version other than that one, which the
    /// write replaces unseen, is kept as a file of its own
    /// (`keepUnseenVersion`).
    public func putFromMount(_ content: RowContent, key: RowKey?, shown: [UInt8]? = nil,
                             shownVersion: Int64? = nil, basedOn: [UInt8]? = nil) throws(StoreError) -> MountEdit {
        try write { ctx in
            let before = ctx.rowsWritten
            let row = try ctx.putMountEdit(content, key: key, shown: shown, shownVersion: shownVersion, basedOn: basedOn)
            // An edit equal to the stored row writes nothing and has no change number.
            return MountEdit(row: row, seq: ctx.rowsWritten > before ? ctx.seq : nil)
        }
    }

    /// `delete` that also reports the change number of the tombstone.
    public func deleteFromMount(_ namespace: Namespace, _ key: RowKey) throws(StoreError) -> MountEdit {
        try deleteEvenWhenFull { keep throws(StoreError) in
            try write(zeroingFreedPages: keep) { ctx in
                ctx.keepsReplacedText = keep
                return MountEdit(row: try ctx.deleteLocal(namespace, key), seq: ctx.seq, keptInTrash: keep)
            }
        }
    }

    /// A deletion on a disk too full to keep the deleted text in the trash
    /// still deletes, without that copy and without writing zeros over the
    /// pages it frees (they are overwritten when reused): deleting is how a
    /// user frees space.
    func deleteEvenWhenFull<T>(_ delete: (_ keepInTrash: Bool) throws(StoreError) -> T) throws(StoreError) -> T {
        do {
            return try delete(true)
        } catch where error.kind == .diskFull {
            return try delete(false)
        }
    }

    /// The save-by-rename of editors, in one transaction: `content` becomes
    /// a new version of the row `target` (which keeps its key and history),
    /// and the row `source` the content came from becomes a tombstone like
    /// any deletion. Never removed outright: siblings pull rows before any
    /// advertisement (every digest exchange serves them), so no device can
    /// prove a row never left it, and a row removed without a tombstone
    /// would come back from whoever pulled it.
    public func replaceFromMount(target: RowKey, with content: RowContent, removing source: RowKey?,
                                 shown: [UInt8]? = nil, shownVersion: Int64? = nil) throws(StoreError) -> MountEdit {
        try write { ctx in
            let edit = MountEdit(row: try ctx.putMountEdit(content, key: target, shown: shown, shownVersion: shownVersion), seq: ctx.seq)
            if let source, source != target,
               let existing = try RowRecord.load(ctx.db, content.namespace, source, withBody: false), !existing.isTombstone {
                _ = try ctx.deleteLocal(content.namespace, source)
            }
            return edit
        }
    }
}

extension WriteContext {
    /// A mount edit: prose goes through the paragraph-aware save.
    mutating func putMountEdit(_ content: RowContent, key: RowKey?, shown: [UInt8]?, shownVersion: Int64? = nil,
                               basedOn: [UInt8]? = nil) throws(StoreError) -> Row {
        switch content.namespace {
        case .notebook, .saga: return try saveProse(content, key: key, shown: shown, shownVersion: shownVersion, basedOn: basedOn)
        default: return try putLocal(content, key: key)
        }
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
        var place = RowPlace()
        if case .note(let n)? = row.content {
            place = RowPlace(kind: n.kind, folder: n.folder, modifiedAt: n.modifiedAt, versions: row.heads.count)
        }
        self.init(namespace: row.namespace, key: row.key, name: row.content?.displayName ?? "", size: size,
                  updatedAt: row.content?.updatedAt ?? Timestamp(seconds: 0), isTombstone: row.isTombstone,
                  isOffloaded: { if case .note(let n)? = row.content { return n.body == nil } else { return false } }(), seq: seq,
                  place: place)
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
