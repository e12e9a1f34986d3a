import QuireCore

/// Incarnations: how a device that came back from a copy of itself never
/// mints a dot twice, and never loses what it wrote in between.
///
/// The actor of every local write is (device id, incarnation). The
/// incarnation lives in the replica (meta), so a copy of the device
/// directory carries the incarnation of the moment it was taken. A new,
/// random one is minted at init, at every restore, and whenever this device
/// learns it was rolled back: a sibling has seen more writes of the current
/// actor on a row than this device holds, or holds or replaced a different
/// write under one of its dots.
///
/// Each row a sibling sends is checked, before it is merged, for versions
/// this device wrote (any incarnation) that the merge would drop although
/// the sibling never saw them (a version it holds under the same dot with
/// other content is kept by the merge beside ours, and only says the dot
/// was minted twice):
///  - the sibling replaced it (its context covers the dot, it does not hold
///    it) and its context's tag for that dot names another write;
///  - the sibling replaced it without naming which write it saw (a higher
///    counter of that actor, or an unknown tag), and this device never saw
///    the write confirmed by a sibling (`unshipped`): keeping it costs a
///    spare version, dropping it could lose words.
/// Such a version is re-issued under the current actor (a new incarnation
/// first, if the current one is the one rolled back), and the row's context
/// is lowered below it so that it no longer claims writes it never saw; the
/// sibling then merges it as a concurrent edit instead of discarding it.
/// Versions the sibling holds alike, or replaced knowing them, merge as usual.
///
/// A write is confirmed (its `unshipped` record cleared) when a sibling
/// sends the row back holding that very version or naming it in its
/// context, or when a sibling's root for the namespace equals ours.
///
/// What this cannot tell apart, and which way it errs: a version written
/// before a backup and not yet confirmed when the backup was taken, then
/// replaced by this same device after the backup, comes back (re-issued)
/// beside the replacement when the copy is put back: a spare version, never
/// a lost one. A row edited and then deleted on a device put back from a
/// copy, before it first hears from a sibling, leaves a tombstone that claims
/// the edit's dot; if the fleet holds another write under that number (made
/// before the copy came back), that write goes with the delete. `quire
/// restore`, an open that finds another replica file than its own (a copy
/// put back as new files: ReplicaStore+FileIdentity.swift) and the anchor
/// check at start-up mint a new incarnation before any such write, so only
/// a copy put back into the same file (a disk or VM snapshot) with no
/// anchor to compare against meets either case.
extension ReplicaStore {
    /// The actor this device writes as now.
    public func actor() throws(StoreError) -> Actor {
        try read { () throws(StoreError) -> Actor in Actor(device: deviceID, incarnation: try currentIncarnation(db)) }
    }

    /// Mints a new incarnation (a restore does this before anything else):
    /// every later write is a fresh actor. Versions of the old one are
    /// checked against each sibling's rows as they arrive.
    @discardableResult
    public func mintIncarnation(reason: String) throws(StoreError) -> Actor {
        try write { ctx in
            try ctx.mintIncarnation(reason: reason, reissued: 0)
            return try ctx.currentActor()
        }
    }

    /// A sibling's root for `namespace` equals `root`: if it is still ours,
    /// the sibling holds every version we hold there, so none of our writes
    /// in it needs watching for a rollback any more.
    /// `sibling` is the device whose root it is (recorded as the one that
    /// confirmed them).
    public func confirmShipped(_ namespace: Namespace, root: [UInt8], by sibling: DeviceID) throws(StoreError) {
        let pending = try read { () throws(StoreError) -> Bool in
            try db.queryOne("SELECT 1 FROM unshipped WHERE ns = ? LIMIT 1", [.int(Int64(namespace.rawValue))]) { _ in true } ?? false
        }
        guard pending else { return }
        try write { ctx in
            let mine = try ctx.db.queryOne("SELECT count, sum FROM buckets WHERE ns = ? AND level = 0 AND prefix = 0",
                                           [.int(Int64(namespace.rawValue))]) { $0.fingerprint(countColumn: 0) } ?? .zero
            guard mine.root == root else { return }
            try ctx.noteAllConfirmed(namespace, by: sibling)
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

/// A transaction's incarnation, read at its first use: within the
/// transaction only `mintIncarnation` changes it, and that sets it here.
final class TransactionIncarnation {
    var value: UInt64?
}

extension WriteContext {
    func currentActor() throws(StoreError) -> Actor {
        if let known = incarnation.value { return Actor(device: store.deviceID, incarnation: known) }
        let value = try currentIncarnation(db)
        incarnation.value = value
        return Actor(device: store.deviceID, incarnation: value)
    }

    /// Records that `dot`, written here, is not yet known to be held by a
    /// sibling. Only the first unconfirmed counter per row and incarnation
    /// is kept: the context of a re-issue is lowered below it. `freshKey`:
    /// a key drawn at random just now, which no holder record can name.
    mutating func noteUnshipped(_ ns: Namespace, _ key: RowKey, _ dot: Dot, freshKey: Bool = false) throws(StoreError) {
        try db.run("INSERT OR IGNORE INTO unshipped(ns, key, incarnation, counter) VALUES (?, ?, ?, ?)",
                   [.int(Int64(ns.rawValue)), .blob(key.bytes), .int(Int64(bitPattern: dot.actor.incarnation)), .int(Int64(dot.counter))])
        // The first write waiting for a holder: the holders of earlier
        // ones (cleared then, so none while one waits) are not its holders.
        if db.changes > 0, !freshKey { try forgetHolders(ns, key, of: dot.actor) }
    }

    func firstUnshipped(_ ns: Namespace, _ key: RowKey, actor: Actor) throws(StoreError) -> UInt64? {
        try Self.firstUnshipped(db, ns, key, actor: actor)
    }

    static func firstUnshipped(_ db: Connection, _ ns: Namespace, _ key: RowKey, actor: Actor) throws(StoreError) -> UInt64? {
        try db.queryOne("SELECT counter FROM unshipped WHERE ns = ? AND key = ? AND incarnation = ?",
                        [.int(Int64(ns.rawValue)), .blob(key.bytes), .int(Int64(bitPattern: actor.incarnation))]) { UInt64($0.int(0)) }
    }

    /// This device's versions in `local` that merging `incoming` would drop
    /// although the sibling may never have seen them: its context covers
    /// the dot by a later counter or with its tags not known, and this
    /// device never learned that the version shipped. They are re-issued
    /// under a fresh dot. (A version whose tag the sibling's context does
    /// not name is not at risk: every merge keeps it, told apart by its tag
    /// from whatever else was written under that dot, so it travels as it
    /// is; a copy re-issued under another dot would show it twice.)
    func versionsAtRisk(local: Row?, incoming: Row) throws(StoreError) -> [RowHead] {
        guard let local else { return [] }
        var atRisk: [RowHead] = []
        for h in local.heads where h.dot.actor.device == store.deviceID && !incoming.holds(h) {
            guard incoming.saw(h) else { continue }
            // The sibling named this very write (its dot and tag) and replaced it.
            if incoming.context[h.dot.actor] == h.dot.counter && !incoming.context.tags(h.dot.actor).isEmpty { continue }
            if let first = try firstUnshipped(incoming.namespace, incoming.key, actor: h.dot.actor), h.dot.counter >= first {
                atRisk.append(h)
            }
        }
        return atRisk
    }

    /// Whether `incoming` shows that the current incarnation was rolled back.
    func rollbackSign(local: Row?, incoming: Row, atRisk: [RowHead]) throws(StoreError) -> String? {
        let me = try currentActor()
        let what = "\(incoming.namespace) row \(incoming.key.hex.prefix(8))"
        let theirs = incoming.context[me], mine = local?.context[me] ?? 0
        if theirs > mine {
            return "a sibling has seen write \(theirs) of this device on \(what), which this device holds only up to \(mine)"
        }
        if let h = atRisk.first(where: { $0.dot.actor == me }) {
            return "a sibling replaced another write made under this device's \(h.dot) on \(what)"
        }
        // The sibling saw a write under one of our current dots that this
        // device never made (as far as it knows): a copy of it made that one.
        let theirTags = incoming.context.tags(me)
        if theirs > 0 && !theirTags.isEmpty {
            let dot = Dot(actor: me, counter: theirs)
            if let h = local?.heads.first(where: { $0.dot == dot }), !theirTags.contains(h.tag) {
                return "a sibling has seen another write made under this device's \(dot) on \(what)"
            }
            let myTags = local?.context.tags(me) ?? []
            if theirs == mine && !myTags.isEmpty && !Set(theirTags).isSubset(of: myTags) {
                return "a sibling has seen another write made under this device's \(dot) on \(what)"
            }
        }
        // Another version under one of our current dots, new to this row here.
        for h in incoming.heads where h.dot.actor == me {
            let digest = LeafEncoding.headDigest(h)
            let ours = local?.heads.filter { $0.dot == h.dot } ?? []
            if !ours.isEmpty && !ours.contains(where: { LeafEncoding.headDigest($0) == digest }) {
                return "a sibling holds another write made under this device's \(h.dot) on \(what)"
            }
        }
        return nil
    }

    /// Mints a new incarnation: every later write is a fresh actor.
    /// `isRollback` false: a fresh incarnation for another reason (a
    /// barrier's collection), not recorded as a rollback the user is told of.
    mutating func mintIncarnation(reason: String, reissued: Int, isRollback: Bool = true) throws(StoreError) {
        let old = try currentActor()
        var fresh: UInt64 = 0
        repeat { fresh = store.random.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } } while fresh == 0 || fresh == old.incarnation
        try db.run("UPDATE meta SET value = ? WHERE name = 'incarnation'", [.int(Int64(bitPattern: fresh))])
        incarnation.value = fresh
        guard isRollback else { return }
        try db.run("INSERT INTO rollbacks(at, old, new, reason, reissued) VALUES (?, ?, ?, ?, ?)",
                   [.int(now.seconds), .int(Int64(bitPattern: old.incarnation)), .int(Int64(bitPattern: fresh)), .text(reason), .int(Int64(reissued))])
    }

    /// Re-issues `atRisk` versions of `local` under the current actor, the
    /// context lowered below the first of them per actor; returns the row.
    mutating func reissue(_ atRisk: [RowHead], in local: Row, previousLeaf: [UInt8]?) throws(StoreError) -> Row {
        let me = try currentActor()
        var context = local.context
        for actor in Set(atRisk.map(\.dot.actor)) {
            let first = atRisk.filter { $0.dot.actor == actor }.map(\.dot.counter).min()!
            context = context.lowering(actor, to: first - 1)
        }
        var heads: [RowHead] = []
        var newDots: [Dot] = []
        for h in local.heads {
            if atRisk.contains(where: { $0.dot == h.dot && $0.tag == h.tag }) {
                let head = RowHead(dot: context.nextDot(for: me), content: h.content)
                context = context.adding(head.dot, tag: head.tag)
                heads.append(head)
                newDots.append(head.dot)
            } else {
                // A version kept here stays covered (lowering may have
                // passed it: a collision pair under one dot).
                context = context.adding(h.dot, tag: h.tag)
                heads.append(h)
            }
        }
        let row = Row(namespace: local.namespace, key: local.key, context: context, heads: heads)
        try writeRow(row, previousLeaf: previousLeaf, exists: true)
        noteOutbox(row.namespace, row.key, counter: context[me])
        for dot in newDots { try noteUnshipped(row.namespace, row.key, dot) }
        try db.run("INSERT INTO merges(ns, key, at, detail) VALUES (?, ?, ?, ?)",
                   [.int(Int64(row.namespace.rawValue)), .blob(row.key.bytes), .int(now.seconds),
                    .text("re-issued \(atRisk.map(\.dot.description).joined(separator: " ")) as \(newDots.map(\.description).joined(separator: " ")): a sibling never saw them")])
        return row
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
        let held = mine.allSatisfy { h in
            incoming.heads.contains { $0.dot == h.dot && LeafEncoding.headDigest($0) == LeafEncoding.headDigest(h) }
                || (incoming.context[me] == h.dot.counter && incoming.context.tags(me).contains(h.tag))
        }
        if held && (!mine.isEmpty || incoming.context[me] >= local.context[me]) {
            // Ours are confirmed; so are an earlier incarnation's, unless
            // one of its versions is still a head here (not yet confirmed).
            let waiting = Set(local.heads.filter { $0.dot.actor.device == store.deviceID && $0.dot.actor != me }.map(\.dot.actor.incarnation))
            let args: [SQLValue] = [.int(Int64(incoming.namespace.rawValue)), .blob(incoming.key.bytes)]
            let recorded = try db.query("SELECT incarnation FROM unshipped WHERE ns = ? AND key = ?", args) { UInt64(bitPattern: $0.int(0)) }
            for incarnation in recorded where !waiting.contains(incarnation) {
                try noteConfirmed(incoming.namespace, incoming.key, incarnation: incarnation, by: sender)
                try db.run("DELETE FROM unshipped WHERE ns = ? AND key = ? AND incarnation = ?", args + [.int(Int64(bitPattern: incarnation))])
            }
        }
    }
}
