/// A version's paragraph tombstones, and whether each paragraph identity is
/// deleted by them.
///
/// Each identity has ranked markers. Rank 1 is the identity itself (its
/// first deletion: all a version held before revivals existed). Rank k ≥ 2
/// is the identity with its last four bytes XORed with k: even ranks revive
/// (the paragraph typed again after the deletion of the rank below), odd
/// ranks delete again. The highest rank present decides: odd, deleted.
/// A revival outranks the deletion it follows, so a concurrent version that
/// still carries that deletion (a device that took it in and edited before
/// it heard of the typing) no longer takes the paragraph down at their
/// merge; a deletion made after the revival outranks it in turn.
///
/// Markers only join by set union at a merge, and "deleted" is a function
/// of the union, so the merge stays associative, commutative and idempotent.
/// A version's own markers hold rank 1 exactly while the paragraph is
/// deleted in it, so a reader that knows rank 1 alone (an older quire)
/// reads each version alone as before, and takes higher ranks for
/// tombstones of paragraphs that do not exist.
public struct ParagraphTombstones: Sendable {
    public let markers: Set<ParagraphHash>
    /// The last four bytes of every marker, by the rest of its bytes.
    private let groups: [ParagraphHash.RankPrefix: [UInt32]]

    public init(_ markers: Set<ParagraphHash>) {
        self.markers = markers
        var groups: [ParagraphHash.RankPrefix: [UInt32]] = [:]
        groups.reserveCapacity(markers.count)
        for marker in markers {
            let key = marker.rankKey
            groups[key.prefix, default: []].append(key.last)
        }
        self.groups = groups
    }

    public var isEmpty: Bool { markers.isEmpty }

    /// The marker of `rank` (1 or more) for `identity`.
    public static func marker(_ rank: UInt32, of identity: ParagraphHash) -> ParagraphHash {
        rank <= 1 ? identity : identity.flippingLastWord(rank)
    }

    /// The highest rank among `identity`'s markers (0: none).
    public func rank(of identity: ParagraphHash) -> UInt32 {
        let key = identity.rankKey
        guard let lasts = groups[key.prefix] else { return 0 }
        var highest: UInt32 = 0
        for last in lasts {
            let flipped = last ^ key.last
            // Ranks stay small: anything else is another identity's marker.
            let rank: UInt32 = flipped == 0 ? 1 : (flipped >= 2 && flipped < 1 << 20 ? flipped : 0)
            highest = max(highest, rank)
        }
        return highest
    }

    public func isDeleted(_ identity: ParagraphHash) -> Bool { rank(of: identity) % 2 == 1 }

    /// The markers of the version a local edit makes from one holding
    /// these: `deleted` (shown and left out) deleted once more where alive,
    /// `typed` (not shown, typed) revived where deleted.
    public func afterEdit(deleted: Set<ParagraphHash>, typed: Set<ParagraphHash>) -> Set<ParagraphHash> {
        var result = markers
        for identity in deleted {
            let rank = rank(of: identity)
            guard rank % 2 == 0 else { continue }
            result.insert(Self.marker(rank + 1, of: identity))
            result.insert(identity)
        }
        for identity in typed {
            let rank = rank(of: identity)
            guard rank % 2 == 1 else { continue }
            result.insert(Self.marker(rank + 1, of: identity))
            result.remove(identity)
        }
        return result
    }
}
