import QuireCore

/// The upgrade of a replica written before rows had heads (schema 3): each
/// stored row becomes one head under its old vector, in place, inside the
/// migration's transaction, and the fingerprint buckets are rebuilt from
/// the new leaves. Every device converts the same old row to the same new
/// one (the dot is a function of the row), so an upgraded fleet agrees
/// without a sync; rows that differed before still merge as usual.
enum RowsToHeads {
    static func convert(_ db: Connection, random: any RandomSource) throws(StoreError) {
        let incarnation = random.bytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } | 1
        try db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('incarnation', ?)", [.int(Int64(bitPattern: incarnation))])
        let s = try db.prepare("SELECT id, ns, key, vv, tombstone, content, body, offloaded FROM rows ORDER BY id")
        var converted: [(id: Int64, row: Row)] = []
        while try s.step() {
            guard let ns = Namespace(rawValue: UInt8(s.int(1))), let key = ID16(bytes: s.blob(2) ?? []) else {
                throw StoreError(.corrupt, "\(db.path): row \(s.int(0)) has a bad namespace or key; not upgraded")
            }
            do {
                let context = try VersionVector(legacyCBOR: try CBORReader.decode(s.blob(3) ?? []))
                if s.int(4) != 0 {
                    converted.append((s.int(0), .tombstone(ns, key, context: context)))
                    continue
                }
                var content = try RowContent.decode(ns, fields: try CBORReader.decode(s.blob(5) ?? []), body: nil)
                if case .note(var n) = content {
                    if s.int(7) == 0 { n.body = s.blob(6) ?? [] }
                    content = .note(n)
                }
                let dot = legacyDot(context, editor: content.editedBy)
                let head = RowHead(dot: dot, content: content)
                converted.append((s.int(0), Row(namespace: ns, key: key, context: context.adding(dot, tag: head.tag), heads: [head])))
            } catch {
                throw StoreError(.corrupt, "\(db.path): row \(ns)/\(key) does not decode; not upgraded: \(error)")
            }
        }
        var deltas = Buckets.Deltas()
        for (id, row) in converted {
            let leaf = LeafEncoding.leaf(of: row)
            try db.run("UPDATE rows SET vv = ?, content = ?, leaf = ? WHERE id = ?",
                       [.blob(row.context.encoded()),
                        row.isTombstone ? .null : .blob(row.encodedHeads(firstBodyApart: row.namespace == .notebook)),
                        leaf.map { .blob($0) } ?? .null, .int(id)])
            if let leaf { deltas.add(row.namespace, row.key, plus: Fingerprint(leaf: leaf), minus: .zero) }
        }
        try db.run("DELETE FROM buckets")
        for (id, fp) in deltas.all where fp.count > 0 {
            try db.run("INSERT INTO buckets(ns, level, prefix, count, sum) VALUES (?, ?, ?, ?, ?)",
                       [.int(Int64(id.ns)), .int(Int64(id.level)), .int(id.prefix), .int(Int64(bitPattern: fp.count)), .blob(fp.sumBytes)])
        }
        // Old outbox records still name rows to advertise; their counters
        // were of the old vectors and are not rollback marks.
    }

    /// The dot an old single-valued row is given: its editor's entry (the
    /// last writer), else the highest entry, else a first write of a
    /// device-less row. Deterministic, so every device picks the same one.
    static func legacyDot(_ context: VersionVector, editor: DeviceID?) -> Dot {
        if let editor {
            let actor = Actor(device: editor, incarnation: 0)
            if context[actor] > 0 { return Dot(actor: actor, counter: context[actor]) }
        }
        if let top = context.counters.max(by: { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }) {
            return Dot(actor: top.key, counter: top.value)
        }
        return Dot(actor: Actor(device: ID16(bytes: [UInt8](repeating: 0, count: 16))!, incarnation: 0), counter: 1)
    }
}
