import QuireCore
import QuireStore

/// Answers one `reconcile_req` from the store (`Reconciler`'s responder
/// role over the replica, with a row budget). Stateless: every request
/// carries all the responder needs, so a lost or duplicated request costs
/// nothing but its bytes. Returns nil when nothing differs (no frame is sent).
///
/// No row stops the others: a row larger than the response budget travels
/// in a response of its own (chunked by the frame layer), a row that does
/// not fit what is left of the budget waits for the next round while
/// smaller rows after it still go, and a row that cannot travel at all
/// (`RowLimits`) is left out and named, so whatever the key order every row
/// that can sync does.
struct ReconcileResponder {
    let store: ReplicaStore
    /// Ranges holding at most this many rows travel as key lists.
    let threshold: Int
    /// Row bytes in the main response; larger rows go on their own.
    let maxRowBytes: Int
    /// Rows already found too large to travel, by key, with their leaf
    /// then: not read again while unchanged (a row written before the limit
    /// may be hundreds of MiB, and siblings ask for it every round).
    var knownUnsendable: [RowKey: [UInt8]] = [:]
    /// Rows this answer may send ahead of the response proper, in
    /// rows-only responses of at most `streamBatchBytes` each, handed to
    /// `stream` as they fill (0: none; everything waits for the next round).
    /// The puller merges each batch while the next one is read here, so a
    /// device catching up is not kept waiting one round trip per response.
    var streamLimit = 0
    var streamBatchBytes = 2 << 20
    var stream: ((ReconcileResponse) -> Bool)?

    func respond(to request: ReconcileRequest) throws -> ReconcileResponse? {
        try answer(request).response
    }

    func answer(_ request: ReconcileRequest) throws -> ReconcileAnswer {
        let ns = request.namespace
        var rows = RowBudget(limit: maxRowBytes)
        if let stream, streamLimit > 0 {
            rows = RowBudget(limit: min(maxRowBytes, streamBatchBytes), streamLimit: streamLimit) { batch in
                var r = ReconcileResponse(namespace: ns, session: request.session, step: request.step, rows: batch, items: [], isTruncated: false)
                r.isRowsOnly = true
                return stream(r)
            }
        }
        let items = try store.withReadSnapshot { snapshot in
            try Reconciler(threshold: threshold).answer(request, StoreRangeSource(snapshot: snapshot, namespace: ns), rows: &rows) {
                key, leaf in try isKnownUnsendable(ns, key, leaf: leaf ?? snapshot.leaf(ns, key))
            }
        }
        let alone = rows.alone.map {
            var r = ReconcileResponse(namespace: ns, session: request.session, step: request.step, rows: [$0], items: [], isTruncated: false)
            r.isRowsOnly = true
            return r
        }
        // The main response goes even when empty if rows went alone: it is
        // what moves (or ends) the puller's session.
        let main: ReconcileResponse? = rows.rows.isEmpty && items.isEmpty && alone.isEmpty && !rows.isTruncated ? nil
            : ReconcileResponse(namespace: ns, session: request.session, step: request.step, rows: rows.rows,
                                items: items, isTruncated: rows.isTruncated)
        return ReconcileAnswer(alone: alone, response: main, unsendable: rows.unsendable)
    }
}

extension ReconcileResponder {
    /// True for a row found unsendable before and unchanged since (its
    /// leaf, or the first bytes of it a key list carries, still match).
    func isKnownUnsendable(_ ns: Namespace, _ key: RowKey, leaf current: [UInt8]?) throws -> Bool {
        guard let known = knownUnsendable[key], let current else { return false }
        let n = min(KeyLeaf.leafSize, current.count, known.count)
        return n > 0 && current.prefix(n).elementsEqual(known.prefix(n))
    }
}

/// What answers one request: responses that each carry one large row
/// (sent first), the response proper, and the rows that cannot travel.
struct ReconcileAnswer {
    var alone: [ReconcileResponse]
    var response: ReconcileResponse?
    var unsendable: [UnsendableRow]
}

/// A row the responder left out because no message may carry it.
struct UnsendableRow: Equatable {
    var row: Row
    var violation: RowLimits.Violation
}

/// Rows for one response, up to a byte budget (bounded memory on both
/// ends; the rest follows in the next round). A row over the budget never
/// truncates the rows after it:
///  - a row that cannot travel at all (`RowLimits.check`) is set aside as
///    unsendable, and the rows after it are still considered;
///  - a row larger than the budget goes alone, in a response of its own, up
///    to `aloneLimit` bytes of such rows per answer (always at least one);
///  - a row that fits the budget but not what is left of it waits for the
///    next round (`isTruncated`), and smaller rows after it may still go.
///
/// With a `flush`, a full budget is not the end: its rows are handed to
/// `flush` (sent at once, ahead of the response proper) and the budget
/// starts again, until `streamLimit` bytes went that way or `flush` fails.
struct RowBudget {
    let limit: Int
    let aloneLimit: Int
    let streamLimit: Int
    private(set) var rows: [Row] = []
    private(set) var bytes = 0
    private(set) var alone: [Row] = []
    private(set) var aloneBytes = 0
    private(set) var unsendable: [UnsendableRow] = []
    private(set) var isTruncated = false
    /// Row bytes already handed to `flush`.
    private(set) var streamedBytes = 0
    private var keys = Set<RowKey>()
    private var flush: (([Row]) -> Bool)?

    init(limit: Int, aloneLimit: Int = RowLimits.maxRowWireBytes, streamLimit: Int = 0, flush: (([Row]) -> Bool)? = nil) {
        self.limit = limit
        self.aloneLimit = aloneLimit
        self.streamLimit = streamLimit
        self.flush = flush
    }

    /// Sends the rows gathered so far ahead, when the stream has room for
    /// them and a full budget after them.
    private mutating func flushIfRoom() {
        guard let send = flush, !rows.isEmpty, streamedBytes + bytes + limit <= streamLimit else { return }
        guard send(rows) else { flush = nil; return }   // the link failed: stop streaming, the rest waits
        streamedBytes += bytes
        rows = []
        bytes = 0
    }

    mutating func add(_ more: [Row]) {
        for row in more where !keys.contains(row.key) {
            if let violation = RowLimits.check(row) {
                keys.insert(row.key)
                unsendable.append(UnsendableRow(row: row, violation: violation))
                continue
            }
            let size = RowLimits.wireBytes(of: row)
            if size > limit {
                guard alone.isEmpty || aloneBytes + size <= aloneLimit else { isTruncated = true; continue }
                alone.append(row)
                aloneBytes += size
            } else {
                if bytes + size > limit { flushIfRoom() }
                guard bytes + size <= limit else { isTruncated = true; continue }
                rows.append(row)
                bytes += size
            }
            keys.insert(row.key)
        }
    }
}
