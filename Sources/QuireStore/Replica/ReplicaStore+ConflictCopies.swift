import QuireCore

/// An attachment edited on two devices at once holds both versions as
/// heads; the file shows the later one, and the mount shows each other
/// version beside it as a conflict copy. A local edit or delete of the
/// file replaces every head it saw, so before it does, each losing version
/// becomes a file of its own (titled as the copy was shown) in the same
/// transaction: no version is ever dropped without the user seeing it go.
extension WriteContext {
    /// Makes each losing version of `row` (but `discarded`) a row of its own.
    /// Its key is derived from the row and the version, so two devices that
    /// do this for the same version make one row.
    mutating func keepConflictingVersions(of row: Row?, except discarded: Dot? = nil) throws(StoreError) {
        guard let row, row.namespace == .notebook, case .note(let shown)? = row.content else { return }
        for head in ConflictCopy.losingVersions(of: row) where head.dot != discarded {
            try keepAsFile(head, of: row.key, in: shown.folder)
        }
    }

    /// An attachment written here onto another version than the stored
    /// one (`basedOn`: the text the writer's copy held before its writes;
    /// a sibling's version synced in while the file was open): the stored
    /// version becomes a file of its own, as a conflict copy would, and the
    /// write the file's text. Two devices editing one attachment at once
    /// keep both versions however their writes interleave.
    mutating func keepUnseenVersion(of row: Row, writing body: [UInt8]?, basedOn: [UInt8]) throws(StoreError) {
        guard row.namespace == .notebook, case .note(let stored)? = row.content, stored.kind == .file, let storedBody = stored.body,
              storedBody != body, storedBody != basedOn else { return }
        let losing = Set(ConflictCopy.losingVersions(of: row).map(\.dot))
        for head in row.heads where !losing.contains(head.dot) {
            try keepAsFile(head, of: row.key, in: stored.folder)
        }
    }

    /// One version of an attachment as a file of its own, titled as its
    /// conflict copy shows. Its key is derived from the row and the version,
    /// so two devices that do this for the same version make one row.
    private mutating func keepAsFile(_ head: RowHead, of rowKey: RowKey, in folder: RowKey?) throws(StoreError) {
        guard case .note(let version) = head.content else { return }
        let key = RowKey.derived(separator: "quire.notebook.conflict", name: rowKey.hex + "/" + head.dot.description)
        if let existing = try RowRecord.load(db, .notebook, key, withBody: false), !existing.isTombstone { return }
        let zero = Timestamp(seconds: 0)
        var copy = Note(title: ConflictCopy.title(of: version, writtenBy: head.dot), body: [], createdAt: zero, updatedAt: zero,
                        kind: .file, folder: folder,
                        modifiedAt: version.modifiedAt ?? version.updatedAt.seconds * 1_000_000_000)
        if let body = version.body {
            copy.body = body
        } else {
            // An offloaded version: the copy points at the same body.
            copy.body = nil
            copy.contentHash = version.contentHash
            copy.length = version.length
        }
        _ = try putLocal(.note(copy), key: key, loaded: nil)
    }
}

extension ReplicaStore {
    /// Drops one losing version of an attachment (its conflict copy was
    /// deleted): the row keeps what it shows (or `keeping`, when the copy
    /// was chosen over it), and any other losing version becomes a file of
    /// its own first.
    public func discardVersion(_ key: RowKey, dot: Dot, keeping chosen: RowContent? = nil) throws(StoreError) -> ReplicaStore.MountEdit {
        try write { ctx in
            guard let record = try RowRecord.load(ctx.db, .notebook, key, withBody: true), !record.isTombstone else {
                throw StoreError(.notFound, "no notebook row \(key)")
            }
            let row = try record.row(path: path)
            guard ConflictCopy.losingVersions(of: row).contains(where: { $0.dot == dot }), let content = row.content else {
                throw StoreError(.notFound, "notebook row \(key) has no version \(dot) to drop")
            }
            try ctx.keepConflictingVersions(of: row, except: dot)
            let written = try ctx.writeLocalVersion(ctx.stamped(chosen ?? content, previous: content), key: key, existing: record,
                                                    existingRow: row, keepingConflicts: false)
            return MountEdit(row: written, seq: ctx.seq)
        }
    }
}

extension ReplicaStore {
    /// Attachments that hold concurrent versions (each shown with conflict copies).
    public func conflictedAttachments() throws(StoreError) -> [(key: RowKey, name: String)] {
        let candidates = try read { () throws(StoreError) -> [(key: RowKey, name: String)] in
            try db.query("SELECT key, name FROM rows WHERE ns = ? AND tombstone = 0 AND kind = ? AND versions > 1 ORDER BY name",
                         [.int(Int64(Namespace.notebook.rawValue)), .int(Int64(NoteKind.file.rawValue))]) {
                (ID16(bytes: $0.blob(0) ?? [])!, $0.text(1) ?? "")
            }
        }
        // Versions with the same bytes (two devices saving one loser of a
        // conflict as a file of its own) are one: no copy shows for them.
        var out: [(key: RowKey, name: String)] = []
        for candidate in candidates {
            guard let row = try row(.notebook, candidate.key), !ConflictCopy.losingVersions(of: row).isEmpty else { continue }
            out.append(candidate)
        }
        return out
    }

    /// Live notebook rows by kind (notes, attachments, folders).
    public func notebookKinds() throws(StoreError) -> [NoteKind: Int] {
        try read { () throws(StoreError) -> [NoteKind: Int] in
            var out: [NoteKind: Int] = [:]
            for (kind, count) in try db.query("SELECT kind, count(*) FROM rows WHERE ns = ? AND tombstone = 0 GROUP BY kind",
                                              [.int(Int64(Namespace.notebook.rawValue))], { ($0.int(0), Int($0.int(1))) }) {
                if let kind = NoteKind(rawValue: UInt8(clamping: kind)) { out[kind] = count }
            }
            return out
        }
    }
}
