/// Why a merged body looks the way it does, for the audit trail and for
/// `quire` to answer "why did this paragraph come back?".
///
/// Lists hold paragraph identities in byte order of the hash; a paragraph
/// counted twice appears twice.
public struct ProseMergeReport: Hashable, Sendable {
    /// Paragraphs of the result that B's text did not hold: A brought them.
    /// (For `restoreWithReport`: what the shadow restored.)
    public var keptFromA: [ParagraphHash]
    /// Paragraphs of the result that A's text did not hold: B brought them.
    public var keptFromB: [ParagraphHash]
    /// Paragraphs of either text removed by a tombstone, with no revision of
    /// them in the result: a plain deletion won.
    public var droppedAsDeleted: [ParagraphHash]
    /// Paragraphs of either text removed by a tombstone while a revision of
    /// them (`ParagraphRevision`) is in the result: superseded by a rewrite.
    public var droppedAsRevised: [ParagraphHash]

    public init(keptFromA: [ParagraphHash] = [], keptFromB: [ParagraphHash] = [],
                droppedAsDeleted: [ParagraphHash] = [], droppedAsRevised: [ParagraphHash] = []) {
        self.keptFromA = keptFromA
        self.keptFromB = keptFromB
        self.droppedAsDeleted = droppedAsDeleted
        self.droppedAsRevised = droppedAsRevised
    }

    /// Builds the report by comparing the result with both inputs. Symmetric
    /// in the sense that swapping A and B swaps the two `keptFrom` lists.
    static func describing(result: [ParsedParagraph], a: [ParsedParagraph], b: [ParsedParagraph],
                           tombstones: ParagraphTombstones) -> ProseMergeReport {
        var report = ProseMergeReport()
        report.keptFromA = multisetDifference(result, minus: b)
        report.keptFromB = multisetDifference(result, minus: a)
        let resultWords = result.map { ParagraphWords($0.text) }
        var seen: Set<ParagraphHash> = []
        for paragraph in a + b where tombstones.isDeleted(paragraph.hash) && seen.insert(paragraph.hash).inserted {
            let words = ParagraphWords(paragraph.text)
            if resultWords.contains(where: { ParagraphRevision.areRevisions(words, $0) }) {
                report.droppedAsRevised.append(paragraph.hash)
            } else {
                report.droppedAsDeleted.append(paragraph.hash)
            }
        }
        report.droppedAsDeleted.sort()
        report.droppedAsRevised.sort()
        return report
    }

    private static func multisetDifference(_ x: [ParsedParagraph], minus y: [ParsedParagraph]) -> [ParagraphHash] {
        var remaining: [ParagraphHash: Int] = [:]
        for p in y { remaining[p.hash, default: 0] += 1 }
        var result: [ParagraphHash] = []
        for p in x {
            if let n = remaining[p.hash], n > 0 {
                remaining[p.hash] = n - 1
            } else {
                result.append(p.hash)
            }
        }
        return result.sorted()
    }
}

/// What one local edit did to the paragraphs its editor showed.
public struct ProseEditSummary: Hashable, Sendable {
    /// Shown paragraphs that are gone with no revision of them in the edit.
    public var deleted: Set<ParagraphHash>
    /// Shown paragraphs that are gone while a new paragraph of the edit is a
    /// revision of them (`ParagraphRevision`).
    public var revised: Set<ParagraphHash>

    /// Both kinds: a rewritten original is superseded on purpose, so it is
    /// tombstoned like a deletion (see `ProseMerge.deletions`).
    public var tombstones: Set<ParagraphHash> { deleted.union(revised) }

    public init(deleted: Set<ParagraphHash> = [], revised: Set<ParagraphHash> = []) {
        self.deleted = deleted
        self.revised = revised
    }
}
