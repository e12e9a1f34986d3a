/// What a row shows: a pure, deterministic function of its heads (in their
/// canonical order), so every device holding the same heads shows the same
/// file. It decides nothing about what is kept: all heads stay until an
/// edit that saw them replaces them.
///  - one head: its content;
///  - a note's place (title, folder, kind): the version placed (renamed or
///    moved) last, so a rename survives a concurrent edit;
///  - attachments and folders: the last writer's bytes (the other versions
///    stay heads, which the mount shows as conflict copies);
///  - note bodies and journal days: the paragraph union of every head's
///    text, minus the union of their paragraph tombstones (no word lost);
///    title and tags from the last writer;
///  - contacts and plans: the union of every head's property lines minus
///    the lines a head removed, one property edited on two devices showing
///    the last writer's (`CardText.merged`); the file's title from the last writer;
///  - devices: a revocation, once signed by anyone, shows (grow-only);
///  - every other value: the last writer by (updatedAt, dot).
public enum RowView {
    public static func resolve(_ heads: [RowHead]) -> RowContent? {
        guard let first = heads.first else { return nil }
        if heads.count == 1 { return first.content }
        let winner = lastWriter(heads)
        switch winner.content {
        case .note(let w):
            // The place (title, folder, kind) is the last placed version's:
            // a rename or move is not undone by an edit made at the same time.
            let placer = heads.max { placedBefore($0, $1) }.flatMap { head -> Note? in
                if case .note(let n) = head.content { return n }
                return nil
            } ?? w
            var merged: Note
            if placer.isProse {
                var notes: [Note] = []
                for h in heads { if case .note(let n) = h.content { notes.append(n) } }
                merged = unionOfNotes(notes, winner: w)
            } else {
                // Attachments and folders: the last writer's bytes; the
                // other versions stay heads (shown as conflict copies).
                merged = w
            }
            merged.title = placer.title
            merged.folder = placer.folder
            merged.kind = placer.kind
            merged.placedAt = placer.placedAt
            return .note(merged)
        case .saga(let w):
            var days: [SagaEntry] = []
            for h in heads { if case .saga(let s) = h.content { days.append(s) } }
            return .saga(unionOfDays(days, winner: w))
        case .contact(var w):
            let ordered = byPriority(heads)
            var cards: [CardText] = []
            for h in ordered { if case .contact(let c) = h.content { cards.append(c.card) } }
            w.card = CardText.merged(cards, rules: Contact.rules)
            w.updatedAt = heads.compactMap(\.content.updatedAt).max()!
            return .contact(w)
        case .plan(var w):
            let ordered = byPriority(heads)
            var plans: [Plan] = []
            for h in ordered { if case .plan(let p) = h.content { plans.append(p) } }
            w.calendar = CardText.merged(plans.map(\.calendar), rules: Plan.rules)
            w.createdAt = plans.map(\.createdAt).min()!
            w.updatedAt = plans.map(\.updatedAt).max()!
            return .plan(w)
        case .device:
            let revoked = heads.filter { if case .device(let d) = $0.content { return d.revocation != nil } else { return false } }
            return revoked.isEmpty ? winner.content : lastWriter(revoked).content
        default:
            return winner.content
        }
    }

    /// The last writer by whole-second updatedAt, then by dot, then (a
    /// collision) by the content's leaf bytes: a total order, so every
    /// device picks the same head.
    public static func lastWriter(_ heads: [RowHead]) -> RowHead {
        heads.max(by: writtenBefore)!
    }

    /// The heads from the first writer to the last, in the order `lastWriter` uses.
    static func byPriority(_ heads: [RowHead]) -> [RowHead] { heads.sorted(by: writtenBefore) }

    static func writtenBefore(_ a: RowHead, _ b: RowHead) -> Bool {
        let ta = a.content.updatedAt?.seconds ?? 0, tb = b.content.updatedAt?.seconds ?? 0
        if ta != tb { return ta < tb }
        return RowHead.precedes(a, b)
    }

    /// By when each version was placed (renamed or moved; never: first),
    /// then as `lastWriter` orders them.
    static func placedBefore(_ a: RowHead, _ b: RowHead) -> Bool {
        func placed(_ head: RowHead) -> Int64 {
            if case .note(let n) = head.content, let at = n.placedAt { return at.seconds }
            return Int64.min
        }
        let pa = placed(a), pb = placed(b)
        if pa != pb { return pa < pb }
        return writtenBefore(a, b)
    }

    static func sortedDeletions(_ lists: [[[UInt8]]]) -> [[UInt8]] {
        Array(Set(lists.joined())).sorted { $0.lexicographicallyPrecedes($1) }
    }

    static func unionOfNotes(_ notes: [Note], winner: Note) -> Note {
        var merged = winner
        let deleted = sortedDeletions(notes.map(\.deletedParagraphs))
        let bodies = notes.compactMap(\.body)
        if bodies.count == notes.count {
            let body = bodies.dropFirst().reduce(bodies[0]) { ProseBridge.mergeBodies($0, $1, deleted: deleted) }
            merged.body = body
            merged.contentHash = Note.bodyDigest(body)
            merged.length = nil
        } else {
            // A head's body is offloaded here: show the row as not resident
            // (a read recalls it) rather than a union that hides its words.
            let pointer = notes.first { $0.body == nil }!
            merged.body = nil
            merged.contentHash = pointer.contentHash
            merged.length = pointer.length
        }
        merged.deletedParagraphs = deleted
        merged.createdAt = notes.map(\.createdAt).min()!
        merged.updatedAt = notes.map(\.updatedAt).max()!
        return merged
    }

    static func unionOfDays(_ days: [SagaEntry], winner: SagaEntry) -> SagaEntry {
        var merged = winner
        let deleted = sortedDeletions(days.map(\.deletedParagraphs))
        merged.text = days.dropFirst().reduce(days[0].text) { ProseBridge.mergeBodies($0, $1.text, deleted: deleted) }
        merged.deletedParagraphs = deleted
        merged.updatedAt = days.map(\.updatedAt).max()!
        return merged
    }
}
