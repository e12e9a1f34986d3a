import QuireCore

/// Keeping the text a write replaces (see `KeptVersions.swift`). Called by
/// `writeRow` before a stored notebook row is overwritten, in the same
/// transaction.
extension WriteContext {
    /// Keeps what `row` replaces, when the write changes the text the row
    /// shows or deletes it. Nothing is kept:
    /// - for a row that was not here (a sync import on a fresh device), or
    ///   a tombstone (it had no text);
    /// - when the text is the same (a retitle, a move, tags, a file time;
    ///   a recall puts back the same bytes: rule 6);
    /// - when the text is not here (offloaded): this device never held it;
    /// - when an edit replaces an empty text: a shell's `echo x > f`
    ///   commits an empty file first (a truncate, or the close of a
    ///   duplicated descriptor), and such versions would only bury the rest;
    /// - for folders, except when one is deleted: that record names the
    ///   path of the files that were in it.
    func keepReplacedText(by row: Row, exists: Bool, madeHere: Bool) throws(StoreError) {
        let limits = store.keptPolicy.limits
        pruneKeptIfDue(limits)
        try keepText(replacedBy: row, exists: exists, madeHere: madeHere, limits: limits)
        // What was just kept may take the trash over its size limit: it is
        // brought back under it in this write, not at the next prune.
        pruneKeptIfDue(limits)
    }

    private func keepText(replacedBy row: Row, exists: Bool, madeHere: Bool, limits: KeptLimits) throws(StoreError) {
        guard exists, keepsReplacedText, row.namespace == .notebook, !limits.isOff,
              let record = try RowRecord.load(db, .notebook, row.key, withBody: false), !record.isTombstone else { return }
        let stored = try record.row(path: store.path)
        guard case .note(let old)? = stored.content else { return }
        let reason: KeptReason
        if row.isTombstone {
            reason = madeHere ? .deletedHere : .deletedElsewhere
        } else {
            guard case .note(let new)? = row.content, old.kind != .folder else { return }
            if stored.heads.count == 1, new.contentHash == old.contentHash || record.size == 0 { return }
            reason = madeHere ? .editedHere : .editedElsewhere
        }
        let place = try folderPath(of: old.folder)
        var args: [SQLValue] = [.int(now.seconds), .blob(row.key.bytes), .int(Int64(old.kind.rawValue)), .int(reason.rawValue),
                                .text(old.title), .blob(KeptTable.encode(place.names)), old.folder.map { .blob($0.bytes) } ?? .null,
                                .int(old.updatedAt.seconds), old.modifiedAt.map { .int($0) } ?? .null]
        if old.kind == .folder {
            try db.run("""
                INSERT INTO kept(at, stored, key, kind, reason, title, folder, parent, written, mtime, size, hash)
                VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, X'')
                """, args)
            return
        }
        args += [.blob(KeptTable.encode(old.tags))]
        store.keptPolicy.noteKept(bytes: record.size)
        if stored.heads.count == 1 {
            // One version: its bytes are the body column, copied as stored
            // (no inflate, no deflate); checked against the hash when read.
            guard !record.isOffloaded else { return }
            try db.run("""
                INSERT INTO kept(at, stored, key, kind, reason, title, folder, parent, written, mtime, size, hash, tags, bodyFormat, body)
                SELECT ?1, coalesce(length(body), 0), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, size, hash, ?10, bodyFormat, body
                  FROM rows WHERE ns = \(Namespace.notebook.rawValue) AND key = ?2
                """, args)
            return
        }
        // Concurrent versions: what the file showed is their resolution.
        guard let full = try RowRecord.load(db, .notebook, row.key, withBody: true) else { return }
        let (resolved, damaged) = try full.decode(path: store.path)
        guard !damaged, case .note(let shown)? = resolved.content, let body = shown.body else { return }
        if case .note(let new)? = row.content, new.contentHash == shown.contentHash || body.isEmpty { return }
        let bytes = StoredBody.encode(body)
        try db.run("""
            INSERT INTO kept(at, stored, key, kind, reason, title, folder, parent, written, mtime, size, hash, tags, bodyFormat, body)
            VALUES (?1, ?11, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?12, ?13, ?10, ?14, ?15)
            """, args + [.int(Int64(bytes.bytes.count)), .int(Int64(body.count)), .blob(shown.contentHash),
                         .int(bytes.format), .blob(bytes.bytes)])
    }

    /// The titles of the folders from the top down to `folder`, and how far
    /// they were found. A folder that is gone is named by its own kept
    /// record (it holds its path); one that is neither is where the path
    /// stops, as the mount shows such a row at the top.
    func folderPath(of folder: RowKey?) throws(StoreError) -> (names: [String], isComplete: Bool) {
        var reversed: [String] = []
        var current = folder
        var seen: Set<RowKey> = []
        while let key = current, seen.insert(key).inserted, seen.count <= 256 {
            let live = try db.queryOne("SELECT name, parent FROM rows WHERE ns = ? AND key = ? AND tombstone = 0 AND kind = ?",
                                       [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes), .int(Int64(NoteKind.folder.rawValue))]) {
                ($0.text(0) ?? "", $0.blob(1).flatMap(ID16.init(bytes:)))
            }
            if let (name, parent) = live {
                reversed.append(name)
                current = parent
                continue
            }
            let gone = try db.queryOne("SELECT title, folder FROM kept WHERE key = ? AND kind = ? ORDER BY id DESC LIMIT 1",
                                       [.blob(key.bytes), .int(Int64(NoteKind.folder.rawValue))]) { ($0.text(0) ?? "", $0.blob(1)) }
            guard let (name, above) = gone, let names = try? KeptTable.texts(above) else { return (reversed.reversed(), false) }
            return (names + [name] + reversed.reversed(), true)
        }
        return (reversed.reversed(), current == nil)
    }

    /// The write path's prune: for age at most every few minutes, for size
    /// whenever what is kept passed the limit (down to a sixteenth below it,
    /// so that a burst of edits prunes in batches, not at every edit); under
    /// a savepoint, so a prune that fails (a full disk) leaves the edit it
    /// rides on whole and is said in `quire status` until one succeeds.
    func pruneKeptIfDue(_ limits: KeptLimits) {
        let policy = store.keptPolicy
        guard policy.claimPrune(at: now.seconds) else { return }
        do throws(StoreError) {
            try db.execute("SAVEPOINT kept_prune")
            do throws(StoreError) {
                let pruned = try KeptTable.prune(db, limits: limits, now: now.seconds, target: limits.bytes - limits.bytes / 16)
                try db.execute("RELEASE kept_prune")
                policy.notePruned(leaving: pruned.keptBytes)
                policy.problem = nil
            } catch {
                try? db.execute("ROLLBACK TO kept_prune")
                try? db.execute("RELEASE kept_prune")
                throw error
            }
        } catch {
            // Tried again at the interval, not at every write to a full disk.
            policy.notePruneFailed()
            policy.problem = "dropping old trash and versions failed (\(error.message)); nothing was dropped, it is tried again in a few minutes"
        }
    }
}
