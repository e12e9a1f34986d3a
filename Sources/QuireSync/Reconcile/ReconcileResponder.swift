import QuireCore
import QuireStore

/// Answers one `reconcile_req` from the store. Stateless: every request
/// carries all the responder needs, so a lost or duplicated request costs
/// nothing but its bytes. Returns nil when nothing differs (no frame is sent).
struct ReconcileResponder {
    let store: ReplicaStore
    /// Ranges holding at most this many rows travel as key lists.
    let threshold: Int
    /// Rows stop being added past this many bytes; the response says so.
    let maxRowBytes: Int

    func respond(to request: ReconcileRequest) throws -> ReconcileResponse? {
        let ns = request.namespace
        let reader = RangeReader(store: store, namespace: ns)
        var rows = RowBudget(limit: maxRowBytes)
        var items: [ResponseItem] = []
        for item in request.items {
            switch item {
            case .children(let parent, let theirs):
                guard parent.level < KeyPrefix.maxLevel else { continue }
                let mine = try reader.childSummaries(parent, salt: request.session)
                for i in 0..<16 where mine[i] != theirs[i] {
                    let child = parent.child(i)
                    if theirs[i].count <= UInt64(threshold) {
                        items.append(.mismatch(child))   // their list is the cheaper one to send
                    } else if mine[i].count > UInt64(threshold) && child.level < KeyPrefix.maxLevel {
                        items.append(.children(child, try reader.childSummaries(child, salt: request.session)))
                    } else {
                        items.append(.keyList(child, try reader.entries(child)))
                        rows.add(try reader.tombstones(child))
                    }
                }
            case .keys(let range, let theirs):
                var theirLeaves: [RowKey: [UInt8]] = [:]
                for e in theirs where range.contains(e.key) { theirLeaves[e.key] = e.leaf }
                var mineLive = Set<RowKey>()
                for e in try reader.entries(range) {
                    mineLive.insert(e.key)
                    if theirLeaves[e.key] != e.leaf, let row = try store.row(ns, e.key) { rows.add([row]) }
                }
                // Keys they hold live that we deleted: our tombstones bury them.
                for key in theirLeaves.keys.sorted() where !mineLive.contains(key) {
                    if let row = try store.row(ns, key), row.isTombstone { rows.add([row]) }
                }
            case .probe(let range):
                items.append(.keyList(range, try reader.entries(range)))
                rows.add(try reader.tombstones(range))
            case .want(let keys):
                for key in keys { if let row = try store.row(ns, key) { rows.add([row]) } }
            case .whole:
                rows.add(try store.rows(ns, from: [], to: nil))
                rows.add(try store.tombstones(ns))
            }
        }
        if rows.rows.isEmpty && items.isEmpty { return nil }
        return ReconcileResponse(namespace: ns, session: request.session, step: request.step, rows: rows.rows,
                                 items: items, isTruncated: rows.isTruncated)
    }
}

/// Rows for one response, up to a byte budget (bounded memory on both ends;
/// the rest follows in the next round).
struct RowBudget {
    let limit: Int
    private(set) var rows: [Row] = []
    private(set) var bytes = 0
    private(set) var isTruncated = false
    private var keys = Set<RowKey>()

    init(limit: Int) { self.limit = limit }

    mutating func add(_ more: [Row]) {
        for row in more where !keys.contains(row.key) {
            let size = RowBudget.estimate(row)
            if bytes + size > limit && !rows.isEmpty { isTruncated = true; return }
            rows.append(row)
            keys.insert(row.key)
            bytes += size
        }
    }

    static func estimate(_ row: Row) -> Int {
        switch row.content {
        case .note(let n)?: return 160 + (n.body?.count ?? 0) + n.title.utf8.count
        case .saga(let s)?: return 120 + s.text.count
        case nil: return 60
        default: return 200
        }
    }
}
