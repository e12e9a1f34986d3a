import QuireCore

/// The upgrade of contacts and plans to whole vCard and iCalendar files
/// (leaf version 3), in place, inside the migration's transaction.
///
/// Each stored head of the old form (a contact's name, emails, phones and
/// note; a plan's title, notes, due date and done flag) decodes to the
/// card the old mount showed (`RowContent.decode` reads both forms), and
/// is written back in the new form under the same dot. The conversion is
/// a function of the old head alone, so every device of a fleet makes the
/// same rows and the same leaves without a sync.
///
/// Contexts: a context's tag names the digest of the write at its counter,
/// and the digests change with the encoding. A head's own entry is given
/// its new digest; every other tag on these rows (writes a tombstone saw,
/// concurrent writes since replaced) becomes 0, "unknown", which a join
/// may always produce. Left as they were, an old tag would look like a
/// second write under the same dot next to the re-encoded head, and a
/// device would think it had been rolled back.
enum CardsUpgrade {
    static func convert(_ db: Connection, random: any RandomSource) throws(StoreError) {
        let namespaces = [Namespace.plans, .contacts]
        let list = namespaces.map { String($0.rawValue) }.joined(separator: ",")
        let s = try db.prepare("SELECT id, ns, key, vv, tombstone, content FROM rows WHERE ns IN (\(list)) ORDER BY id")
        var converted: [(id: Int64, row: Row)] = []
        while try s.step() {
            guard let ns = Namespace(rawValue: UInt8(s.int(1))), let key = ID16(bytes: s.blob(2) ?? []) else {
                throw StoreError(.corrupt, "\(db.path): row \(s.int(0)) has a bad namespace or key; not upgraded")
            }
            do {
                let context = try VersionVector(cbor: try CBORReader.decode(s.blob(3) ?? []))
                if s.int(4) != 0 {
                    converted.append((s.int(0), .tombstone(ns, key, context: context.retagged { _, _ in 0 })))
                    continue
                }
                let old = try Row.decode(ns, key: key, context: context, heads: try CBORReader.decode(s.blob(5) ?? []))
                let heads = old.heads.map { head in
                    // Old contacts had no UID, and khard skips a card without
                    // one: each gets its row key's, as the mount gives a new card.
                    guard case .contact(let c) = head.content, c.uid == nil else { return head }
                    return RowHead(dot: head.dot, content: .contact(Contact(name: c.name, emails: c.emails, phones: c.phones, note: c.note,
                                                                          uid: key.uuidText, updatedAt: c.updatedAt, editedBy: c.editedBy)))
                }
                // Two heads under one dot (a collision): not known.
                let retagged = context.retagged { actor, entry in
                    let under = heads.filter { $0.dot.actor == actor && $0.dot.counter == entry.counter }
                    return under.count == 1 ? under[0].tag : 0
                }
                converted.append((s.int(0), Row(namespace: ns, key: key, context: retagged, heads: heads)))
            } catch {
                throw StoreError(.corrupt, "\(db.path): row \(ns)/\(key) does not decode; not upgraded: \(error)")
            }
        }
        var deltas = Buckets.Deltas()
        for (id, row) in converted {
            let leaf = LeafEncoding.leaf(of: row)
            try db.run("UPDATE rows SET vv = ?, content = ?, leaf = ? WHERE id = ?",
                       [.blob(row.context.encoded()), row.isTombstone ? .null : .blob(row.encodedHeads(firstBodyApart: false)),
                        leaf.map { .blob($0) } ?? .null, .int(id)])
            if let leaf { deltas.add(row.namespace, row.key, plus: Fingerprint(leaf: leaf), minus: .zero) }
        }
        // The contexts of collected tombstones (the graveyard, which goes
        // into anchors) forget their tags too, for the same reason.
        let graves = try db.query("SELECT ns, key, context FROM graveyard WHERE ns IN (\(list))") { ($0.int(0), $0.blob(1) ?? [], $0.blob(2) ?? []) }
        for (ns, key, blob) in graves {
            do {
                let context = try VersionVector(cbor: try CBORReader.decode(blob)).retagged { _, _ in 0 }
                try db.run("UPDATE graveyard SET context = ? WHERE ns = ? AND key = ?", [.blob(context.encoded()), .int(ns), .blob(key)])
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError(.corrupt, "\(db.path): a collected tombstone's context does not decode; not upgraded: \(error)")
            }
        }
        // These namespaces' fingerprints, rebuilt from the new leaves.
        try db.run("DELETE FROM buckets WHERE ns IN (\(list))")
        for (id, fp) in deltas.all where fp.count > 0 {
            try db.run("INSERT INTO buckets(ns, level, prefix, count, sum) VALUES (?, ?, ?, ?, ?)",
                       [.int(Int64(id.ns)), .int(Int64(id.level)), .int(id.prefix), .int(Int64(bitPattern: fp.count)), .blob(fp.sumBytes)])
        }
    }
}
