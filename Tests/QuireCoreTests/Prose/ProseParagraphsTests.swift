import QuireCore
import QuireCrypto
import XCTest

final class ProseParagraphsTests: XCTestCase {
    func testSplitsOnBlankLinesAndKeepsSingleNewlines() {
        XCTAssertEqual(Paragraphs.split("a\nb\n\n\n\nc"), ["a\nb", "c"])
        XCTAssertEqual(Paragraphs.split("a\n \t \nb"), ["a", "b"], "a whitespace-only line separates")
        XCTAssertEqual(Paragraphs.split("a\n\u{00A0}\nb"), ["a", "b"], "no-break space is whitespace too")
        XCTAssertEqual(Paragraphs.split("\n\n  \nfirst\n\n"), ["first"], "blank lines at the edges vanish")
        XCTAssertEqual(Paragraphs.split(""), [])
        XCTAssertEqual(Paragraphs.split(" \n\t\n"), [])
    }

    func testKeepsEachParagraphsOwnTextExactly() {
        let text = "    indented code\n  second line  \n\n- item\n- item\n"
        XCTAssertEqual(Paragraphs.split(text), ["    indented code\n  second line  ", "- item\n- item"])
    }

    func testReadsWindowsAndClassicMacLineEndingsAsNewlines() {
        XCTAssertEqual(Paragraphs.split("a\r\nb\r\n\r\nc\r\n"), ["a\nb", "c"])
        XCTAssertEqual(Paragraphs.split("a\rb\r\rc"), ["a\nb", "c"])
        XCTAssertEqual(Paragraphs.split("a\r\n\nb"), ["a", "b"], "\\r\\n then \\n is a blank line")
        XCTAssertEqual(Paragraphs.split("a\u{2028}b"), ["a\u{2028}b"], "U+2028 is content, not a break")
    }

    func testJoinIsCanonical() {
        XCTAssertEqual(Paragraphs.join([]), "")
        XCTAssertEqual(Paragraphs.join(["a"]), "a\n")
        XCTAssertEqual(Paragraphs.join(["a\nb", "c"]), "a\nb\n\nc\n")
        XCTAssertEqual(Paragraphs.canonical("a\r\n\r\n\r\nb"), "a\n\nb\n")
        XCTAssertEqual(Paragraphs.canonical("no trailing newline"), "no trailing newline\n")
    }

    func testSplitThenJoinIsIdempotentOnRandomTexts() {
        let pieces = ["word", "two words", " ", "\t", "\n", "\n\n", "\r\n", "\r", "  \n", "é", "e\u{301}", "\u{00A0}", "x  "]
        for seed in ProseSeeds.seeds(first: 1, count: 300) {
            var random = ProseSeededRandom(seed: seed)
            var text = ""
            for _ in 0..<random.below(30) { text += random.element(of: pieces) }
            let once = Paragraphs.canonical(text)
            XCTAssertEqual(Array(Paragraphs.canonical(once).utf8), Array(once.utf8), "seed \(seed)")
            XCTAssertEqual(Paragraphs.split(once), Paragraphs.split(text), "seed \(seed)")
            XCTAssertEqual(Paragraphs.join(Paragraphs.split(once)).utf8.count, once.utf8.count, "seed \(seed)")
        }
    }

    func testHashIgnoresTrailingWhitespaceAndLineEndingsOnly() {
        let plain = Paragraphs.paragraphHash("one\ntwo")
        XCTAssertEqual(Paragraphs.paragraphHash("one  \ntwo\t"), plain)
        XCTAssertEqual(Paragraphs.paragraphHash("one\r\ntwo"), plain)
        XCTAssertNotEqual(Paragraphs.paragraphHash("  one\ntwo"), plain, "indentation is visible")
        XCTAssertNotEqual(Paragraphs.paragraphHash("one two"), plain, "a line break is visible")
        XCTAssertNotEqual(Paragraphs.paragraphHash("one\ntwo."), plain)
    }

    func testHashIsSHA256UnderTheProseSeparator() {
        let expected = SHA256.hash(separator: "quire.prose.paragraph", Array("one\ntwo".utf8))
        let hash = Paragraphs.paragraphHash("one \r\ntwo ")
        XCTAssertEqual(hash.bytes, expected)
        XCTAssertEqual(hash.bytes.count, ParagraphHash.byteCount)
        XCTAssertEqual(ParagraphHash(bytes: hash.bytes), hash)
        XCTAssertNil(ParagraphHash(bytes: Array(hash.bytes.prefix(16))))
    }

    func testUnionKeepsTheFirstTextsOrderAndAddsWhatOnlyTheSecondHas() {
        XCTAssertEqual(Paragraphs.union("a\n\nb\n\nc\n", "a\n\nd\n\nc  \n"), "a\n\nb\n\nc\n\nd\n",
                       "c with a trailing space is the same paragraph")
        XCTAssertEqual(Paragraphs.union("", "x\r\ny\n"), "x\ny\n")
        XCTAssertEqual(Paragraphs.union("a\n\na\n", "a\n"), "a\n\na\n", "the first text's repeats stay")
    }
}
