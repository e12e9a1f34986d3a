import QuireCore

/// What `restoreKept` did.
public struct KeptRestore: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// A deleted row is live again under its own key: the new version's
        /// context covers its tombstone, so it beats the delete everywhere.
        case revived
        /// The barrier had collected the row: the text is a new row.
        case recreated
        /// The row is live: the kept text is its new text (and the text it
        /// replaced is kept in turn).
        case replacedText
        /// The row already shows exactly this text: nothing was written.
        case unchanged
    }

    public var outcome: Outcome
    public var row: Row
    /// The folder it is in now (nil: the top of the notebook).
    public var folder: RowKey?
    /// False when it was in a folder that no longer exists and none is at
    /// its path now, so it came back at the top.
    public var isInItsFolder: Bool
}

extension ReplicaStore {
    /// Brings a kept text back as a new local edit, which syncs like any
    /// other (`quire undelete`). A deleted file comes back into its old
    /// folder if that folder is still there, else at the top; an earlier
    /// version becomes its row's text. One transaction.
    @discardableResult
    public func restoreKept(_ id: Int64) throws(StoreError) -> KeptRestore {
        try write { ctx in
            let args: [SQLValue] = [.int(id)]
            guard let version = try ctx.db.queryOne("SELECT \(KeptTable.columns) \(KeptTable.from) AND k.id = ?", args, { s throws(StoreError) in
                try KeptTable.decode(s, path: path)
            }) else {
                throw StoreError(.notFound, "no kept text \(id) (it may have been pruned); 'quire trash' lists what is kept")
            }
            let bytes = try KeptTable.bytes(ctx.db, id, path: path)
            let record = try RowRecord.load(ctx.db, .notebook, version.key, withBody: true)
            let current = try record.map { r throws(StoreError) in try ctx.decodeSettingAside(r) }
            if case .note(var note)? = current?.content {
                // An earlier version of a live row: its text, as a new edit
                // (paragraphs it lacks become paragraph tombstones, as a save would).
                guard note.kind != .folder else {
                    throw StoreError(.conflict, "notebook row \(version.key) is a folder now; its kept text cannot be put back")
                }
                if note.body == bytes { return KeptRestore(outcome: .unchanged, row: current!, folder: note.folder, isInItsFolder: true) }
                note.body = bytes
                note.length = nil
                let row = try ctx.saveProse(.note(note), key: version.key, shown: nil)
                return KeptRestore(outcome: .replacedText, row: row, folder: note.folder, isInItsFolder: true)
            }
            // Deleted: back into its folder if that is still a live folder,
            // else into a live folder at the same path (`rm -r` and `mkdir`
            // of the same name made a new folder row), else at the top.
            var folder = try version.folderKey.flatMap { key throws(StoreError) -> RowKey? in
                let live = try ctx.db.queryOne("SELECT 1 FROM rows WHERE ns = ? AND key = ? AND tombstone = 0 AND kind = ?",
                                               [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes),
                                                .int(Int64(NoteKind.folder.rawValue))]) { _ in true }
                return live == true ? key : nil
            }
            var inItsPlace = folder == version.folderKey
            if folder == nil, version.folderKey != nil, let samePath = try ctx.liveFolder(at: version.folderPath) {
                folder = samePath
                inItsPlace = true
            }
            let zero = Timestamp(seconds: 0)
            // A live file of its name there now keeps the name: the one
            // brought back is `Ideas (restored).md` beside it.
            let title = try ctx.freeTitle(version.title, kind: version.kind, in: folder)
            let content = RowContent.note(Note(title: title, tags: version.tags, body: bytes, createdAt: zero, updatedAt: zero,
                                               kind: version.kind, folder: folder, modifiedAt: version.modifiedAt))
            // A collected tombstone is gone for good on every device: a new
            // row, under a new key, is the only safe way back.
            let key = record == nil ? RowKey.random(using: random) : version.key
            let row = try ctx.saveProse(content, key: key, shown: nil)
            return KeptRestore(outcome: record == nil ? .recreated : .revived, row: row, folder: folder, isInItsFolder: inItsPlace)
        }
    }
}

extension WriteContext {
    /// `title`, or `title (restored)` (`(restored 2)`, … ; before an
    /// attachment's extension) when a live note or file of that title is
    /// in `folder` already.
    func freeTitle(_ title: String, kind: NoteKind, in folder: RowKey?) throws(StoreError) -> String {
        func taken(_ candidate: String) throws(StoreError) -> Bool {
            try db.queryOne("SELECT 1 FROM rows WHERE ns = ? AND tombstone = 0 AND kind != ? AND name = ? AND parent IS ? LIMIT 1",
                            [.int(Int64(Namespace.notebook.rawValue)), .int(Int64(NoteKind.folder.rawValue)), .text(candidate),
                             folder.map { .blob($0.bytes) } ?? .null]) { _ in true } ?? false
        }
        guard kind != .folder, try taken(title) else { return title }
        let (stem, ext) = kind == .file ? ConflictCopy.splitExtension(title) : (title, "")
        for n in 1... {
            let candidate = stem + (n == 1 ? " (restored)" : " (restored \(n))") + ext
            if try !taken(candidate) { return candidate }
        }
        return title
    }

    /// The live folder at `path` (titles from the top), if every step has
    /// one (of several with one title, the smallest key: the one the mount
    /// shows under the plain name).
    func liveFolder(at path: [String]) throws(StoreError) -> RowKey? {
        var parent: RowKey? = nil
        for name in path {
            let args: [SQLValue] = [.int(Int64(Namespace.notebook.rawValue)), .int(Int64(NoteKind.folder.rawValue)), .text(name),
                                    parent.map { .blob($0.bytes) } ?? .null]
            guard let key = try db.queryOne("SELECT key FROM rows WHERE ns = ? AND tombstone = 0 AND kind = ? AND name = ? AND parent IS ? "
                                            + "ORDER BY key LIMIT 1", args, { $0.blob(0).flatMap(RowKey.init(bytes:)) }) ?? nil else { return nil }
            parent = key
        }
        return parent
    }
}
