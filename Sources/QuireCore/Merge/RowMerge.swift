/// The merge of an incoming row into the local one. Every rule here is
/// commutative and idempotent, so any delivery order and any duplication
/// give the same rows on every device:
///  - version-vector dominance decides;
///  - equal vectors with equal content: nothing to do;
///  - concurrent vectors, or equal vectors with different content (a clock
///    collision), merge as concurrent: the vector becomes the join, and the
///    content is resolved by a rule that does not depend on argument order;
///  - a concurrent edit beats a concurrent delete (a resurrected row is an
///    annoyance, a lost one is a failure);
///  - merging never bumps this device's counter.
public enum RowMerge {
    public enum Outcome: Equatable, Sendable {
        /// The local row already covers the incoming one.
        case keepLocal
        /// Store this row (the incoming one, or a merge of both).
        case store(Row, merged: Bool)
    }

    public static func merge(local: Row?, incoming: Row) -> Outcome {
        precondition(local == nil || (local!.namespace == incoming.namespace && local!.key == incoming.key))
        guard let local else { return .store(incoming, merged: false) }
        switch local.version.vector.compare(incoming.version.vector) {
        case .dominates:
            return .keepLocal
        case .dominated:
            return .store(incoming, merged: false)
        case .equal:
            // Same vector and same leaf is the same version, whatever this
            // device's residency (an offloaded pointer equals the resident body).
            if local == incoming || LeafEncoding.leaf(of: local) == LeafEncoding.leaf(of: incoming) { return .keepLocal }
            let joined = resolveConcurrent(local, incoming)
            return joined == local ? .keepLocal : .store(joined, merged: true)
        case .concurrent:
            let joined = resolveConcurrent(local, incoming)
            return joined == local ? .keepLocal : .store(joined, merged: true)
        }
    }

    /// Symmetric resolution of two concurrent versions of one row.
    public static func resolveConcurrent(_ a: Row, _ b: Row) -> Row {
        let vector = a.version.vector.joined(with: b.version.vector)
        switch (a.content, b.content) {
        case (nil, nil):
            return .tombstone(a.namespace, a.key, vector: vector)
        case (let live?, nil), (nil, let live?):
            // Edit beats delete: the row survives with the edit.
            return Row(namespace: a.namespace, key: a.key, version: RowVersion(vector: vector, isTombstone: false), content: live)
        case (let x?, let y?):
            return Row(namespace: a.namespace, key: a.key, version: RowVersion(vector: vector, isTombstone: false),
                       content: resolveContent(x, y))
        }
    }

    static func resolveContent(_ x: RowContent, _ y: RowContent) -> RowContent {
        if x == y { return x }
        switch (x, y) {
        case let (.note(a), .note(b)):
            return .note(mergeNotes(a, b))
        case let (.saga(a), .saga(b)):
            return .saga(mergeSaga(a, b))
        case let (.device(a), .device(b)):
            // A revocation, once signed, wins: a roster never un-revokes.
            if (a.revocation != nil) != (b.revocation != nil) { return a.revocation != nil ? x : y }
            return lastWriter(x, y)
        default:
            return lastWriter(x, y)
        }
    }

    /// Last writer by whole-second updatedAt, ties by editor device id, then
    /// by the content's canonical bytes: a total order, so the choice is the
    /// same on every device whatever the arrival order (and associative).
    public static func lastWriter(_ x: RowContent, _ y: RowContent) -> RowContent {
        let kx = sortKey(x), ky = sortKey(y)
        return lexicographicLess(kx, ky) ? y : x
    }

    private static func sortKey(_ c: RowContent) -> [UInt8] {
        var key: [UInt8] = []
        let t = UInt64(bitPattern: (c.updatedAt?.seconds ?? 0)) ^ (1 << 63)   // order-preserving for signed values
        for shift in stride(from: 56, through: 0, by: -8) { key.append(UInt8((t >> UInt64(shift)) & 0xFF)) }
        key += [c.editedBy == nil ? 0 : 1] + (c.editedBy?.bytes ?? [])
        key += CBORWriter.encode(c.fields())
        return key
    }

    private static func lexicographicLess(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

    static func mergeNotes(_ a: Note, _ b: Note) -> Note {
        // Title and tags: last writer. Body: paragraph union, never LWW.
        let winner: Note = {
            if case .note(let n) = lastWriter(.note(a), .note(b)) { return n }
            return a
        }()
        var merged = winner
        let deleted = Array(Set(a.deletedParagraphs).union(b.deletedParagraphs)).sorted { $0.lexicographicallyPrecedes($1) }
        if let ba = a.body, let bb = b.body {
            let body = ProseBridge.mergeBodies(ba, bb, deleted: deleted)
            merged.body = body
            merged.contentHash = Note.bodyDigest(body)
        } else if a.contentHash == b.contentHash {
            merged.body = a.body ?? b.body
            merged.contentHash = a.contentHash
        } else if let present = a.body != nil ? a : (b.body != nil ? b : nil) {
            // One side's body is offloaded here and differs: keep the text
            // this device holds (never a pointer that would hide it). The
            // holder keeps every body resident, computes the full union there,
            // and that version reaches this device as usual.
            merged.body = present.body
            merged.contentHash = present.contentHash
        }
        merged.deletedParagraphs = deleted
        merged.createdAt = min(a.createdAt, b.createdAt)
        merged.updatedAt = max(a.updatedAt, b.updatedAt)
        return merged
    }

    static func mergeSaga(_ a: SagaEntry, _ b: SagaEntry) -> SagaEntry {
        let winner: SagaEntry = {
            if case .saga(let s) = lastWriter(.saga(a), .saga(b)) { return s }
            return a
        }()
        var merged = winner
        let deleted = Array(Set(a.deletedParagraphs).union(b.deletedParagraphs)).sorted { $0.lexicographicallyPrecedes($1) }
        merged.text = ProseBridge.mergeBodies(a.text, b.text, deleted: deleted)
        merged.deletedParagraphs = deleted
        merged.updatedAt = max(a.updatedAt, b.updatedAt)
        return merged
    }
}
