import Foundation
import QuireCore
import QuireStore
@testable import QuireFS
import QuireTestSupport
import XCTest

final class FileNamesTests: XCTestCase {
    func testEscapingIsReversibleAndNeverHidden() {
        for title in ["plain", "a/b", ".", "..", ".hidden", "50% off", "tab\there", "nul\u{0}byte", "", "%", "%~1a2b3c4d", "ü/é", "end."] {
            let stem = FileNames.escape(title)
            XCTAssertFalse(stem.contains("/"), title)
            XCTAssertFalse(stem.hasPrefix("."), title)
            XCTAssertFalse(stem.unicodeScalars.contains { $0.value < 0x20 }, title)
            XCTAssertEqual(FileNames.unescape(stem), title, title)
            XCTAssertEqual(FileNames.meaning(of: stem + ".md", in: .notebook), .row(title: title), title)
            XCTAssertFalse(FileNames.isJunk(stem + ".md"), title)
        }
    }

    /// A name typed with `%XX` that escaping would not write (a web
    /// clipper's `What%20is%20FUSE.md`) is its own title, so it lists under
    /// the name it was made with; escapes escaping writes still decode.
    func testTypedPercentSequencesAreTheirOwnTitle() {
        for name in ["What%20is%20FUSE", "pct%41", "q%zz", "note%2e", "100%", "%%", "a%2", "%3Cb%3E", "x%C3%A9", "100%25 sure", "50%25", "a%25b",
                     "what%2fwhy", "%2efile", "a%2f%2e", "x%c3%a9", "%25%2f"] {
            XCTAssertEqual(FileNames.meaning(of: name + ".md", in: .notebook), .row(title: name), name)
            XCTAssertEqual(FileNames.escape(name), name, name)
        }
        for (name, title) in [("a%2Fb", "a/b"), ("50%2525 off", "50%25 off"), ("%2Ehidden", ".hidden"), ("%2E%2E", ".."), ("tab%09", "tab\t"),
                              ("%25", "%"), ("a%25~1a2b3c4d", "a%~1a2b3c4d"), ("%2F%25C3", "/%C3")] {
            XCTAssertEqual(FileNames.meaning(of: name + ".md", in: .notebook), .row(title: title), name)
        }
        for (title, name) in [("50% off", "50% off"), ("a%2Fb", "a%252Fb"), ("%2E", "%252E"), ("x%2E", "x%2E"), ("%~1a2b3c4d", "%25~1a2b3c4d"),
                              ("/%2E", "%2F%252E"), ("/%C3", "%2F%25C3"), ("%", "%25"), ("", "%"),
                              ("%25", "%2525"), ("100%25 sure", "100%25 sure"), ("a%25~b", "a%2525~b"), ("%25%2F", "%25%252F")] {
            XCTAssertEqual(FileNames.escape(title), name, title)
            XCTAssertEqual(FileNames.unescape(name), title, name)
        }
    }

    func testSeededRandomTitlesRoundTrip() {
        var generator = SplitMix64(seed: 0x5eed)
        let alphabet = Array("ab /%.~#\u{0}\u{1}\téü漢😀-_2FEC5")
        for _ in 0..<2_000 {
            let title = String((0..<Int.random(in: 0...20, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let name = FileNames.name(stem: FileNames.escape(title), namespace: .notebook, key: RowKey(bytes: Array(repeating: 7, count: 16))!, isFirst: true)
            XCTAssertEqual(FileNames.meaning(of: name, in: .notebook), .row(title: title), "seed 0x5eed, title \(title.debugDescription)")
        }
    }

    func testJunkAndLocalOnlyNames() {
        for junk in [".x.md.swp", "x.swx", "x.md~", "4913", "5036", "#x.md#", ".#x.md", "._x.md", ".DS_Store", ".goutputstream-AB",
                     "x.md___jb_tmp___", "x.md___jb_old___", "x.png___jb_bak___", "workspace.json.tmp", "Plan.md.tmp", "XXALtBW0", "XX0a9Zzz", "ziu1TLDu", "sedAbc123", "tmp00042", "tmpk2j_x9qa",
                     "d2utmpujfUiM", "u2dtmp0aB9cd"] {
            XCTAssertEqual(FileNames.meaning(of: junk, in: .notebook), .junk, junk)
        }
        XCTAssertEqual(FileNames.meaning(of: "todo.txt", in: .notebook), .row(title: "todo.txt", kind: .file))
        // mkstemp's names with no digit or capital are files that wait (`ProvisionalFiles`): words fit them, and must sync.
        for name in ["sedentary", "XXabcdef", "zillions", "tmp_notes", "tmpfiles", "tmpqzxkvwjb", "d2utmpabcdef"] {
            XCTAssertEqual(FileNames.meaning(of: name, in: .notebook), .row(title: name, kind: .file), name)
            XCTAssertEqual(FileNames.tempName(name), .always, name)
        }
        XCTAssertEqual(FileNames.meaning(of: "XXL.md", in: .notebook), .row(title: "XXL"))
        XCTAssertEqual(FileNames.meaning(of: "zillions", in: .notebook), .row(title: "zillions", kind: .file))
        XCTAssertEqual(FileNames.meaning(of: "x___jb_tmp___.md", in: .notebook), .row(title: "x___jb_tmp___"))
        for name in ["data.tmp", "x..tmp", "a.b.tmp.md"] where name.hasSuffix(".tmp") {
            XCTAssertEqual(FileNames.meaning(of: name, in: .notebook), .row(title: name, kind: .file), name)
        }
        XCTAssertEqual(FileNames.meaning(of: "a.b.tmp.md", in: .notebook), .row(title: "a.b.tmp"))
        XCTAssertEqual(FileNames.meaning(of: "2024-02-30.md", in: .saga), .localOnly)
        XCTAssertEqual(FileNames.meaning(of: "2024-02-29.md", in: .saga), .row(title: "2024-02-29"))
        XCTAssertEqual(FileNames.meaning(of: "4914", in: .settings), .localOnly)
    }

    func testLongTitlesAreCutAndMarked() {
        let key = RowKey(bytes: Array(0..<16))!
        let name = FileNames.name(stem: FileNames.escape(String(repeating: "é", count: 300)), namespace: .notebook, key: key, isFirst: true)
        XCTAssertLessThanOrEqual(name.utf8.count, 255)
        XCTAssertTrue(name.hasSuffix("%~00010203.md"), name)
        let escapes = FileNames.name(stem: String(repeating: "%2F", count: 120), namespace: .notebook, key: key, isFirst: true)
        XCTAssertTrue(escapes.hasSuffix("%2F%~00010203.md"), "never cut inside an escape: \(escapes)")
    }

    func testDuplicateTitlesGetDeterministicMarkers() {
        let keys = [RowKey(bytes: Array(repeating: 9, count: 16))!, RowKey(bytes: Array(repeating: 1, count: 16))!]
        func summary(_ key: RowKey, _ title: String) -> RowSummary {
            RowSummary(row: Row.single(.notebook, key, dot: Dot(actor: Actor(device: key, incarnation: 1), counter: 1), context: VersionVector(),
                                content: .note(Note(title: title, body: [], createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1)))),
                       seq: 1)
        }
        var listing = NamespaceListing(namespace: .notebook, summaries: [summary(keys[0], "Same")])
        XCTAssertEqual(listing.name(of: keys[0])?.text, "Same.md")
        let changes = listing.apply(summary(keys[1], "Same"))
        XCTAssertEqual(listing.name(of: keys[1])?.text, "Same.md", "the smallest key keeps the plain name")
        XCTAssertEqual(listing.name(of: keys[0])?.text, "Same%~09090909.md")
        XCTAssertEqual(Set(changes.map(\.key)), Set(keys))
        _ = listing.remove(keys[1])
        XCTAssertEqual(listing.name(of: keys[0])?.text, "Same.md")
        XCTAssertEqual(listing.count(in: nil), 1)
    }
}
