import QuireCore

/// Incarnations: how a device that came back from a copy of itself never
/// mints a dot twice.
///
/// The actor of every local write is (device id, incarnation). The
/// incarnation lives in the replica (meta), so a copy of the device
/// directory carries the incarnation of the moment it was taken. A new,
/// random one is minted at init, at every restore, and whenever this device
/// learns it was rolled back. The signs, checked on every row a sibling
/// sends, before it is merged (only the current incarnation counts; a dot of
/// an older one can never be minted again):
///  1. the sibling has seen more writes of this actor on the row than this
///     device holds (its context entry is higher): they were made here and
///     lost here;
///  2. the sibling holds a version under a dot of this actor that this
///     device holds with other content: the dot was minted twice;
///  3. the sibling's context covers a version this device wrote, still
///     holds, and has not yet seen confirmed anywhere (the `unshipped`
///     record), while the sibling does not hold it: either the sibling saw
///     it and replaced it, or it replaced a same-numbered write from before
///     the rollback. The two cannot be told apart, so it is treated as a
///     rollback; the cost of being wrong is one spare incarnation and a
///     duplicate head, never a lost write.
/// Recovery, in the same transaction as the merge that noticed: mint a new
/// incarnation, then re-issue every unconfirmed write of the old one under
/// the new actor, with the row's context lowered below the first
/// unconfirmed dot so that it no longer claims to have seen writes it never
/// saw. Siblings then merge the re-issued versions as concurrent edits
/// instead of discarding them as already seen.
///
/// A write is confirmed (its `unshipped` record cleared) when a sibling
/// sends the row back holding that very version, or when a sibling's root
/// for the namespace equals ours (it holds every leaf we hold).
extension ReplicaStore {
    /// The actor this device writes as now.
    public func actor() throws(StoreError) -> Actor {
        try read { () throws(StoreError) -> Actor in Actor(device: deviceID, incarnation: try currentIncarnation(db)) }
    }

    /// Mints a new incarnation (a restore does this before anything else):
    /// every later write is a fresh actor, and every unconfirmed write of
    /// the old one is re-issued under it.
    @discardableResult
    public func mintIncarnation(reason: String) throws(StoreError) -> Actor {
        try write { ctx in
            try ctx.recoverFromRollback(reason: reason)
            return try ctx.currentActor()
        }
    }

    /// A sibling's root for `namespace` equals `root`: if it is still ours,
    /// the sibling holds every version we hold there, so none of our writes
    /// in it needs watching for a rollback any more.
    public func confirmShipped(_ namespace: Namespace, root: [UInt8]) throws(StoreError) {
        let pending = try read { () throws(StoreError) -> Bool in
            try db.queryOne("SELECT 1 FROM unshipped WHERE ns = ? LIMIT 1", [.int(Int64(namespace.rawValue))]) { _ in true } ?? false
        }
        guard pending else { return }
        try write { ctx in
            let mine = try ctx.db.queryOne("SELECT count, sum FROM buckets WHERE ns = ? AND level = 0 AND prefix = 0",
                                           [.int(Int64(namespace.rawValue))]) { $0.fingerprint(countColumn: 0) } ?? .zero
            guard mine.root == root else { return }
            try ctx.db.run("DELETE FROM unshipped WHERE ns = ?", [.int(Int64(namespace.rawValue))])
        }
    }

    /// Local writes not yet seen confirmed by any sibling.
    public func unconfirmedWrites() throws(StoreError) -> Int {
        try read { () throws(StoreError) -> Int in Int(try db.queryOne("SELECT count(*) FROM unshipped") { $0.int(0) } ?? 0) }
    }

    /// Every time this device learned it was rolled back, newest first.
    public func rollbacks() throws(StoreError) -> [RollbackRecord] {
        try read { () throws(StoreError) -> [RollbackRecord] in
            try db.query("SELECT at, old, new, reason, reissued FROM rollbacks ORDER BY id DESC") {
                RollbackRecord(at: Timestamp(seconds: $0.int(0)), oldIncarnation: UInt64(bitPattern: $0.int(1)),
                               newIncarnation: UInt64(bitPattern: $0.int(2)), reason: $0.text(3) ?? "", reissued: Int($0.int(4)))
            }
        }
    }

    /// Rows holding two versions under one dot (a dot minted twice): both
    /// are kept and shown; this says where.
    public func collisions() throws(StoreError) -> [CollisionRecord] {
        try read { () throws(StoreError) -> [CollisionRecord] in
            try db.query("SELECT ns, key, dot, at, name FROM collisions ORDER BY id") {
                CollisionRecord(namespace: Namespace(rawValue: UInt8($0.int(0)))!, key: ID16(bytes: $0.blob(1) ?? [])!,
                                dot: $0.text(2) ?? "", at: Timestamp(seconds: $0.int(3)), name: $0.text(4) ?? "")
            }
        }
    }
}

public struct RollbackRecord: Equatable, Sendable {
    public var at: Timestamp
    public var oldIncarnation: UInt64
    public var newIncarnation: UInt64
    public var reason: String
    /// How many unconfirmed writes were re-issued under the new incarnation.
    public var reissued: Int
}

public struct CollisionRecord: Equatable, Sendable {
    public var namespace: Namespace
    public var key: RowKey
    public var dot: String
    public var at: Timestamp
    public var name: String
}

func currentIncarnation(_ db: Connection) throws(StoreError) -> UInt64 {
    guard let value = try db.queryOne("SELECT value FROM meta WHERE name = 'incarnation'", [], { $0.int(0) }) else {
        throw StoreError(.corrupt, "\(db.path): the replica has no incarnation; it was not opened by this version of quire")
    }
    return UInt64(bitPattern: value)
}

extension WriteContext {
    func currentActor() throws(StoreError) -> Actor {
        Actor(device: store.deviceID, incarnation: try currentIncarnation(db))
    }

    /// Records that `dot`, written here, is not yet known to be held by a
    /// sibling. Only the first unconfirmed counter per row is kept: the
    /// context of a re-issue is lowered below it.
    mutating func noteUnshipped(_ ns: Namespace, _ key: RowKey, _ dot: Dot) throws(StoreError) {
        try db.run("INSERT OR IGNORE INTO unshipped(ns, key, incarnation, counter) VALUES (?, ?, ?, ?)",
                   [.int(Int64(ns.rawValue)), .blob(key.bytes), .int(Int64(bitPattern: dot.actor.incarnation)), .int(Int64(dot.counter))])
    }

    private func firstUnshipped(_ ns: Namespace, _ key: RowKey, actor: Actor) throws(StoreError) -> UInt64? {
        try db.queryOne("SELECT counter FROM unshipped WHERE ns = ? AND key = ? AND incarnation = ?",
                        [.int(Int64(ns.rawValue)), .blob(key.bytes), .int(Int64(bitPattern: actor.incarnation))]) { UInt64($0.int(0)) }
    }

    /// Why `incoming` shows this device was rolled back, or nil.
    func rollbackSign(local: Row?, incoming: Row) throws(StoreError) -> String? {
        let me = try currentActor()
        let theirs = incoming.context[me], mine = local?.context[me] ?? 0
        guard theirs > 0 else { return nil }
        let what = "\(incoming.namespace) row \(incoming.key.hex.prefix(8))"
        if theirs > mine {
            return "a sibling has seen write \(theirs) of this device on \(what), which this device holds only up to \(mine)"
        }
        guard let local else { return nil }
        for h in incoming.heads where h.dot.actor == me {
            if let same = local.heads.first(where: { $0.dot == h.dot }),
               LeafEncoding.headDigest(same) != LeafEncoding.headDigest(h) {
                return "a sibling holds other content under this device's write \(h.dot) on \(what)"
            }
        }
        if let first = try firstUnshipped(incoming.namespace, incoming.key, actor: me) {
            let incomingDots = Set(incoming.heads.map(\.dot))
            for h in local.heads where h.dot.actor == me && h.dot.counter >= first
                && incoming.context.covers(h.dot) && !incomingDots.contains(h.dot) {
                return "a sibling's \(what) replaces this device's unconfirmed write \(h.dot)"
            }
        }
        return nil
    }

    /// Mints a new incarnation and re-issues the old one's unconfirmed
    /// writes under it (see the comment at the top of this file).
    mutating func recoverFromRollback(reason: String) throws(StoreError) {
        let old = try currentActor()
        var fresh: UInt64 = 0
        repeat { fresh = store.random.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } } while fresh == 0 || fresh == old.incarnation
        try db.run("UPDATE meta SET value = ? WHERE name = 'incarnation'", [.int(Int64(bitPattern: fresh))])
        let new = Actor(device: store.deviceID, incarnation: fresh)
        let marks = try db.query("SELECT ns, key, counter FROM unshipped WHERE incarnation = ?", [.int(Int64(bitPattern: old.incarnation))]) {
            (Namespace(rawValue: UInt8($0.int(0)))!, ID16(bytes: $0.blob(1) ?? [])!, UInt64($0.int(2)))
        }
        try db.run("DELETE FROM unshipped WHERE incarnation = ?", [.int(Int64(bitPattern: old.incarnation))])
        var reissued = 0
        for (ns, key, first) in marks {
            guard let record = try RowRecord.load(db, ns, key, withBody: true) else { continue }
            let row = try record.row(path: store.path)
            // The context no longer claims old-actor writes from the first
            // unconfirmed one on: those numbers may name other writes.
            var context = row.context.setting(old, to: min(row.context[old], first - 1))
            var heads: [RowHead] = []
            var newDots: [Dot] = []
            for h in row.heads {
                if h.dot.actor == old && h.dot.counter >= first {
                    let dot = context.nextDot(for: new)
                    context = context.adding(dot)
                    heads.append(RowHead(dot: dot, content: h.content))
                    newDots.append(dot)
                    reissued += 1
                } else {
                    heads.append(h)
                }
            }
            let updated = Row(namespace: ns, key: key, context: context, heads: heads)
            try writeRow(updated, previousLeaf: record.leaf, exists: true)
            noteOutbox(ns, key, counter: context[new])
            for dot in newDots { try noteUnshipped(ns, key, dot) }
        }
        try db.run("INSERT INTO rollbacks(at, old, new, reason, reissued) VALUES (?, ?, ?, ?, ?)",
                   [.int(now.seconds), .int(Int64(bitPattern: old.incarnation)), .int(Int64(bitPattern: fresh)), .text(reason), .int(Int64(reissued))])
    }

    mutating func recordCollision(_ row: Row, _ dot: Dot) throws(StoreError) {
        try db.run("INSERT INTO collisions(ns, key, dot, at, name) VALUES (?, ?, ?, ?, ?)",
                   [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes), .text(dot.description), .int(now.seconds),
                    .text(row.content?.displayName ?? "")])
    }

    /// A sibling sent back a row holding our unconfirmed version(s): it
    /// has them, so a later replacement of them is a real one.
    mutating func confirmShipped(incoming: Row) throws(StoreError) {
        let me = try currentActor()
        guard let first = try firstUnshipped(incoming.namespace, incoming.key, actor: me),
              let local = try RowRecord.load(db, incoming.namespace, incoming.key, withBody: false)?.row(path: store.path) else { return }
        let mine = local.heads.filter { $0.dot.actor == me && $0.dot.counter >= first }
        let held = mine.allSatisfy { h in incoming.heads.contains { $0.dot == h.dot && LeafEncoding.headDigest($0) == LeafEncoding.headDigest(h) } }
        if held && (!mine.isEmpty || incoming.context[me] >= local.context[me]) {
            try db.run("DELETE FROM unshipped WHERE ns = ? AND key = ?", [.int(Int64(incoming.namespace.rawValue)), .blob(incoming.key.bytes)])
        }
    }
}
