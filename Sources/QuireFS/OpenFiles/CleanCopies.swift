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
    /// Each copy with the stamp of its entry in `order`.
    private var copies: [RowRef: (copy: WorkingCopy, stamp: UInt64)] = [:]
    /// Oldest first from `head`; an entry whose stamp is not its copy's
    /// any more (forgotten, or kept again since) is skipped.
    private var order: [(ref: RowRef, stamp: UInt64)] = []
    private var head = 0
    private var nextStamp: UInt64 = 0
    private var bytes = 0

    var count: Int { copies.count }
    /// Entries in the eviction order, skipped ones included (tests).
    var queued: Int { order.count - head }

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
        nextStamp += 1
        copies[ref] = (copy, nextStamp)
        order.append((ref, nextStamp))
        bytes += copy.content.count
        while bytes > CleanCopies.byteLimit, head < order.count {
            let oldest = order[head]
            head += 1
            if copies[oldest.ref]?.stamp == oldest.stamp { forget(oldest.ref) }
        }
        // Skipped entries are dropped once they are as many as the live
        // ones: each keep pays for one, whatever the pattern of keeps.
        if order.count - head > 2 * copies.count + 64 || head > order.count / 2 {
            order = order[head...].filter { copies[$0.ref]?.stamp == $0.stamp }
            head = 0
        }
    }

    mutating func forget(_ ref: RowRef) {
        if let old = copies.removeValue(forKey: ref) { bytes -= old.copy.content.count }
    }
}
