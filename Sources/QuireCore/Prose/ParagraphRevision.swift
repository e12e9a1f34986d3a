/// Decides whether two paragraphs are versions of one another ("revisions"):
/// one was written by editing the other.
///
/// Two tests, either suffices:
/// - **containment**: the shorter one's word sequence occurs, contiguous and
///   in order, inside the longer one's (a sentence was appended or
///   prepended; also whitespace-, case- or punctuation-only changes, where
///   the word sequences are equal);
/// - **word overlap**: both have at least `minimumWordsForOverlap` words and
///   the Jaccard index of their word multisets (sum of minimum counts over
///   sum of maximum counts) is at least 3/5 (`overlapNumerator` /
///   `overlapDenominator`). Below five words one changed word already
///   moves the index past any useful threshold ("went to the park" vs
///   "went to the beach" is 3/5), so short paragraphs count as revisions
///   only by containment.
///
/// Words are maximal runs of letters and digits, lowercased. Integer
/// arithmetic only, so every device decides identically.
///
/// This is a classifier, never a reason to drop text: the merge removes a
/// superseded paragraph only through its tombstone (see `ProseMerge`).
/// Similarity cannot tell "stale original beside its rewrite" from "two
/// devices each rewrote the paragraph differently", and in the second case
/// dropping either would lose words.
public enum ParagraphRevision {
    public static let minimumWordsForOverlap = 5
    public static let overlapNumerator = 3
    public static let overlapDenominator = 5

    /// True when `p` and `q` are revisions of one another. Symmetric.
    public static func areRevisions(_ p: String, _ q: String) -> Bool {
        areRevisions(words: words(p), words(q))
    }

    static func areRevisions(words p: [String], _ q: [String]) -> Bool {
        if p.isEmpty || q.isEmpty { return false }
        let (short, long) = p.count <= q.count ? (p, q) : (q, p)
        if contains(long, short) { return true }
        guard short.count >= minimumWordsForOverlap else { return false }
        let (shared, total) = multisetOverlap(p, q)
        return shared * overlapDenominator >= total * overlapNumerator
    }

    /// The words of a paragraph: runs of letters and digits, lowercased.
    public static func words(_ paragraph: String) -> [String] {
        var result: [String] = []
        var current = String.UnicodeScalarView()
        for scalar in paragraph.unicodeScalars {
            let properties = scalar.properties
            if properties.isAlphabetic || properties.numericType != nil {
                current.append(scalar)
            } else if !current.isEmpty {
                result.append(String(current).lowercased())
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { result.append(String(current).lowercased()) }
        return result
    }

    /// (sum of min counts, sum of max counts) over the two word multisets.
    static func multisetOverlap(_ p: [String], _ q: [String]) -> (shared: Int, total: Int) {
        var counts: [String: (Int, Int)] = [:]
        for w in p { counts[w, default: (0, 0)].0 += 1 }
        for w in q { counts[w, default: (0, 0)].1 += 1 }
        var shared = 0
        var total = 0
        for (x, y) in counts.values {
            shared += min(x, y)
            total += max(x, y)
        }
        return (shared, total)
    }

    /// True when `needle` occurs as a contiguous run inside `hay`.
    static func contains(_ hay: [String], _ needle: [String]) -> Bool {
        guard !needle.isEmpty, needle.count <= hay.count else { return needle.isEmpty }
        for start in 0...(hay.count - needle.count)
        where hay[start..<start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }
}
