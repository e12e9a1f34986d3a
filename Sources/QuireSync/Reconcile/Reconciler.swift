import QuireCore

/// Range-fingerprint reconciliation of one namespace, both roles, as pure
/// functions of what a `RangeSource` holds: the requester's first request
/// and its follow-ups, and the responder's answer. Both descend the same
/// key-prefix tree: a range whose fingerprints agree is done; a small one
/// travels as a key list; a large one splits into its 16 children.
struct Reconciler {
    /// Ranges holding at most this many rows travel as key lists.
    let threshold: Int

    // MARK: Requester

    /// The first request: the whole namespace for settings (small, and
    /// merged as a whole); otherwise our key list if the namespace is
    /// small, else the root's 16 children (the root is known to differ).
    func initialItems(_ source: some RangeSource, salt: [UInt8]) throws -> [RequestItem] {
        if source.namespace == .settings { return [.whole] }
        if try source.count() <= UInt64(threshold) { return [.keys(.root, try source.entries(.root))] }
        return [.children(.root, try source.childSummaries(.root, salt: salt))]
    }

    /// What to ask next, given a response whose rows were already applied.
    func followUps(_ response: ReconcileResponse, _ source: some RangeSource, salt: [UInt8]) throws -> [RequestItem] {
        var items: [RequestItem] = []
        for item in response.items {
            switch item {
            case .mismatch(let range):
                items.append(.keys(range, try source.entries(range)))
            case .children(let parent, let theirs):
                guard parent.level < KeyPrefix.maxLevel else { continue }
                let mine = try source.childSummaries(parent, salt: salt)
                for i in 0..<16 where mine[i] != theirs[i] {
                    let child = parent.child(i)
                    if mine[i].count <= UInt64(threshold) || child.level >= KeyPrefix.maxLevel {
                        items.append(.keys(child, try source.entries(child)))
                    } else if theirs[i].count <= UInt64(threshold) {
                        items.append(.probe(child))
                    } else {
                        items.append(.children(child, try source.childSummaries(child, salt: salt)))
                    }
                }
            case .keyList(let range, let theirs):
                var mine: [RowKey: [UInt8]] = [:]
                for e in try source.entries(range) { mine[e.key] = e.leaf }
                let want = theirs.filter { range.contains($0.key) && mine[$0.key] != $0.leaf }.map(\.key)
                if !want.isEmpty { items.append(.want(want)) }
            }
        }
        return items
    }

    // MARK: Responder

    /// The items answering `request`, with the rows to send added to
    /// `rows`. `skip(key, leaf)` leaves out a row known not to travel.
    func answer(_ request: ReconcileRequest, _ source: some RangeSource, rows: inout RowBudget,
                skip: (RowKey, [UInt8]?) throws -> Bool = { _, _ in false }) throws -> [ResponseItem] {
        var items: [ResponseItem] = []
        for item in request.items {
            switch item {
            case .children(let parent, let theirs):
                guard parent.level < KeyPrefix.maxLevel else { continue }
                let mine = try source.childSummaries(parent, salt: request.session)
                for i in 0..<16 where mine[i] != theirs[i] {
                    let child = parent.child(i)
                    if theirs[i].count <= UInt64(threshold) {
                        items.append(.mismatch(child))   // their list is the cheaper one to send
                    } else if mine[i].count > UInt64(threshold) && child.level < KeyPrefix.maxLevel {
                        items.append(.children(child, try source.childSummaries(child, salt: request.session)))
                    } else {
                        items.append(.keyList(child, try source.entries(child)))
                        rows.add(try source.tombstones(child))
                    }
                }
            case .keys(let range, let theirs):
                var theirLeaves: [RowKey: [UInt8]] = [:]
                for e in theirs where range.contains(e.key) { theirLeaves[e.key] = e.leaf }
                var mineLive = Set<RowKey>()
                for e in try source.entries(range) {
                    mineLive.insert(e.key)
                    if theirLeaves[e.key] != e.leaf, try !skip(e.key, e.leaf), let row = try source.row(e.key) { rows.add([row]) }
                }
                // Keys they hold live that we deleted: our tombstones bury them.
                for key in theirLeaves.keys.sorted() where !mineLive.contains(key) {
                    if let row = try source.row(key), row.isTombstone { rows.add([row]) }
                }
            case .probe(let range):
                items.append(.keyList(range, try source.entries(range)))
                rows.add(try source.tombstones(range))
            case .want(let keys):
                for key in keys where try !skip(key, nil) {
                    if let row = try source.row(key) { rows.add([row]) }
                }
            case .whole:
                rows.add(try source.allRows())
            }
        }
        return items
    }
}
