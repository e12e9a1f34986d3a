import QuireCore

/// Prose (note bodies and journal days): deletions computed against what
/// the editor showed, a device-local shadow, and restoring a clobber.
extension ReplicaStore {
    /// Saves an edit of a note body or a journal day made by an editor that
    /// showed `shown` (the bytes the open file read; nil: what is stored).
    /// Paragraphs the edit removed become paragraph tombstones, computed
    /// against `shown` only, never against the live record: a sync import
    /// that landed while the file was open is folded in, not deleted.
    @discardableResult
    public func saveProse(_ content: RowContent, key: RowKey? = nil, shown: [UInt8]? = nil) throws(StoreError) -> Row {
        try write { ctx in try ctx.saveProse(content, key: key, shown: shown) }
    }

    /// The text this device last wrote or accepted for a row (never synced).
    public func shadow(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> [UInt8]? {
        try read { () throws(StoreError) -> [UInt8]? in try Shadows.load(db, ns, key, path: path) }
    }
}

/// The shadows table. A shadow equal to the row's stored prose text is kept
/// as a mark (`same`), not a second copy: it means "what the row stores
/// now", so whatever replaces a marked row's text must read the shadow
/// first (`applyRemote`), and dropping the text (an offload) drops the mark.
enum Shadows {
    static func load(_ db: Connection, _ ns: Namespace, _ key: RowKey, path: String) throws(StoreError) -> [UInt8]? {
        let args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(key.bytes)]
        guard let (text, same) = try db.queryOne("SELECT text, same FROM shadows WHERE ns = ? AND key = ?", args, { ($0.blob(0) ?? [], $0.int(1) != 0) }) else {
            return nil
        }
        guard same else { return text }
        return try storedText(db, ns, key, path: path)
    }

    /// The shadow's text when it is a copy of its own (nil: none, or a mark).
    static func copy(_ db: Connection, _ ns: Namespace, _ key: RowKey) throws(StoreError) -> [UInt8]? {
        try db.queryOne("SELECT text FROM shadows WHERE ns = ? AND key = ? AND same = 0",
                        [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { $0.blob(0) ?? [] }
    }

    /// The row's prose text as stored (nil: no such row, not prose, or its
    /// body is not here).
    static func storedText(_ db: Connection, _ ns: Namespace, _ key: RowKey, path: String) throws(StoreError) -> [UInt8]? {
        guard let record = try RowRecord.load(db, ns, key, withBody: true), !record.isTombstone,
              let content = try? record.row(path: path).content else { return nil }
        if case .note(let n) = content, n.body == nil { return nil }
        return ProseText.of(content)?.text
    }

    static func remove(_ db: Connection, _ ns: Namespace, _ key: RowKey) throws(StoreError) {
        try db.run("DELETE FROM shadows WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
    }

    /// Before `row` replaces what is stored: a marked shadow would silently
    /// follow the new text, so it gets the old text as its own copy.
    static func keepMarkedText(_ db: Connection, _ row: Row, path: String) throws(StoreError) {
        let args: [SQLValue] = [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes)]
        guard try db.queryOne("SELECT 1 FROM shadows WHERE ns = ? AND key = ? AND same = 1", args, { _ in true }) != nil else { return }
        let old = try storedText(db, row.namespace, row.key, path: path)
        let new = row.content.flatMap(ProseText.of)?.text
        guard old != new else { return }
        if let old {
            try db.run("UPDATE shadows SET text = ?, same = 0 WHERE ns = ? AND key = ?", [.blob(old)] + args)
        } else {
            try remove(db, row.namespace, row.key)
        }
    }

    /// `stored`: the row's stored text when the caller already has it
    /// (nil inside: none); left out, it is read.
    static func set(_ db: Connection, _ ns: Namespace, _ key: RowKey, _ text: [UInt8], stored: [UInt8]?? = nil,
                    path: String) throws(StoreError) {
        let current: [UInt8]?
        if let stored { current = stored } else { current = try storedText(db, ns, key, path: path) }
        let same = current == text
        try db.run("INSERT OR REPLACE INTO shadows(ns, key, text, same) VALUES (?, ?, ?, ?)",
                   [.int(Int64(ns.rawValue)), .blob(key.bytes), .blob(same ? [] : text), .int(same ? 1 : 0)])
    }
}

/// The prose text and paragraph tombstones of a row's content, if it is prose.
enum ProseText {
    static func of(_ content: RowContent) -> (text: [UInt8], deleted: [[UInt8]])? {
        switch content {
        case .note(let n): return n.isProse ? n.body.map { ($0, n.deletedParagraphs) } : nil
        case .saga(let s): return (s.text, s.deletedParagraphs)
        default: return nil
        }
    }

    /// `deleted` in any order, duplicates allowed.
    static func replacing(_ content: RowContent, text: [UInt8], deleted: [[UInt8]]) -> RowContent {
        let sorted = ParagraphHashes.canonical(deleted)
        switch content {
        case .note(var n):
            n.body = text    // restamps contentHash
            n.deletedParagraphs = sorted
            return .note(n)
        case .saga(var s):
            s.text = text
            s.deletedParagraphs = sorted
            return .saga(s)
        default:
            return content
        }
    }

    static func version(_ text: [UInt8], _ deleted: [[UInt8]]) -> ProseVersion? {
        String(validating: text, as: UTF8.self).map { version($0, deleted) }
    }

    static func version(_ text: String, _ deleted: [[UInt8]]) -> ProseVersion {
        ProseVersion(text: text, deletedParagraphs: Set(deleted.compactMap { ParagraphHash(bytes: $0) }))
    }
}

extension WriteContext {
    /// `shownVersion`: with no `shown`, the change number of the stored
    /// version that was shown (see `putFromMount`).
    mutating func saveProse(_ content: RowContent, key explicitKey: RowKey?, shown: [UInt8]?,
                            shownVersion: Int64? = nil, basedOn: [UInt8]? = nil) throws(StoreError) -> Row {
        var content = content
        let key: RowKey? = explicitKey ?? {
            if case .saga(let s) = content { return SagaEntry.key(for: s.date) }
            return nil
        }()
        // Loaded once here and handed to putLocal: a save reads its row once.
        var loaded: RowRecord? = nil
        if let key { loaded = try RowRecord.load(db, content.namespace, key, withBody: true) }
        let decoded = try loaded.map { record throws(StoreError) in try decodeSettingAside(record) }
        if let existing = loaded, !existing.isTombstone,
           let stored = decoded?.content,
           let record = ProseText.of(stored), let edit = ProseText.of(content) {
            // The stored text stands for what was shown only while it is
            // that version: a sibling's version stored since is no deletion.
            let baseline = shown ?? (shownVersion.map { $0 != existing.seq } == true ? [] : record.text)
            if let recordText = String(validating: record.text, as: UTF8.self),
               let shownText = String(validating: baseline, as: UTF8.self),
               let editedText = String(validating: edit.text, as: UTF8.self) {
                // The record's tombstones and those the content came with
                // (its previous version's), ranked (`ParagraphTombstones`).
                let carried = ParagraphTombstones(Set((record.deleted + edit.deleted).compactMap { ParagraphHash(bytes: $0) }))
                var text = edit.text
                let markers: Set<ParagraphHash>
                let recordVersion = ProseVersion(text: recordText, deletedParagraphs: carried.markers)
                if baseline == record.text,
                   !ProseMerge.joinsSplitAppends(shown: shownText, edited: editedText, onto: recordVersion) {
                    // Nothing landed underneath: keep the user's bytes exactly.
                    let change = ProseMerge.changes(shown: shownText, edited: editedText)
                    markers = carried.afterEdit(deleted: change.deleted, typed: change.typed)
                } else {
                    // The record moved while the file was open, or the save
                    // joins a paragraph appended to on devices at once: fold it in.
                    let merged = ProseMerge.applyEdit(shown: shownText, edited: editedText, onto: recordVersion)
                    text = Array(merged.text.utf8)
                    markers = merged.deletedParagraphs
                }
                // Sorted by `replacing`.
                content = ProseText.replacing(content, text: text, deleted: markers.map(\.bytes))
            }
        } else if let key, let existing = loaded, existing.isTombstone, let edit = ProseText.of(content) {
            // Written again after a delete: the old text stays deleted
            // (DeletedProse), and so do the paragraphs the writer was shown
            // and left out (a file removed and created anew by name).
            let written = Paragraphs.hashes(of: String(decoding: edit.text, as: UTF8.self))
            var old = try DeletedProse.load(db, content.namespace, key)
            if let shown { old.formUnion(Paragraphs.hashes(of: String(decoding: shown, as: UTF8.self))) }
            let removed = old.subtracting(written)
            if !removed.isEmpty {
                let carried = ParagraphTombstones(Set(edit.deleted.compactMap { ParagraphHash(bytes: $0) }))
                content = ProseText.replacing(content, text: edit.text, deleted: carried.afterEdit(deleted: removed, typed: []).map(\.bytes))
            }
        }
        if let basedOn, let existing = loaded, !existing.isTombstone, let stored = decoded, case .note(let written) = content, written.kind == .file {
            try keepUnseenVersion(of: stored, writing: written.body, basedOn: basedOn)
        }
        // The shadow is set to the saved text below: no need to keep a
        // marked one's old text first.
        if let key { try Shadows.remove(db, content.namespace, key) }
        let row: Row
        if let key { row = try putLocal(content, key: key, loaded: loaded, decoded: decoded) } else { row = try putLocal(content, key: nil) }
        // The row just written is what is stored: its text, unread, marks the shadow.
        if let prose = row.content.flatMap(ProseText.of) { try setShadow(row.namespace, row.key, prose.text, stored: prose.text) }
        return row
    }

    mutating func setShadow(_ ns: Namespace, _ key: RowKey, _ text: [UInt8], stored: [UInt8]?? = nil) throws(StoreError) {
        try Shadows.set(db, ns, key, text, stored: stored, path: store.path)
    }

    func loadShadow(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> [UInt8]? {
        try Shadows.load(db, ns, key, path: store.path)
    }

    /// After a sibling's prose row was stored (`row`, joined with `local`,
    /// what was stored before): if it dropped paragraphs this device wrote
    /// or accepted (`shadow`, read before the row was written) without
    /// tombstones (a clobber, not a deletion), restore them as a local edit;
    /// then accept the text. Only a version this device did not hold can
    /// clobber: a join that brings none dropped versions only because a
    /// delete saw them (edit beats delete keeps the concurrent edit's text,
    /// not the deleted one's). Returns the restoring edit, if one was made.
    mutating func restoreFromShadow(after row: Row, local: Row?, shadow: [UInt8]?) throws(StoreError) -> Row? {
        guard let content = row.content, let prose = ProseText.of(content) else { return nil }
        defer {
            let stored = currentProse(row)
            _ = try? setShadow(row.namespace, row.key, stored ?? prose.text, stored: .some(stored))
        }
        let held = local?.heads ?? []
        guard row.heads.contains(where: { !held.contains($0) }) else { return nil }
        guard let shadow, shadow != prose.text,
              let shadowText = String(validating: shadow, as: UTF8.self),
              let incoming = ProseText.version(prose.text, prose.deleted) else { return nil }
        let (restored, report) = ProseMerge.restoreWithReport(shadow: shadowText, incoming: incoming)
        guard !report.keptFromA.isEmpty else { return nil }
        let fixed = ProseText.replacing(content, text: Array(restored.text.utf8), deleted: restored.deletedParagraphs.map(\.bytes))
        let edit = try putLocal(fixed, key: row.key)
        try db.run("INSERT INTO merges(ns, key, at, detail) VALUES (?, ?, ?, ?)",
                   [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes), .int(now.seconds),
                    .text("restored \(report.keptFromA.count) paragraph(s) from this device's shadow that \(WriteContext.describe(row)) dropped without a deletion")])
        return edit
    }

    private func currentProse(_ row: Row) -> [UInt8]? {
        guard let r = try? RowRecord.load(db, row.namespace, row.key, withBody: true), let c = try? r.row(path: store.path).content else { return nil }
        return ProseText.of(c)?.text
    }
}

extension Namespace {
    /// Rows whose text is prose (paragraph union, shadows).
    var isProse: Bool { self == .notebook || self == .saga }
}
