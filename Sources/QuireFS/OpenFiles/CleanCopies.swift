import QuireCore

/// Working copies of rows no handle holds, as rendered at the change
/// number they came from: an open of a row unchanged since renders and
/// reads nothing but that number (the kernel keeps the pages; this keeps
/// what the open must know). A copy is handed out only while the stored
/// row still has its number, so a change from anywhere (a save here, a
/// sibling's sync, the CLI) makes it stale without being told. Bounded in
/// bytes, the oldest kept first out.
struct CleanCopies {
    static let byteLimit = 32 << 20
    /// Each copy with the stamp of its place in `order`.
    private var copies: [RowRef: (copy: WorkingCopy, stamp: UInt64)] = [:]
    private var order = RecencyOrder<RowRef>()
    private var bytes = 0

    var count: Int { copies.count }
    /// Entries in the eviction order, stale ones included (tests).
    var queued: Int { order.queued }

    /// The copy kept for `ref`, if it came from change number `seq`.
    func copy(_ ref: RowRef, seq: Int64) -> WorkingCopy? {
        guard let kept = copies[ref], kept.copy.seq == seq else { return nil }
        return kept.copy
    }

    /// Keeps a clean copy rendered from the stored row whose change number
    /// was `seq` when it was read (read before the row: a change in between
    /// only makes the copy look older than it is).
    mutating func keep(_ copy: WorkingCopy, seq: Int64, for ref: RowRef) {
        guard !copy.isDirty, !copy.isNew, copy.content.count <= CleanCopies.byteLimit / 16 else { return }
        var copy = copy
        copy.seq = seq
        forget(ref)
        // The table is read through a second reference only inside each
        // block: it is unique again when it changes (no copy).
        let stamp: UInt64
        do { let held = copies; stamp = order.touch(ref, live: held.count) { held[$0]?.stamp == $1 } }
        copies[ref] = (copy, stamp)
        bytes += copy.content.count
        while bytes > CleanCopies.byteLimit {
            let oldest: RowRef?
            do { let held = copies; oldest = order.removeOldest { held[$0]?.stamp == $1 } }
            guard let oldest else { break }
            forget(oldest)
        }
    }

    mutating func forget(_ ref: RowRef) {
        if let old = copies.removeValue(forKey: ref) { bytes -= old.copy.content.count }
    }
}
