/// The merge of two states of one row: a join-semilattice over
/// (heads, context), the dotted-version-vector design of Preguiça et al.
/// ("Dotted Version Vectors", 2012) as used by the multi-value register of
/// Almeida et al. ("Delta State Replicated Data Types", 2018).
///
/// A state S = (H, C): H a set of heads (dot, tag, content), C a context
/// that saw every h ∈ H ("C saw h": C's counter for h's actor is past
/// h's, or equal to it with h's tag among those C names, or with its tags
/// not known). The join of S1 and S2 is (H, C1 ⊔ C2) where
///
///     H = { h ∈ H1 : C2 did not see h  or  h ∈ H2 }
///       ∪ { h ∈ H2 : C1 did not see h  or  h ∈ H1 }
///
/// A head survives unless the other side has seen it and no longer holds
/// it (it was overwritten or deleted there). Heads are told apart by dot
/// and tag: a device that came back from a copy of itself may mint one dot
/// twice (a collision), and both versions survive and are reported until a
/// write that saw each replaces it; a delete that saw one of them removes
/// only that one.
///
/// Why it is a join, for any number of states S1..Sn merged in any grouping:
/// the result is always
///     H = { h ∈ ∪Hi : for every i, Ci did not see h or h ∈ Hi },
///     C = ⊔Ci.
/// For two states this is the definition (for h ∈ H1 the clause holds for
/// i = 1, since h ∈ H1). It composes because, for the join S12 of S1 and
/// S2, "C12 did not see h or h ∈ H12" holds exactly when it holds for S1
/// and for S2: C12 saw h exactly when C1 or C2 did (per actor, the larger
/// counter wins, and at equal counters the tag sets are united, an unknown
/// set absorbing); if Cj saw h, then h ∈ Hj by the clause for j, and it
/// survives into H12 by the clause for the other; conversely a head in H12
/// satisfied the clause for both. The closed form is symmetric in the
/// states and insensitive to repeating one, so the join is commutative,
/// associative and idempotent. Heads with the same dot and the same leaf
/// are one head (an offloaded pointer equals the resident body).
///
/// Merging never mints a dot. Edit beats delete falls out: a tombstone
/// removes only the heads its context covers; an edit it never saw survives.
public enum RowMerge {
    public enum Outcome: Equatable, Sendable {
        /// The local row already covers the incoming one.
        case keepLocal
        /// Store this row. `merged`: it holds heads from both sides (a
        /// concurrent merge, kept in the audit trail).
        case store(Row, merged: Bool)
    }

    public static func merge(local: Row?, incoming: Row) -> Outcome {
        precondition(local == nil || (local!.namespace == incoming.namespace && local!.key == incoming.key))
        guard let local else { return .store(incoming, merged: false) }
        let joined = join(local, incoming)
        if sameState(joined, local) {
            // Equal leaves, but the incoming copy may hold a body this device
            // lacks (a pointer here, resident there): take the bytes.
            return adoptsBodies(local, joined) ? .store(joined, merged: false) : .keepLocal
        }
        let fromLocal = joined.heads.contains(where: local.holds)
        let fromIncoming = joined.heads.contains { !local.holds($0) }
        return .store(joined, merged: fromLocal && fromIncoming)
    }

    public static func join(_ a: Row, _ b: Row) -> Row {
        precondition(a.namespace == b.namespace && a.key == b.key)
        var kept: [RowHead] = []
        for h in a.heads where !b.saw(h) || b.holds(h) { kept.append(h) }
        for h in b.heads where !a.saw(h) || a.holds(h) { kept.append(h) }
        return Row(namespace: a.namespace, key: a.key, context: a.context.joined(with: b.context), heads: deduplicated(kept))
    }

    /// Heads that share a dot and a leaf are one version; a resident body
    /// is preferred over a pointer to the same bytes.
    static func deduplicated(_ heads: [RowHead]) -> [RowHead] {
        // One head is its own set (most rows): no identity to hash.
        guard heads.count > 1 else { return heads }
        var out: [RowHead] = []
        var index: [[UInt8]: Int] = [:]
        for h in heads {
            let id = identity(h)
            if let i = index[id] {
                if isPointer(out[i].content) && !isPointer(h.content) { out[i] = h }
            } else {
                index[id] = out.count
                out.append(h)
            }
        }
        return out
    }

    /// Pairs of heads under one dot with different contents: a dot minted
    /// twice (a device that came back from a copy of itself before it knew).
    public static func collisions(_ row: Row) -> [Dot] {
        var seen = Set<Dot>(), twice = Set<Dot>()
        for h in row.heads { if !seen.insert(h.dot).inserted { twice.insert(h.dot) } }
        return twice.sorted()
    }

    /// Same heads (by dot and leaf) under the same context.
    public static func sameState(_ a: Row, _ b: Row) -> Bool {
        a.context == b.context && a.heads.map(identity) == b.heads.map(identity)
    }

    private static func identity(_ h: RowHead) -> [UInt8] {
        var w = CBORWriter(capacity: 64)
        h.dot.write(to: &w)
        return w.bytes + LeafEncoding.headDigest(h)
    }

    private static func isPointer(_ c: RowContent) -> Bool {
        if case .note(let n) = c { return n.body == nil }
        return false
    }

    private static func adoptsBodies(_ local: Row, _ joined: Row) -> Bool {
        zip(local.heads, joined.heads).contains { isPointer($0.content) && !isPointer($1.content) }
    }
}

extension Row {
    /// Whether this row holds `head`'s version: the same dot and tag.
    public func holds(_ head: RowHead) -> Bool {
        heads.contains { $0.dot == head.dot && $0.tag == head.tag }
    }

    /// Whether this row's context saw `head` (see `VersionVector.saw`).
    public func saw(_ head: RowHead) -> Bool { context.saw(head.dot, tag: head.tag) }

    /// The version `actor` writes after seeing this row: one head under a
    /// fresh dot, replacing every head this row holds.
    public func edited(by actor: Actor, to content: RowContent) -> Row {
        .single(namespace, key, dot: context.nextDot(for: actor), context: context, content: content)
    }

    /// A delete by a writer who saw this row: it removes exactly these heads.
    public func deleted() -> Row { .tombstone(namespace, key, context: context) }
}
