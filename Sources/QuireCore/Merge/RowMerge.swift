/// The merge of two states of one row: a join-semilattice over
/// (heads, context), the dotted-version-vector design of Preguiça et al.
/// ("Dotted Version Vectors", 2012) as used by the multi-value register of
/// Almeida et al. ("Delta State Replicated Data Types", 2018).
///
/// A state S = (H, C): H a set of heads (dot, content), C a context with
/// dot(h) ∈ C for every h ∈ H. The join of S1 and S2 is (H, C1 ⊔ C2) where
///
///     H = { h ∈ H1 : dot(h) ∉ C2  or  dot(h) ∈ dots(H2) }
///       ∪ { h ∈ H2 : dot(h) ∉ C1  or  dot(h) ∈ dots(H1) }
///
/// A head survives unless the other side has seen its dot and no longer
/// holds it (it was overwritten or deleted there). The "dot(h) ∈ dots(H2)"
/// clause is the standard one for a head both sides hold, extended to a
/// collision (one dot, two contents, possible only if a device minted a dot
/// twice): both versions survive and are reported, nothing is chosen.
///
/// Why it is a join, for any number of states S1..Sn merged in any grouping:
/// the result is always
///     H = { h ∈ ∪Hi : for every i, dot(h) ∉ Ci or dot(h) ∈ dots(Hi) },
///     C = ⊔Ci.
/// For two states this is the definition (for h ∈ H1 the clause holds for
/// i = 1, since dot(h) ∈ dots(H1)). It composes because, for the join S12 of
/// S1 and S2, "d ∉ C12 or d ∈ dots(H12)" holds exactly when it holds for
/// S1 and for S2: if d is in neither context it is not in their join; if it
/// is in Cj, then some head with dot d is in Hj and survives by the clause
/// itself; conversely a surviving head with dot d satisfied the clause for
/// both. (Contexts are per-actor maxima of downward-closed counter sets, so
/// d ∈ C1 ⊔ C2 ⟺ d ∈ C1 or d ∈ C2.) The closed form is symmetric in the
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
        let fromLocal = joined.heads.contains { h in local.heads.contains { $0.dot == h.dot } }
        let fromIncoming = joined.heads.contains { h in !local.heads.contains { $0.dot == h.dot } }
        return .store(joined, merged: fromLocal && fromIncoming)
    }

    public static func join(_ a: Row, _ b: Row) -> Row {
        precondition(a.namespace == b.namespace && a.key == b.key)
        let dotsA = Set(a.heads.map(\.dot)), dotsB = Set(b.heads.map(\.dot))
        var kept: [RowHead] = []
        for h in a.heads where !b.context.covers(h.dot) || dotsB.contains(h.dot) { kept.append(h) }
        for h in b.heads where !a.context.covers(h.dot) || dotsA.contains(h.dot) { kept.append(h) }
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
    /// The version `actor` writes after seeing this row: one head under a
    /// fresh dot, replacing every head this row holds.
    public func edited(by actor: Actor, to content: RowContent) -> Row {
        .single(namespace, key, dot: context.nextDot(for: actor), context: context, content: content)
    }

    /// A delete by a writer who saw this row: it removes exactly these heads.
    public func deleted() -> Row { .tombstone(namespace, key, context: context) }
}
