import QuireCore

/// The state of one write transaction: its change number and the pending
/// fingerprint deltas, flushed once by `finish()` before COMMIT.
struct WriteContext {
    let store: ReplicaStore
    let db: Connection
    let seq: Int64
    var deltas = Buckets.Deltas()
    /// Rows written so far in this transaction (a caller can tell whether
    /// an edit changed anything without loading the row again).
    var rowsWritten = 0
    var now: Timestamp
    /// Local edits of this transaction, per namespace: (last key, count, highest counter).
    var outbox: [Namespace: (key: RowKey, edits: Int, counter: UInt64)] = [:]
    /// The sibling whose rows this transaction applies (nil: not known);
    /// it is recorded as confirming the writes of ours they hold.
    var sender: DeviceID?
    /// The roster holders are recorded against, once read (`Holders.swift`).
    var holderRoster: Set<[UInt8]>?? = nil
    /// This device's incarnation, read once per transaction.
    let incarnation = TransactionIncarnation()
    /// Bodies of a batch write, deflated on other cores as it runs.
    var bodiesAhead: BodiesAhead?
    /// Whether the text a write replaces or deletes is kept in the trash
    /// and earlier versions (off for a deletion on a full disk: the copy is
    /// what needs the space).
    var keepsReplacedText = true

    init(store: ReplicaStore) throws(StoreError) {
        self.store = store
        self.db = store.db
        self.seq = (try db.queryOne("SELECT value FROM meta WHERE name = 'seq'") { $0.int(0) } ?? 0) + 1
        self.now = store.clock.now()
    }

    mutating func finish() throws(StoreError) {
        for (id, delta) in deltas.all where delta != .zero {
            let old = try db.queryOne("SELECT count, sum FROM buckets WHERE ns = ? AND level = ? AND prefix = ?",
                                      [.int(Int64(id.ns)), .int(Int64(id.level)), .int(id.prefix)]) {
                $0.fingerprint(countColumn: 0)
            } ?? .zero
            let new = old + delta
            if new.count == 0 {
                try db.run("DELETE FROM buckets WHERE ns = ? AND level = ? AND prefix = ?",
                           [.int(Int64(id.ns)), .int(Int64(id.level)), .int(id.prefix)])
            } else {
                try db.run("INSERT OR REPLACE INTO buckets(ns, level, prefix, count, sum) VALUES (?, ?, ?, ?, ?)",
                           [.int(Int64(id.ns)), .int(Int64(id.level)), .int(id.prefix), .int(Int64(bitPattern: new.count)), .blob(new.sumBytes)])
            }
        }
        // The outbox record commits with the edits it speaks of: one per
        // namespace and transaction (a bulk import of 100,000 notes is one
        // advertisement's worth of news, not 100,000 records).
        for (ns, entry) in outbox.sorted(by: { $0.key < $1.key }) {
            try db.run("INSERT INTO outbox(ns, key, counter, edits, at) VALUES (?, ?, ?, ?, ?)",
                       [.int(Int64(ns.rawValue)), .blob(entry.key.bytes), .int(Int64(entry.counter)), .int(Int64(entry.edits)), .int(now.seconds)])
        }
        try db.run("UPDATE meta SET value = ? WHERE name = 'seq'", [.int(seq)])
    }

    mutating func noteOutbox(_ ns: Namespace, _ key: RowKey, counter: UInt64) {
        let previous = outbox[ns]
        outbox[ns] = (key: key, edits: (previous?.edits ?? 0) + 1, counter: max(counter, previous?.counter ?? 0))
    }

    // MARK: Local edits

    mutating func putLocal(_ content: RowContent, key explicitKey: RowKey?, freshRandomKey: RowKey? = nil) throws(StoreError) -> Row {
        if let fresh = freshRandomKey, naturalKeyIsRandom(content) { return try putLocal(content, newKey: fresh) }
        let freshKey = explicitKey == nil && naturalKeyIsRandom(content)
        let key = explicitKey ?? naturalKey(content)
        return try putLocal(content, key: key, isFresh: freshKey)
    }

    /// A local edit of a row the caller already loaded in this transaction
    /// (`decoded`: and decoded, by `decodeSettingAside`).
    mutating func putLocal(_ content: RowContent, key: RowKey, loaded: RowRecord?, decoded: Row? = nil) throws(StoreError) -> Row {
        try putLocal(content, key: key, isFresh: false, preloaded: .some(loaded), decoded: decoded)
    }

    /// A new row under a freshly drawn random key (bulk imports draw them all at once).
    mutating func putLocal(_ content: RowContent, newKey: RowKey) throws(StoreError) -> Row {
        try putLocal(content, key: newKey, isFresh: true)
    }

    private mutating func putLocal(_ content: RowContent, key: RowKey, isFresh freshKey: Bool,
                                   preloaded: RowRecord?? = nil, decoded: Row? = nil) throws(StoreError) -> Row {
        let ns = content.namespace
        // A freshly drawn random key cannot exist yet (the unique index
        // would refuse a 128-bit collision); skip the lookup on bulk imports.
        let existing: RowRecord?
        if let preloaded { existing = preloaded } else { existing = freshKey ? nil : try RowRecord.load(db, ns, key, withBody: true) }
        // A decode checks the body's digest: a row decoded once is not decoded again.
        var existingRow = decoded
        if existingRow == nil, let existing { existingRow = try decodeSettingAside(existing) }
        if ns == .memory, existingRow != nil {
            throw StoreError(.conflict, "memory is append-only: event \(key) already exists; record a new event instead")
        }
        if ns == .devices {
            throw StoreError(.invalidInput, "the devices roster is read-only here; use 'quire devices'")
        }
        let stamped = stamp(content, previous: existingRow?.content)
        if let existingRow, let old = existingRow.content, sameContent(old, stamped) {
            return existingRow    // nothing changed: no new version
        }
        return try writeLocalVersion(stamped, key: key, existing: existing, existingRow: existingRow, freshKey: freshKey)
    }

    /// A new version written here: a fresh dot of this device's actor whose
    /// context covers every head it replaces (the edit was made from the
    /// view of all of them), with its outbox and unshipped records.
    /// `freshKey`: a key drawn at random just now, that nothing can name yet.
    mutating func writeLocalVersion(_ content: RowContent, key: RowKey, existing: RowRecord?, existingRow: Row?,
                                    keepingConflicts: Bool = true, freshKey: Bool = false) throws(StoreError) -> Row {
        if keepingConflicts { try keepConflictingVersions(of: existingRow) }
        let actor = try currentActor()
        let context = existingRow?.context ?? existing?.context ?? VersionVector()
        let dot = context.nextDot(for: actor)
        let digest = LeafEncoding.contentDigest(content)
        var row = Row.single(content.namespace, key, dot: dot, context: context, content: content, headDigest: digest)
        if let existingRow { row = Self.keepingHeadsAPointerCannotHold(row, of: existingRow) }
        try writeRow(row, previousLeaf: existing?.leaf, exists: existing != nil, madeHere: true, knownDigest: (dot, digest))
        noteOutbox(content.namespace, key, counter: dot.counter)
        try noteUnshipped(content.namespace, key, dot, freshKey: freshKey)
        return row
    }

    /// A note written with its body offloaded here (a rename, tags or a
    /// move: the view of a prose row with a head not resident is a pointer
    /// to one body, not the paragraph union) stands only for the versions
    /// with that body. The others stay as concurrent heads, words and all,
    /// until an edit that sees them whole: replacing them would drop the
    /// words only they hold. (An attachment shows one version; the others
    /// become conflict copies, `keepConflictingVersions`.)
    static func keepingHeadsAPointerCannotHold(_ written: Row, of existing: Row) -> Row {
        guard existing.heads.count > 1, let head = written.heads.first, case .note(let note) = head.content,
              note.body == nil, note.isProse else {
            return written
        }
        let kept = existing.heads.filter { old in
            guard case .note(let n) = old.content else { return true }
            return n.contentHash != note.contentHash
        }
        guard !kept.isEmpty else { return written }
        return Row(namespace: written.namespace, key: written.key, context: written.context, heads: kept + [head])
    }

    mutating func deleteLocal(_ ns: Namespace, _ key: RowKey) throws(StoreError) -> Row {
        guard ns.hasTombstones, ns != .devices else {
            throw StoreError(.invalidInput, "\(ns) rows cannot be deleted; \(ns == .memory ? "record an event that buries it" : "use 'quire devices revoke'")")
        }
        guard let existing = try RowRecord.load(db, ns, key, withBody: false), !existing.isTombstone else {
            throw StoreError(.notFound, "no \(ns) row \(key)")
        }
        if ns == .notebook, existing.versions > 1,
           let whole = try RowRecord.load(db, ns, key, withBody: true) {
            try keepConflictingVersions(of: try decodeSettingAside(whole))
        }
        // A delete mints no dot: its context is exactly what it removes, so
        // a concurrent edit it never saw survives it (edit beats delete).
        let row = Row.tombstone(ns, key, context: existing.context)
        try writeRow(row, previousLeaf: existing.leaf, exists: true, madeHere: true)
        try db.run("DELETE FROM shadows WHERE ns = ? AND key = ?", [.int(Int64(ns.rawValue)), .blob(key.bytes)])
        noteOutbox(ns, key, counter: existing.context[try currentActor()])
        return row
    }

    private func naturalKeyIsRandom(_ content: RowContent) -> Bool {
        switch content {
        case .saga, .setting: return false
        default: return true
        }
    }

    /// Rows whose identity is their name get a derived key; others a random one.
    private func naturalKey(_ content: RowContent) -> RowKey {
        switch content {
        case .saga(let s): return SagaEntry.key(for: s.date)
        case .setting(let s): return Setting.key(for: s.name)
        default: return RowKey.random(using: store.random)
        }
    }

    /// A local edit's content, stamped (editor, times) as `putLocal` does.
    func stamped(_ content: RowContent, previous: RowContent?) -> RowContent { stamp(content, previous: previous) }

    /// Stamps the editor and times of a local edit.
    private func stamp(_ content: RowContent, previous: RowContent?) -> RowContent {
        let me = store.deviceID
        // Never stamp earlier than the version being replaced: a clock that
        // went backwards must not make a later edit lose to the one it edits.
        let now = max(self.now, previous?.updatedAt ?? self.now)
        switch content {
        case .note(var n):
            if case .note(let old)? = previous {
                n.createdAt = old.createdAt
                // A rename or move is dated, so it outlives a concurrent edit (RowView).
                let moved = !old.title.sameBytes(n.title) || old.folder != n.folder || old.kind != n.kind
                // Placed after the place it replaces, even one a sibling's
                // clock ahead of this one dated: the view shows the last placed.
                n.placedAt = moved ? old.placedAt.map { max(now, Timestamp(seconds: $0.seconds + 1)) } ?? now : old.placedAt
            } else if n.createdAt.seconds == 0 { n.createdAt = now }
            n.updatedAt = now
            n.editedBy = me
            return .note(n)
        case .plan(var p):
            if case .plan(let old)? = previous { p.createdAt = old.createdAt } else if p.createdAt.seconds == 0 { p.createdAt = now }
            p.updatedAt = now
            p.editedBy = me
            return .plan(p)
        case .contact(var c):
            c.updatedAt = now; c.editedBy = me
            return .contact(c)
        case .saga(var s):
            s.updatedAt = now; s.editedBy = me
            return .saga(s)
        case .setting(var s):
            s.updatedAt = now; s.editedBy = me
            return .setting(s)
        case .memory(var e):
            if e.at.seconds == 0 { e.at = now }
            return .memory(e)
        case .device:
            return content
        }
    }

    /// Equal apart from the stamp of this write, byte for byte (RowContent's
    /// equality compares the UTF-8 bytes of every text, never canonical
    /// equivalence: an edit that only changes normalization is an edit).
    private func sameContent(_ old: RowContent, _ new: RowContent) -> Bool {
        func unstamped(_ c: RowContent) -> RowContent {
            switch c {
            case .note(var n): n.updatedAt = Timestamp(seconds: 0); n.editedBy = nil; return .note(n)
            case .plan(var p): p.updatedAt = Timestamp(seconds: 0); p.editedBy = nil; return .plan(p)
            case .contact(var x): x.updatedAt = Timestamp(seconds: 0); x.editedBy = nil; return .contact(x)
            case .saga(var s): s.updatedAt = Timestamp(seconds: 0); s.editedBy = nil; return .saga(s)
            case .setting(var s): s.updatedAt = Timestamp(seconds: 0); s.editedBy = nil; return .setting(s)
            default: return c
            }
        }
        return unstamped(old) == unstamped(new)
    }

    // MARK: Remote rows

    /// Merges a row from a sibling. Never mints a dot, except to re-issue
    /// this device's own versions the sibling never saw (after a rollback,
    /// under a new incarnation; `ReplicaStore+Incarnation`).
    mutating func applyRemote(_ incoming: Row) throws(StoreError) -> RowMerge.Outcome {
        var existing = try RowRecord.load(db, incoming.namespace, incoming.key, withBody: true)
        var local = try existing.map { record throws(StoreError) in try decodeSettingAside(record) }
        let atRisk = try versionsAtRisk(local: local, incoming: incoming)
        if let reason = try rollbackSign(local: local, incoming: incoming, atRisk: atRisk) {
            try mintIncarnation(reason: reason, reissued: atRisk.count)
        }
        if let row = local, !atRisk.isEmpty {
            local = try reissue(atRisk, in: row, previousLeaf: existing?.leaf)
            existing = try RowRecord.load(db, incoming.namespace, incoming.key, withBody: false)
        }
        let outcome = RowMerge.merge(local: local, incoming: incoming)
        if case .store(let joined, let merged) = outcome {
            let row = try fillingPointers(joined, from: local)
            // Read before the write (a mark means the text stored until
            // now); set again, or dropped, below.
            // (A row new here has no shadow to read: a stray one is
            // dropped below, with the shadows of rows back from a delete.)
            let shadow = existing == nil ? nil : try loadShadow(row.namespace, row.key)
            if existing != nil { try Shadows.remove(db, row.namespace, row.key) }
            try writeRow(row, previousLeaf: existing?.leaf, exists: existing != nil)
            if merged {
                let detail = "joined \(Self.describe(local)) with \(Self.describe(incoming)) → \(Self.describe(row))"
                try db.run("INSERT INTO merges(ns, key, at, detail) VALUES (?, ?, ?, ?)",
                           [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes), .int(now.seconds), .text(detail)])
            }
            for dot in RowMerge.collisions(row) where !(local.map(RowMerge.collisions) ?? []).contains(dot) {
                try recordCollision(row, dot)
            }
            if row.isTombstone || local?.content == nil {
                // A deleted row's shadow speaks for text a delete saw (and a
                // row back from a delete starts afresh): never restore it.
                try db.run("DELETE FROM shadows WHERE ns = ? AND key = ?", [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes)])
            } else {
                _ = try restoreFromShadow(after: row, local: local, shadow: shadow)
            }
        }
        try confirmShipped(incoming: incoming)
        // The sender holds what it sent: recovery asks who held a version.
        if ReplicaStore.collectedNamespaces.contains(incoming.namespace) {
            let (db, me) = (db, store.deviceID)
            for head in incoming.heads {
                try noteHeld(incoming.namespace, incoming.key, actor: head.dot.actor, counter: head.dot.counter, by: sender) { () throws(StoreError) -> Bool in
                    guard head.dot.actor.device == me else { return local.map { $0.holds(head) || $0.saw(head) } ?? false }
                    // A write of ours held by nobody yet is one still waiting for its first confirmation.
                    return try Self.firstUnshipped(db, incoming.namespace, incoming.key, actor: head.dot.actor).map { head.dot.counter < $0 } ?? true
                }
            }
        }
        return outcome
    }

    static func describe(_ row: Row?) -> String {
        guard let row else { return "-" }
        let heads = row.heads.map { $0.dot.description }.joined(separator: " ")
        return "\(row.context) [\(heads.isEmpty ? "deleted" : heads)]"
    }

    // MARK: The one place a row is written

    /// The resident body this write takes from note `key`, if a sibling's
    /// offload counted it as a copy (`copy_pins`): kept as a body held for
    /// that sibling, so the copies it counted stay, whatever happens to the
    /// note here (deleted, replaced, or now shown as a pointer). `unless`:
    /// the hash the note keeps resident.
    func keepPinnedBody(of key: RowKey, unless kept: [UInt8]?) throws(StoreError) {
        guard let (hash, stored, format, owner) = try db.queryOne("""
            SELECT r.hash, r.body, r.bodyFormat, p.owner FROM rows r JOIN copy_pins p ON p.hash = r.hash
            WHERE r.ns = ? AND r.key = ? AND r.offloaded = 0 AND r.body IS NOT NULL LIMIT 1
            """, [.int(Int64(Namespace.notebook.rawValue)), .blob(key.bytes)], { s in
                (s.blob(0) ?? [], s.blob(1) ?? [], s.int(2), s.blob(3) ?? [])
            }), hash != kept else { return }
        // A damaged copy is no copy (the check of a hold query's answer).
        guard let body = StoredBody.decode(stored, format: format), Note.bodyDigest(body) == hash else { return }
        try db.run("INSERT OR IGNORE INTO held_bodies(hash, body, size, owner, at, forPin) VALUES (?, ?, ?, ?, ?, 1)",
                   [.blob(hash), .blob(body), .int(Int64(body.count)), .blob(owner), .int(now.seconds)])
    }

    /// `madeHere`: a local edit or delete (for the kept text's reason).
    /// `knownDigest`: the digest of the head `dot` wrote, if just computed.
    mutating func writeRow(_ row: Row, previousLeaf: [UInt8]?, exists: Bool, madeHere: Bool = false,
                           knownDigest: (dot: Dot, digest: [UInt8])? = nil) throws(StoreError) {
        rowsWritten += 1
        // Trash and earlier versions: the text this write replaces, kept on
        // this device in this transaction (WriteContext+Kept.swift).
        try keepReplacedText(by: row, exists: exists, madeHere: madeHere)
        if exists, row.namespace.isProse {
            // A tombstone has no leaf: `previousLeaf` says whether a live row is deleted or a deleted one lives again.
            if row.isTombstone, previousLeaf != nil, DeletedProse.mayBeWrittenAgain(row.namespace, deletedHere: madeHere) {
                try DeletedProse.noteDelete(db, row, path: store.path)
            }
            if !row.isTombstone, previousLeaf == nil { try DeletedProse.forget(db, row.namespace, row.key) }
            if keepsReplacedText {
                try Shadows.keepMarkedText(db, row, path: store.path)
            } else if row.isTombstone {
                // A deletion on a full disk keeps no copy of the text, here either.
                try Shadows.remove(db, row.namespace, row.key)
            }
        }
        // Every stored note head satisfies contentHash == digest(body)
        // (stamped on local edits, checked when a row is decoded), so the
        // leaf uses the stamped hash and never hashes a body again.
        // `recomputedRoots()` re-hashes bodies and so checks the invariant.
        let leaf = LeafEncoding.leaf(of: row, knownDigest: knownDigest)
        var name = "", size = 0, updated: Int64 = 0
        var contentBytes: [UInt8]? = nil
        var body: [UInt8]? = nil
        var offloaded = false
        var hash: [UInt8]? = nil
        var place = RowPlace()
        if row.isTombstone {
            // When this device learned of the delete: the barrier's age threshold.
            updated = now.seconds
        }
        if let view = row.content {
            name = view.displayName
            updated = view.updatedAt?.seconds ?? 0
            contentBytes = row.encodedHeads(firstBodyApart: row.namespace == .notebook)
            switch view {
            case .note(let n):
                // The first head's body lives in its own column: that is
                // what offloading clears and recall puts back.
                if case .note(let first)? = row.heads.first?.content {
                    body = first.body
                    offloaded = first.body == nil
                    hash = first.contentHash
                }
                size = n.body?.count ?? n.length ?? 0
                place = RowPlace(kind: n.kind, folder: n.folder, modifiedAt: n.modifiedAt, versions: row.heads.count)
            case .saga(let s):
                size = s.text.count
            default:
                break
            }
        }
        if exists, row.namespace == .notebook {
            try keepPinnedBody(of: row.key, unless: offloaded ? nil : hash)
        }
        if offloaded, exists, size == 0 {
            // Keep the known length of an offloaded body.
            size = Int(try db.queryOne("SELECT size FROM rows WHERE ns = ? AND key = ?",
                                       [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes)]) { $0.int(0) } ?? 0)
        }
        let stored = body.map { body in hash.flatMap { bodiesAhead?.stored($0) } ?? StoredBody.encode(body) }
        let args: [SQLValue] = [
            .int(Int64(row.namespace.rawValue)), .blob(row.key.bytes),
            .blob(row.context.encoded()), .int(row.isTombstone ? 1 : 0),
            .text(name), .int(updated), .int(Int64(size)), leaf.map { .blob($0) } ?? .null, .int(seq),
            .int(offloaded ? 1 : 0), contentBytes.map { .blob($0) } ?? .null, stored.map { .blob($0.bytes) } ?? .null,
            hash.map { .blob($0) } ?? .null, .int(stored?.format ?? StoredBody.raw),
            .int(Int64(place.kind.rawValue)), place.folder.map { .blob($0.bytes) } ?? .null, place.modifiedAt.map { .int($0) } ?? .null,
            .int(Int64(place.versions)),
        ]
        if exists {
            try db.run("""
                UPDATE rows SET vv = ?3, tombstone = ?4, name = ?5, updated = ?6, size = ?7, leaf = ?8, seq = ?9,
                    offloaded = ?10, content = ?11, body = ?12, hash = ?13, bodyFormat = ?14,
                    kind = ?15, parent = ?16, mtime = ?17, versions = ?18 WHERE ns = ?1 AND key = ?2
                """, args)
        } else {
            try db.run("""
                INSERT INTO rows(ns, key, vv, tombstone, name, updated, size, leaf, seq, offloaded, content, body, hash, bodyFormat,
                                 kind, parent, mtime, versions)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
                """, args)
        }
        deltas.add(row.namespace, row.key,
                   plus: leaf.map { Fingerprint(leaf: $0) } ?? .zero,
                   minus: previousLeaf.map { Fingerprint(leaf: $0) } ?? .zero)
    }
}
