import QuireCore

/// Residency of note bodies: offloading to holders and recalling. Residency
/// is not an edit: nothing here touches a version vector, updatedAt, the
/// outbox, or a leaf (the leaf commits to the content hash either way).
extension ReplicaStore {
    /// The one mutator that clears a body. Refuses unless the stored body
    /// hashes to `contentHash` (so an edit made while the offload was in
    /// flight keeps its new body), then stamps the hash, clears the body and
    /// records the holders, in one transaction.
    public func markOffloaded(_ key: RowKey, contentHash: [UInt8], holders: [DeviceID]) throws(StoreError) {
        try write { ctx in
            guard let record = try RowRecord.load(ctx.db, .notebook, key, withBody: true), !record.isTombstone else {
                throw StoreError(.notFound, "no note \(key)")
            }
            guard !record.isOffloaded, let body = record.body else {
                throw StoreError(.conflict, "note \(key) is already offloaded")
            }
            let heads = try record.row(path: path).heads.count
            guard heads == 1 else {
                // Only the first head's body has a column to clear; a note
                // with concurrent versions is fresh anyway, never "old".
                throw StoreError(.conflict, "note \(key) holds \(heads) concurrent versions; it stays resident until an edit joins them")
            }
            guard Note.bodyDigest(body) == contentHash else {
                throw StoreError(.conflict, "note \(key) changed while its offload was in flight; its new body stays resident")
            }
            guard !holders.isEmpty else { throw StoreError(.invalidInput, "an offload needs at least one holder") }
            let holderBytes = Self.encodedHolders(holders)
            // The shadow would keep a second full copy on a device that asked
            // for the space back. When it equals the offloaded bytes (a mark
            // does), the holders keep exactly that text (and a homebase's own
            // shadow restores a clobber there), so it can go; a shadow that
            // differs from the body is still this device's only copy of
            // those words.
            try ctx.db.run("DELETE FROM shadows WHERE ns = ? AND key = ? AND (same = 1 OR text = ?)",
                           [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes), .blob(body)])
            try ctx.db.run("UPDATE rows SET body = NULL, offloaded = 1, holders = ?, seq = ? WHERE ns = ? AND key = ?",
                           [.blob(holderBytes), .int(ctx.seq), .int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes)])
        }
    }

    /// Records the holders of an offloaded note that had none recorded (it
    /// came here already offloaded, from a sibling), once they were asked
    /// and said they hold its body. Residency only: no version, no seq.
    public func recordFoundHolders(_ key: RowKey, contentHash: [UInt8], holders: [DeviceID]) throws(StoreError) {
        guard !holders.isEmpty else { return }
        try write { ctx in
            try ctx.db.run("UPDATE rows SET holders = ? WHERE ns = ? AND key = ? AND offloaded = 1 AND hash = ? AND (holders IS NULL OR holders = ?)",
                           [.blob(Self.encodedHolders(holders)), .int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes), .blob(contentHash),
                            .blob(Self.encodedHolders([]))])
        }
    }

    /// The `holders` column: the device ids, sorted, as a CBOR array.
    static func encodedHolders(_ holders: [DeviceID]) -> [UInt8] {
        CBORWriter.encode(.array(holders.sorted().map { .bytes($0.bytes) }))
    }

    /// Puts recalled bytes back: checked against the hash first, then stored
    /// resident in every offloaded note that names this content, with no
    /// version bump. Returns how many notes became resident.
    ///
    /// Every head of such a note that points at this content is filled, not
    /// only the first: two versions made where the note was offloaded (a
    /// rename on each of two devices) are two pointers, and a version made
    /// elsewhere concurrently may sort before the offloaded one. `key`: the
    /// note the recall was for, which the hash index finds only when its
    /// first head is the pointer. Without both, a recall that succeeded left
    /// the note offloaded (simulator seed 12 with --steps 24), and the mount
    /// showed the recalled head alone instead of the union.
    @discardableResult
    public func restoreBody(_ body: [UInt8], contentHash: [UInt8], key: RowKey? = nil) throws(StoreError) -> Int {
        guard Note.bodyDigest(body) == contentHash else {
            throw StoreError(.invalidInput, "recalled bytes do not match content hash \(Hex.encode(contentHash.prefix(8))); rejected")
        }
        return try write { ctx in
            var keys = try ctx.offloadedKeys(contentHash: contentHash)
            if let key, !keys.contains(key) { keys.append(key) }
            var restored = 0
            for key in keys {
                guard let record = try RowRecord.load(ctx.db, .notebook, key, withBody: true), !record.isTombstone else { continue }
                var row = try record.row(path: path)
                var filled = false
                for head in row.heads {
                    guard case .note(var note) = head.content, note.body == nil, note.contentHash == contentHash else { continue }
                    note.body = body
                    note.length = nil
                    row.replaceHeadContent(head.dot, with: .note(note))
                    filled = true
                }
                guard filled else { continue }
                try ctx.writeRow(row, previousLeaf: record.leaf, exists: true)
                let args: [SQLValue] = [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes)]
                try ctx.db.run("UPDATE rows SET holders = NULL WHERE ns = ? AND key = ? AND offloaded = 0", args)
                try ctx.db.run("UPDATE damaged SET repaired = ? WHERE key = ? AND hash = ? AND repaired IS NULL",
                               [.int(ctx.now.seconds), .blob(key.bytes), .blob(contentHash)])
                restored += 1
            }
            return restored
        }
    }

    /// Offloaded notes: key, title, content hash, size, holders.
    public func offloadedNotes() throws(StoreError) -> [OffloadedNote] {
        try read { () throws(StoreError) -> [OffloadedNote] in
            // Through the offloaded-only index: the key index would read every note.
            try db.query("SELECT key, name, size, hash, holders FROM rows INDEXED BY rows_offloaded_hash"
                         + " WHERE ns = ? AND offloaded = 1 AND tombstone = 0 ORDER BY key",
                         [.int(Int64(Namespace.notebook.rawValue))]) { s throws(StoreError) in
                let key = ID16(bytes: s.blob(0) ?? [])!
                do {
                    let hash = s.blob(3) ?? []
                    guard hash.count == 32 else { throw StoreError(.corrupt, "content hash of \(hash.count) bytes") }
                    var holders: [DeviceID] = []
                    if let h = s.blob(4) { for item in try CBORReader.decode(h).asArray() { if let d = ID16(bytes: try item.asBytes()) { holders.append(d) } } }
                    return OffloadedNote(key: key, title: s.text(1) ?? "", contentHash: hash, size: Int(s.int(2)), holders: holders)
                } catch { throw StoreError(.corrupt, "\(path): offloaded note \(key) does not decode: \(error)") }
            }
        }
    }

    /// Keeps a body for another device (the homebase side of offload_put).
    /// Checked against its hash, committed before the caller acks.
    public func holdBody(_ body: [UInt8], contentHash: [UInt8], for owner: DeviceID) throws(StoreError) {
        guard Note.bodyDigest(body) == contentHash else {
            throw StoreError(.invalidInput, "offered body does not match content hash \(Hex.encode(contentHash.prefix(8))); refused")
        }
        try write { ctx in
            try ctx.db.run("INSERT OR IGNORE INTO held_bodies(hash, body, size, owner, at) VALUES (?, ?, ?, ?, ?)",
                           [.blob(contentHash), .blob(body), .int(Int64(body.count)), .blob(owner.bytes), .int(ctx.now.seconds)])
        }
        try sync()
    }

    /// Many bodies at once (a homebase answering a burst of offload_puts):
    /// each checked against its hash, all committed in one transaction and
    /// made durable before any of them is acknowledged.
    public func holdBodies(_ items: [(body: [UInt8], contentHash: [UInt8], owner: DeviceID)]) throws(StoreError) {
        for item in items where Note.bodyDigest(item.body) != item.contentHash {
            throw StoreError(.invalidInput, "offered body does not match content hash \(Hex.encode(item.contentHash.prefix(8))); refused")
        }
        guard !items.isEmpty else { return }
        try write { ctx in
            for item in items {
                try ctx.db.run("INSERT OR IGNORE INTO held_bodies(hash, body, size, owner, at) VALUES (?, ?, ?, ?, ?)",
                               [.blob(item.contentHash), .blob(item.body), .int(Int64(item.body.count)), .blob(item.owner.bytes),
                                .int(ctx.now.seconds)])
            }
        }
        try sync()
    }

    /// Records that `owner`'s offload counted this device's resident copies
    /// of `hashes` among `required` copies, at `epoch` (the owner's clock).
    /// Committed before the answer that counts them leaves (it is a promise).
    public func pinCopies(_ hashes: [[UInt8]], for owner: DeviceID, required: Int, epoch: UInt64 = 0) throws(StoreError) {
        guard !hashes.isEmpty, required > 0 else { return }
        try write { ctx in
            for hash in hashes {
                try ctx.db.run("""
                    INSERT INTO copy_pins(hash, owner, required, epoch, at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(hash, owner) DO UPDATE SET required = max(required, excluded.required),
                        epoch = max(epoch, excluded.epoch), at = excluded.at
                    """, [.blob(hash), .blob(owner.bytes), .int(Int64(required)), .int(Int64(clamping: epoch)), .int(ctx.now.seconds)])
            }
        }
    }

    /// `owner` no longer relies on this device's copies of `hashes` (its
    /// offload failed, or it holds the body again): pins it made up to
    /// `epoch` go. `dropKept`: a body kept for pins goes once no sibling's
    /// pin is left on it (not on a homebase, which keeps every body it holds).
    public func releaseCopies(_ hashes: [[UInt8]], for owner: DeviceID, epoch: UInt64, dropKept: Bool) throws(StoreError) {
        guard !hashes.isEmpty else { return }
        try write { ctx in
            for hash in hashes {
                let args: [SQLValue] = [.blob(hash), .blob(owner.bytes)]
                try ctx.db.run("DELETE FROM copy_pins WHERE hash = ? AND owner = ? AND epoch <= ?", args + [.int(Int64(clamping: epoch))])
                let pinned = try ctx.db.queryOne("SELECT 1 FROM copy_pins WHERE hash = ?", [.blob(hash)]) { _ in true } ?? false
                if dropKept && !pinned { try ctx.db.run("DELETE FROM held_bodies WHERE hash = ? AND forPin = 1", [.blob(hash)]) }
            }
        }
    }

    /// The siblings whose offloads counted this device's copy of
    /// `contentHash`, each with the copies it required.
    public func copyPins(contentHash: [UInt8]) throws(StoreError) -> [(owner: DeviceID, required: Int)] {
        try read { () throws(StoreError) -> [(owner: DeviceID, required: Int)] in
            try db.query("SELECT owner, required FROM copy_pins WHERE hash = ? ORDER BY owner", [.blob(contentHash)]) { s in
                (owner: ID16(bytes: s.blob(0) ?? []), required: Int(s.int(1)))
            }.compactMap { pin in pin.owner.map { (owner: $0, required: pin.required) } }
        }
    }

    /// The most copies any sibling's offload counted this device's copy of
    /// `contentHash` among (0: none did). Offloading it here needs as many
    /// other copies, or that sibling would be left with fewer than it asked.
    public func pinnedCopies(contentHash: [UInt8]) throws(StoreError) -> Int {
        try copyPins(contentHash: contentHash).map(\.required).max() ?? 0
    }

    /// The holders recorded for an offloaded note (empty when resident).
    public func offloadHolders(_ key: RowKey) throws(StoreError) -> [DeviceID] {
        try read { () throws(StoreError) -> [DeviceID] in
            guard let blob = try db.queryOne("SELECT holders FROM rows WHERE ns = ? AND key = ? AND offloaded = 1",
                                             [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes)], { $0.blob(0) }) ?? nil else { return [] }
            do { return try CBORReader.decode(blob).asArray().compactMap { ID16(bytes: try $0.asBytes()) } } catch {
                throw StoreError(.corrupt, "\(path): holders of note \(key) do not decode: \(error)")
            }
        }
    }

    /// A body this device can serve for `contentHash`: held for someone,
    /// or resident in its own note `key` (the requester names the note it
    /// wants). Re-checked against the hash before it is handed out.
    public func servableBody(contentHash: [UInt8], key: RowKey? = nil) throws(StoreError) -> [UInt8]? {
        try read { () throws(StoreError) -> [UInt8]? in
            if let held = try db.queryOne("SELECT body FROM held_bodies WHERE hash = ?", [.blob(contentHash)], { $0.blob(0) ?? [] }),
               Note.bodyDigest(held) == contentHash { return held }
            if let key,
               let body = try db.queryOne("SELECT body, bodyFormat FROM rows WHERE ns = ? AND key = ? AND offloaded = 0 AND tombstone = 0 AND body IS NOT NULL",
                                          [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes)], { StoredBody.decode($0.blob(0) ?? [], format: $0.int(1)) }) ?? nil,
               Note.bodyDigest(body) == contentHash { return body }
            // A later head of the note: a version it was offloaded at can be
            // joined here by a concurrent one that sorts first, and the bytes
            // an offload counted as a copy are still here (seed 463 with
            // --everything: the copy was there, but nothing could serve it).
            if let key, let record = try RowRecord.load(db, .notebook, key, withBody: false), !record.isTombstone,
               let row = try? record.row(path: path) {
                for head in row.heads.dropFirst() {
                    if case .note(let n) = head.content, let body = n.body, Note.bodyDigest(body) == contentHash { return body }
                }
            }
            return nil
        }
    }

    /// How many bodies (and bytes) this device holds, per owner device.
    public func heldBodies() throws(StoreError) -> [(owner: DeviceID, count: Int, bytes: Int64)] {
        try read { () throws(StoreError) -> [(owner: DeviceID, count: Int, bytes: Int64)] in
            try db.query("SELECT owner, count(*), sum(size) FROM held_bodies GROUP BY owner ORDER BY owner") {
                (owner: ID16(bytes: $0.blob(0) ?? [])!, count: Int($0.int(1)), bytes: $0.int(2))
            }
        }
    }

    /// Returns freed pages to the file system (after offloading).
    public func reclaimSpace() throws(StoreError) {
        try read { () throws(StoreError) in
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            let mode = try db.queryOne("PRAGMA auto_vacuum") { $0.int(0) } ?? 0
            try db.execute(mode == 2 ? "PRAGMA incremental_vacuum" : "VACUUM")
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }
}

public struct OffloadedNote: Equatable, Sendable {
    public var key: RowKey
    public var title: String
    public var contentHash: [UInt8]
    public var size: Int
    public var holders: [DeviceID]
}

extension WriteContext {
    /// Residency is not an edit: a version that arrives as a pointer to
    /// bytes this device has (the note resident here, or a body it holds for
    /// a sibling) is stored with those bytes. Otherwise an edit made where
    /// the note is offloaded (a rename keeps the pointer) cleared the body on
    /// every device it reached, the homebase's row and the resident copies
    /// an offload counted among its copies included (simulator, seed 263 with
    /// --everything).
    func fillingPointers(_ row: Row, from local: Row?) throws(StoreError) -> Row {
        guard row.namespace == .notebook else { return row }
        var out = row
        for head in row.heads {
            guard case .note(var note) = head.content, note.body == nil else { continue }
            var bytes: [UInt8]? = nil
            for mine in local?.heads ?? [] {
                if case .note(let n) = mine.content, let body = n.body, n.contentHash == note.contentHash { bytes = body; break }
            }
            if bytes == nil {
                bytes = try db.queryOne("SELECT body FROM held_bodies WHERE hash = ?", [.blob(note.contentHash)]) { $0.blob(0) ?? [] }
            }
            guard let bytes, Note.bodyDigest(bytes) == note.contentHash else { continue }
            note.body = bytes
            note.length = nil
            out.replaceHeadContent(head.dot, with: .note(note))
        }
        return out
    }

    func offloadedKeys(contentHash: [UInt8]) throws(StoreError) -> [RowKey] {
        try db.query("SELECT key FROM rows WHERE hash = ? AND offloaded = 1 AND tombstone = 0", [.blob(contentHash)]) { ID16(bytes: $0.blob(0) ?? [])! }
    }
}
