import QuireCore
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
}
