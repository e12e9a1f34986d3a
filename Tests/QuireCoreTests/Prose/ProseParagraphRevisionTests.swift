import QuireCore
import QuireTestSupport
import XCTest

final class ProseParagraphRevisionTests: XCTestCase {
    private let eight = "we walked along the river until it rained"

    func testContainmentIsARevisionWhateverTheLength() {
        XCTAssertTrue(ParagraphRevision.areRevisions("Tired.", "Tired. Went to bed early."))
        XCTAssertTrue(ParagraphRevision.areRevisions(eight, eight + ", then we ran home."))
        XCTAssertTrue(ParagraphRevision.areRevisions("So it began " + eight, eight))
    }

    func testWhitespaceCaseAndPunctuationOnlyChangesAreRevisions() {
        XCTAssertTrue(ParagraphRevision.areRevisions("Hello,  World", "hello world!"))
        XCTAssertTrue(ParagraphRevision.areRevisions("line one\nline two", "line one line two"))
    }

    func testOverlapThresholdIsThreeFifthsInclusive() {
        // 8 words, 2 changed: 6 shared of 10 distinct = 0.6, a revision.
        XCTAssertTrue(ParagraphRevision.areRevisions(eight, "we walked along the lake until it snowed"))
        // 8 words, 3 changed: 5 of 11 < 0.6, a different paragraph.
        XCTAssertFalse(ParagraphRevision.areRevisions(eight, "we walked along the lake until noon snowed"))
        // Appended words count against the index: 8 of 13 is above 0.6 and
        // containment holds anyway; 8 inside 20 unrelated words is still
        // containment, a revision.
        XCTAssertTrue(ParagraphRevision.areRevisions(eight, eight + " and a dozen other words follow here to pad it out"))
    }

    func testShortParagraphsNeedContainment() {
        // 4 words, one changed: 3/5 would pass the overlap test, but four
        // words are below the minimum, so these are two paragraphs.
        XCTAssertFalse(ParagraphRevision.areRevisions("went to the park", "went to the beach"))
        // 5 words, one changed: 4 of 6 with the minimum met.
        XCTAssertTrue(ParagraphRevision.areRevisions("we went to the park", "we went to the beach"))
    }

    func testUnrelatedAndEmptyAreNotRevisions() {
        XCTAssertFalse(ParagraphRevision.areRevisions(eight, "bought bread, milk and a newspaper on the way"))
        XCTAssertFalse(ParagraphRevision.areRevisions("", eight))
        XCTAssertFalse(ParagraphRevision.areRevisions("---", "***"), "no words on either side")
    }

    func testIsSymmetric() {
        let samples = [eight, "Tired.", "Tired. Went to bed.", "we walked along the lake until it snowed", "x y z", ""]
        for p in samples {
            for q in samples {
                XCTAssertEqual(ParagraphRevision.areRevisions(p, q), ParagraphRevision.areRevisions(q, p), "\(p) / \(q)")
            }
        }
    }

    /// The ASCII shortcut in `words` gives what the Unicode definition
    /// (letters and digits by scalar properties, lowercased) gives.
    func testWordsMatchTheUnicodeDefinition() {
        func reference(_ text: String) -> [String] {
            var result: [String] = [], current = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                    current.append(scalar)
                } else if !current.isEmpty {
                    result.append(String(current).lowercased()); current = String.UnicodeScalarView()
                }
            }
            if !current.isEmpty { result.append(String(current).lowercased()) }
            return result
        }
        let pieces = ["Hello", "WORLD", "ça", "Ÿes", "ΣΟΦΊΑ", "straße", "İstanbul", "٣٤", "½", "x2", "'", "-", " ", "\n",
                      ",", "🙂", "日本語", "Ⅻ", "_", "ﬁne", "\u{301}", "9", "Z"]
        var generator = SplitMix64(seed: 0x3d5)   // repeatable: a failure prints its text
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...12, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            XCTAssertEqual(ParagraphRevision.words(text), reference(text), text)
        }
    }

    /// The counting shortcuts (containment needs every word; shared counts
    /// bound the overlap) give the definition's answers.
    func testLengthBoundAgreesWithTheOverlap() {
        let long = Array(repeating: "we walked along the lake", count: 8).joined(separator: " ")
        XCTAssertFalse(ParagraphRevision.areRevisions(eight + " and more words here", long))
        XCTAssertTrue(ParagraphRevision.areRevisions(long, long + " twice over"))
        // 10 of 16 words shared: exactly 3/5 of the union, a revision.
        XCTAssertTrue(ParagraphRevision.areRevisions("a b c d e f g h i j k l m", "a b c d e f g h i j n o p"))
    }
}
