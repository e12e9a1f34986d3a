/// The no-word-lost merge for prose: notebook bodies and journal days.
///
/// ## What survives
/// The result holds every paragraph of either side, as many times as the
/// side that holds it most often (a paragraph twice in one text stays
/// twice; a paragraph in both texts is not doubled), except paragraphs the
/// union of both tombstone sets deletes (`ParagraphTombstones`: its highest
/// ranked marker is a deletion): a deletion wins everywhere over a copy that
/// never saw it, and a paragraph typed again after a deletion outranks that
/// deletion. The result's tombstones are that union. An empty body brings
/// nothing and removes nothing, so it never erases.
///
/// A rewritten paragraph does not come back beside its rewrite because
/// `deletions(shown:edited:)` tombstones the original of every rewrite, not
/// only of every deletion. The merge never drops text for *looking like*
/// other text: similarity cannot tell "a stale copy of the original" from
/// "a second device rewrote the same paragraph its own way", and in the
/// second case dropping either rewrite loses words (both survive: an extra
/// copy to tidy up, never a lost one). Dropping by similarity would also
/// break associativity (similarity is not transitive) and let a tombstoned
/// rewrite take its original down with it on some delivery orders only.
/// Identical paragraphs that differ only in trailing spaces are one
/// paragraph (one identity); the copy with the greatest bytes is written.
///
/// ## Order
/// Each side's surviving paragraphs keep their order. The side that leads is
/// the one with more surviving paragraphs, then the one whose first
/// paragraph that differs is greater in UTF-8 bytes (a total order on
/// sequences: equal keys mean identical sequences). The other side's extra
/// paragraphs (copies beyond what the leading side holds) go right after
/// the nearest preceding paragraph of their own side, in their own side's
/// order, or first when none precedes them; a tombstoned neighbour counts
/// as present at its rewrite in the leading side, when similarity finds one,
/// and an extra that rewrites a paragraph the leading side still spells out
/// (tombstoned by that rewrite) goes where that paragraph was
/// (`ParagraphRevision`: placement only). Only the texts are compared, never
/// which argument is `a`, so the merge is commutative to the byte.
///
/// ## Why every device ends with the same bytes
/// - The surviving multiset is "per identity, the maximum count over all
///   inputs, zero if the union of tombstones deletes it", with the
///   byte-greatest spelling. Max, union and "zero if the union deletes it"
///   are associative, commutative and idempotent (the verdict is a function
///   of the union, and markers only join), so the SET (with multiplicities
///   and spellings) is associative over any grouping of any number of
///   versions.
/// - ORDER is commutative and idempotent: `merge(a, a)` and
///   `merge(merge(a, b), b)` return their first argument, because the merged
///   side holds everything the other holds, so either it has more paragraphs
///   and leads with nothing to insert, or the multisets are equal, nothing is
///   inserted, and the greater sequence (already chosen) leads again. Order
///   is not associative in general: which side leads an inner merge decides
///   where a third side's extras land (the fleet simulation finds about one
///   triple in eight differing in order, never in paragraphs).
/// - Gossip converges in a bounded number of steps: by the associativity
///   above, a device's multiset is the join of every version in its causal
///   past, so once every device has heard, directly or not, from every
///   other, all hold one multiset. From then on every merge is between equal
///   multisets and returns the greater of its two sequences unchanged: the
///   fleet's greatest sequence wins every merge it takes part in and
///   spreads, every other one only loses. So a second spreading pass
///   leaves one identical text everywhere (all-pairs gossip: two rounds that
///   change something, a third that changes nothing). Different gossip
///   schedules reach the same paragraphs, possibly in different orders.
///
/// ## Known costs, all "an extra copy", never "a lost word"
/// - Two devices rewriting one paragraph differently keep both rewrites.
/// - A stale original that reaches the merge without its tombstone (from a
///   writer that bypassed `deletions`) stays beside its rewrite.
/// - Removing one of two identical copies does not travel (no tombstone).
/// - Trailing-space-only edits lose to the byte-greatest spelling on merge.
/// - Markers are per identity, ranked, not per copy: two devices that
///   delete one paragraph independently make one marker, and a device that
///   never saw a deletion yet deletes the paragraph while another types it
///   again (a revival) leaves it there: a kept paragraph, never a lost one.

/// All functions are pure and deterministic.
public enum ProseMerge {
    /// Merges two concurrent versions (the caller has found that neither
    /// version vector dominates, or that they are equal with different
    /// content). Commutative, idempotent, convergent; see the type comment.
    public static func merge(_ a: ProseVersion, _ b: ProseVersion) -> ProseVersion {
        merge(a, b, reporting: false).version
    }

    /// `merge`, plus why each paragraph is or is not in the result.
    public static func mergeWithReport(_ a: ProseVersion, _ b: ProseVersion)
        -> (version: ProseVersion, report: ProseMergeReport) {
        merge(a, b, reporting: true)
    }

    private static func merge(_ a: ProseVersion, _ b: ProseVersion, reporting: Bool)
        -> (version: ProseVersion, report: ProseMergeReport) {
        let parsedA = Paragraphs.parse(a.text)
        let parsedB = Paragraphs.parse(b.text)
        let tombstones = ParagraphTombstones(a.deletedParagraphs.union(b.deletedParagraphs))
        let spelling = ParagraphSpelling(greatestOf: parsedA + parsedB)
        let aLeads = leads(survivors(parsedA, excluding: tombstones),
                           over: survivors(parsedB, excluding: tombstones), spelling: spelling)
        let order = aLeads
            ? interleave(leading: parsedA, other: parsedB, tombstones: tombstones)
            : interleave(leading: parsedB, other: parsedA, tombstones: tombstones)
        return finish(order, tombstones: tombstones, spelling: spelling, a: parsedA, b: parsedB, reporting: reporting)
    }

    /// The paragraphs one local edit deliberately removed: identities
    /// present in `shown` (what this device's editor or open file last
    /// displayed) and absent from `edited`, whether deleted outright or
    /// rewritten into a new paragraph. A rewritten original is tombstoned
    /// too, so a device still holding it unchanged does not bring it back
    /// beside the rewrite; a device that rewrote it differently keeps its own
    /// rewrite, which is a new identity no tombstone names.
    ///
    /// `shown` must be what was displayed, never the live record: a
    /// paragraph a sync import added underneath was never shown, so it cannot
    /// be counted as deleted. Removing one of two identical copies tombstones
    /// nothing (the identity is still present); a device holding both copies
    /// may bring the second back, an extra copy rather than a lost one.
    ///
    /// Equal to `classifyEdit(...).tombstones`, without telling rewrites from
    /// deletions (both are tombstoned, and telling them apart tokenizes every
    /// removed paragraph: most of a save's time when a file is replaced whole).
    public static func deletions(shown: String, edited: String) -> Set<ParagraphHash> {
        changes(shown: shown, edited: edited).deleted
    }

    /// `deletions`, and the paragraphs the edit typed that were not in
    /// `shown` (`typed`: new text, or a paragraph deleted before and typed
    /// again: an undo, a paste back, a file emptied and rewritten, which the
    /// edit's version revives), from one reading of each text. Only
    /// paragraphs absent from `shown` count as typed, so an editor that never
    /// saw a sibling's deletion and saves its old text whole does not bring
    /// the deleted paragraph back. Compared by the bytes identities digest:
    /// only paragraphs one side lacks are digested.
    public static func changes(shown: String, edited: String) -> (deleted: Set<ParagraphHash>, typed: Set<ParagraphHash>) {
        let before = Set(Paragraphs.normalizedParagraphs(shown))
        let after = Set(Paragraphs.normalizedParagraphs(edited))
        var deleted = Set<ParagraphHash>()
        for paragraph in before where !after.contains(paragraph) { deleted.insert(paragraph.identity) }
        var typed = Set<ParagraphHash>()
        for paragraph in after where !before.contains(paragraph) { typed.insert(paragraph.identity) }
        return (deleted, typed)
    }

    /// `deletions`, split into plain deletions and rewrites.
    public static func classifyEdit(shown: String, edited: String) -> ProseEditSummary {
        let before = Paragraphs.parse(shown)
        let after = Paragraphs.parse(edited)
        let beforeIDs = Set(before.map(\.hash))
        let afterIDs = Set(after.map(\.hash))
        // Only paragraphs the edit created can be rewrites of a removed one.
        let createdWords = after.filter { !beforeIDs.contains($0.hash) }.map { ParagraphWords($0.text) }
        var summary = ProseEditSummary()
        for paragraph in before where !afterIDs.contains(paragraph.hash) {
            let words = ParagraphWords(paragraph.text)
            if createdWords.contains(where: { ParagraphRevision.areRevisions(words, $0) }) {
                summary.revised.insert(paragraph.hash)
            } else {
                summary.deleted.insert(paragraph.hash)
            }
        }
        return summary
    }

    /// The version a local edit produces: `edited`, in its own order and
    /// spelling, plus whatever `record` (the live record, which may have
    /// gained paragraphs underneath the editor) holds that the edit neither
    /// showed-and-removed nor already contains; tombstones are the record's,
    /// with `deletions(shown:edited:)` deleted once more and the paragraphs
    /// the edit typed again (`changes`' `typed`) revived (`ParagraphTombstones.afterEdit`).
    /// Local, so the edit's order leads; the
    /// result syncs as an ordinary new version.
    ///
    /// Lines another writer appended meanwhile to a paragraph the edit
    /// rewrote go after the rewrite (`AppendedLines`), not in a second copy;
    /// two shown versions of one paragraph appended to on two devices at
    /// once become one again (`SplitAppends`).
    public static func applyEdit(shown: String, edited typed: String, onto record: ProseVersion) -> ProseVersion {
        let (folded, superseded) = AppendedLines.fold(shown: shown, edited: typed, record: record.text)
        let recorded = ParagraphTombstones(record.deletedParagraphs)
        let edited = SplitAppends.join(shown: shown, record: record.text, edited: folded, tombstones: recorded)
        let change = changes(shown: shown, edited: edited)
        let tombstones = ParagraphTombstones(recorded.afterEdit(deleted: change.deleted.union(superseded), typed: change.typed))
        let parsedEdit = Paragraphs.parse(edited)
        let parsedRecord = Paragraphs.parse(record.text)
        let spelling = ParagraphSpelling(preferring: parsedEdit, then: parsedRecord)
        let order = interleave(leading: parsedEdit, other: parsedRecord, tombstones: tombstones)
        return finish(order, tombstones: tombstones, spelling: spelling, a: parsedEdit, b: parsedRecord, reporting: false).version
    }

    /// Whether `applyEdit` would join, in this save, versions of one
    /// paragraph that devices appended lines to at once (`SplitAppends`).
    /// A save whose record did not move keeps the writer's bytes exactly
    /// otherwise, and so skipped the join: a log appended to with `>>`
    /// kept every round's copies.
    public static func joinsSplitAppends(shown: String, edited: String, onto record: ProseVersion) -> Bool {
        SplitAppends.join(shown: shown, record: record.text, edited: edited,
                          tombstones: ParagraphTombstones(record.deletedParagraphs)) != edited
    }

    /// Restores, from this device's shadow (the text it last wrote or
    /// accepted, never synced), the paragraphs an incoming version dropped
    /// without a tombstone: a clobber, not a deletion. A wiped (empty)
    /// incoming body gets the whole shadow back. Tombstoned paragraphs stay
    /// dead, rewritten originals included (their rewrites tombstoned them).
    /// The incoming order and spelling lead; restored paragraphs go after
    /// their nearest preceding shadow paragraph. Local: the caller stores the
    /// result as a new version, which then syncs like any edit.
    public static func restore(shadow: String, incoming: ProseVersion) -> ProseVersion {
        restoreWithReport(shadow: shadow, incoming: incoming).version
    }

    /// `restore`, with a report where A is the shadow (so `keptFromA` lists
    /// what was restored) and B is the incoming version.
    public static func restoreWithReport(shadow: String, incoming: ProseVersion)
        -> (version: ProseVersion, report: ProseMergeReport) {
        let tombstones = ParagraphTombstones(incoming.deletedParagraphs)
        let parsedShadow = Paragraphs.parse(shadow)
        let parsedIncoming = Paragraphs.parse(incoming.text)
        let spelling = ParagraphSpelling(preferring: parsedIncoming, then: parsedShadow)
        let order = interleave(leading: parsedIncoming, other: parsedShadow, tombstones: tombstones)
        return finish(order, tombstones: tombstones, spelling: spelling, a: parsedShadow, b: parsedIncoming, reporting: true)
    }

    // MARK: - Internals

    private static func survivors(_ paragraphs: [ParsedParagraph], excluding tombstones: ParagraphTombstones) -> [ParagraphHash] {
        paragraphs.map(\.hash).filter { !tombstones.isDeleted($0) }
    }

    /// True when `x` should lead over `y`: more paragraphs, then, at the
    /// first position where they differ, the paragraph with greater UTF-8
    /// bytes (a proper prefix is smaller). Both are spelled the same way,
    /// so the first differing identity is the first differing text, and
    /// equal sequences may lead either way.
    private static func leads(_ x: [ParagraphHash], over y: [ParagraphHash], spelling: ParagraphSpelling) -> Bool {
        if x.count != y.count { return x.count > y.count }
        guard let i = x.indices.first(where: { x[$0] != y[$0] }) else { return false }
        return spelling.paragraph(for: y[i]).bytes.lexicographicallyPrecedes(spelling.paragraph(for: x[i]).bytes)
    }

    /// `leading`'s survivors in their order, with `other`'s extra
    /// occurrences inserted right after the nearest preceding paragraph of
    /// `other` already placed. The k-th copy of an identity in `other` is the
    /// k-th copy in `leading`; copies beyond `leading`'s count are the
    /// extras, so each identity ends with max(count in leading, count in
    /// other) copies. A tombstoned paragraph of `other` anchors at its
    /// rewrite in `leading` (a paragraph `other` lacks), if one is there, so
    /// a paragraph written after it stays after the rewrite (placement only:
    /// nothing is dropped).
    static func interleave(leading allOfLeading: [ParsedParagraph], other: [ParsedParagraph],
                           tombstones: ParagraphTombstones) -> [ParagraphHash] {
        let leading = allOfLeading.filter { !tombstones.isDeleted($0.hash) }
        let otherIDs = Set(other.map(\.hash))
        // Paragraphs of `leading` the other side rewrote (tombstoned there,
        // its rewrite among its extras), each with the slot it held: the
        // rewrite goes there, not after whatever precedes it in its own
        // text. Words are compared only if some are needed.
        var rewritten: [(slot: Int, words: ParagraphWords)]?
        func rewrittenSlot(of p: ParsedParagraph) -> Int? {
            if rewritten == nil {
                var slots: [(slot: Int, words: ParagraphWords)] = []
                var survivors = 0
                for q in allOfLeading {
                    if !tombstones.isDeleted(q.hash) { survivors += 1 } else if !otherIDs.contains(q.hash) { slots.append((survivors, ParagraphWords(q.text))) }
                }
                rewritten = slots
            }
            guard let candidates = rewritten, !candidates.isEmpty else { return nil }
            let words = ParagraphWords(p.text)
            guard let index = candidates.firstIndex(where: { ParagraphRevision.areRevisions($0.words, words) }) else { return nil }
            return rewritten!.remove(at: index).slot
        }
        // after[0] holds extras placed before everything; after[i + 1] holds
        // extras placed after leading[i].
        var after: [[ParagraphHash]] = Array(repeating: [], count: leading.count + 1)
        var positions: [ParagraphHash: [Int]] = [:]
        for (index, p) in leading.enumerated() { positions[p.hash, default: []].append(index) }
        // Words of the paragraphs only `leading` has: the candidate rewrites.
        // Computed only if a tombstoned paragraph needs them.
        var rewriteWords: [(index: Int, words: ParagraphWords)]?
        var copiesSeen: [ParagraphHash: Int] = [:]
        var slot = 0
        for p in other {
            let id = p.hash
            if tombstones.isDeleted(id) {
                if rewriteWords == nil {
                    rewriteWords = leading.indices.filter { !otherIDs.contains(leading[$0].hash) }
                        .map { ($0, ParagraphWords(leading[$0].text)) }
                }
                guard let candidates = rewriteWords, !candidates.isEmpty else { continue }
                let words = ParagraphWords(p.text)
                if let rewrite = candidates.first(where: { ParagraphRevision.areRevisions(words, $0.words) }) {
                    slot = rewrite.index + 1
                }
                continue
            }
            let copy = copiesSeen[id, default: 0]
            copiesSeen[id] = copy + 1
            if let found = positions[id], copy < found.count {
                slot = found[copy] + 1
            } else {
                if copy == 0, !positions.keys.contains(id), let place = rewrittenSlot(of: p) { slot = place }
                after[slot].append(id)
            }
        }
        var order = after[0]
        order.reserveCapacity(leading.count + other.count)
        for (index, p) in leading.enumerated() {
            order.append(p.hash)
            order.append(contentsOf: after[index + 1])
        }
        return order
    }

    private static func finish(_ order: [ParagraphHash], tombstones: ParagraphTombstones, spelling: ParagraphSpelling,
                               a: [ParsedParagraph], b: [ParsedParagraph], reporting: Bool)
        -> (version: ProseVersion, report: ProseMergeReport) {
        let result = order.map { spelling.paragraph(for: $0) }
        let version = ProseVersion(text: Paragraphs.join(result.map(\.text)), deletedParagraphs: tombstones.markers)
        let report = reporting
            ? ProseMergeReport.describing(result: result, a: a, b: b, tombstones: tombstones)
            : ProseMergeReport()
        return (version, report)
    }
}

/// Which exact text to write for each identity (copies of one identity may
/// differ in trailing spaces).
struct ParagraphSpelling {
    private var chosen: [ParagraphHash: ParsedParagraph] = [:]

    /// The byte-greatest copy: symmetric and associative, for the merge.
    init(greatestOf paragraphs: [ParsedParagraph]) {
        for p in paragraphs {
            if let current = chosen[p.hash] {
                // Same identity and neither has trailing whitespace: same bytes.
                if !current.hasTrailingWhitespace && !p.hasTrailingWhitespace { continue }
                if !current.bytes.lexicographicallyPrecedes(p.bytes) { continue }
            }
            chosen[p.hash] = p
        }
    }

    /// `preferred`'s spelling where it has one, for local operations where
    /// one side is the newer intent.
    init(preferring preferred: [ParsedParagraph], then others: [ParsedParagraph]) {
        self.init(greatestOf: others)
        for (id, p) in ParagraphSpelling(greatestOf: preferred).chosen { chosen[id] = p }
    }

    func paragraph(for id: ParagraphHash) -> ParsedParagraph {
        guard let p = chosen[id] else { preconditionFailure("merge placed a paragraph it never parsed") }
        return p
    }
}
