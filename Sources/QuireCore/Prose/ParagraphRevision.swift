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
        areRevisions(ParagraphWords(p), ParagraphWords(q))
    }

    /// The same test on words computed once: callers compare one paragraph
    /// with many, so each side is tokenized and counted only once.
    static func areRevisions(_ p: ParagraphWords, _ q: ParagraphWords) -> Bool {
        if p.words.isEmpty || q.words.isEmpty { return false }
        let (short, long) = p.words.count <= q.words.count ? (p, q) : (q, p)
        if contains(long.words, short.words) { return true }
        guard short.words.count >= minimumWordsForOverlap else { return false }
        // shared <= |short| and total >= |long|: a length ratio under 3/5
        // fails without counting (most pairs a save compares end here).
        guard short.words.count * overlapDenominator >= long.words.count * overlapNumerator else { return false }
        let shared = sharedCount(short.counts, long.counts)
        // Sum of max counts = |p| + |q| - sum of min counts.
        let total = p.words.count + q.words.count - shared
        return shared * overlapDenominator >= total * overlapNumerator
    }

    /// The words of a paragraph: runs of letters and digits, lowercased.
    /// ASCII is decided without the Unicode tables (same answer, far
    /// cheaper); anything else asks the scalar's properties.
    public static func words(_ paragraph: String) -> [String] {
        var result: [String] = []
        var current: [UInt8] = []     // UTF-8 of the word so far
        var isASCII = true
        func finish() {
            guard !current.isEmpty else { return }
            let word = String(decoding: current, as: UTF8.self)
            result.append(isASCII ? word : word.lowercased())
            current.removeAll(keepingCapacity: true)
            isASCII = true
        }
        for scalar in paragraph.unicodeScalars {
            let value = scalar.value
            if value < 0x80 {
                switch value {
                case 0x41...0x5A: current.append(UInt8(value) | 0x20)   // A-Z, lowercased here
                case 0x61...0x7A, 0x30...0x39: current.append(UInt8(value))
                default: finish()
                }
            } else if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                current.append(contentsOf: UTF8.encode(scalar)!)
                isASCII = false
            } else {
                finish()
            }
        }
        finish()
        return result
    }

    /// Sum over words of the smaller of the two counts.
    static func sharedCount(_ p: [String: Int], _ q: [String: Int]) -> Int {
        let (small, large) = p.count <= q.count ? (p, q) : (q, p)
        var shared = 0
        for (word, count) in small { shared += min(count, large[word] ?? 0) }
        return shared
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

/// A paragraph's words, tokenized once for many comparisons; their counts
/// only when a comparison gets as far as the overlap test.
final class ParagraphWords {
    let words: [String]
    private(set) lazy var counts: [String: Int] = {
        var counts: [String: Int] = [:]
        for word in words { counts[word, default: 0] += 1 }
        return counts
    }()

    init(_ text: String) {
        words = ParagraphRevision.words(text)
    }
}
