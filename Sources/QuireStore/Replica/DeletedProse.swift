import QuireCore

/// The paragraphs a note body or journal day showed on this device when it
/// was deleted here (by this device or a sibling; see `mayBeWrittenAgain`),
/// as paragraph hashes; device-local, never in a leaf (rule 1).
///
/// A row written again after its delete (a journal day's key is its date)
/// deletes them with paragraph tombstones. Without them the new text
/// dropped the old paragraphs without a deletion, and a sibling that never
/// saw the delete, still holding the old text as its shadow, "restored"
/// them as a fresh edit: the deleted words came back, and beat a later
/// delete too.
enum DeletedProse {
    /// Whether this device can write the row again under its key: a
    /// journal day always (its key is its date); a note only when a
    /// sibling deleted it (a file open here saves into it). A note deleted
    /// here cannot be: the mount's files open on it write nowhere, and a
    /// new file of its name is a new row. So `rm -r` of a folder of notes
    /// pays nothing for the record.
    static func mayBeWrittenAgain(_ ns: Namespace, deletedHere: Bool) -> Bool {
        ns == .saga || !deletedHere
    }

    /// `row` (a tombstone) replaces what is stored: remember the paragraphs
    /// of the stored text and of the shadow's own copy. Nothing to remember
    /// over a tombstone (the record of the first delete stays) or a body
    /// not held here.
    static func noteDelete(_ db: Connection, _ row: Row, path: String) throws(StoreError) {
        guard row.isTombstone, row.namespace.isProse else { return }
        var hashes = Set<ParagraphHash>()
        for text in [try Shadows.storedText(db, row.namespace, row.key, path: path), try Shadows.copy(db, row.namespace, row.key)] {
            if let text { hashes.formUnion(Paragraphs.hashes(of: String(decoding: text, as: UTF8.self))) }
        }
        guard !hashes.isEmpty else { return }
        try db.run("INSERT OR REPLACE INTO deleted_prose(ns, key, hashes) VALUES (?, ?, ?)",
                   [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes), .blob(hashes.sorted().flatMap(\.bytes))])
    }

    /// The paragraphs deleted with the row `key`, if it is deleted here.
    static func load(_ db: Connection, _ ns: Namespace, _ key: RowKey) throws(StoreError) -> Set<ParagraphHash> {
        let bytes = try db.queryOne("SELECT hashes FROM deleted_prose WHERE ns = ? AND key = ?",
                                    [.int(Int64(ns.rawValue)), .blob(key.bytes)]) { $0.blob(0) ?? [] } ?? []
        var out = Set<ParagraphHash>()
        var at = 0
        while at + ParagraphHash.byteCount <= bytes.count {
            if let hash = ParagraphHash(bytes: Array(bytes[at..<at + ParagraphHash.byteCount])) { out.insert(hash) }
            at += ParagraphHash.byteCount
        }
        return out
    }

    /// The row lives again (written here or by a sibling): what its delete
    /// removed is no longer this device's to tell.
    static func forget(_ db: Connection, _ ns: Namespace, _ key: RowKey) throws(StoreError) {
        try db.run("DELETE FROM deleted_prose WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
    }
}
