import Foundation
import QuireCore
import QuireStore
@testable import QuireFS
import QuireTestSupport
import XCTest

/// The name rule of the mount (mount/README.md, "Names"): one form, NFC.
///
/// Swift compares `String`s by canonical equivalence, so `XCTAssertEqual`
/// on two strings cannot tell NFC from NFD: these tests compare bytes.
final class NameFormTests: XCTestCase {
    let nfc = "Caf\u{E9}"          // é precomposed
    let nfd = "Cafe\u{301}"        // e + combining acute

    func bytes(_ text: String?) -> [UInt8]? { text.map { Array($0.utf8) } }

    func title(_ meaning: FileNames.Meaning) -> [UInt8]? {
        if case .row(let title, _) = meaning { return Array(title.utf8) }
        return nil
    }

    func testBothFormsAreOneNameStoredInNFC() {
        XCTAssertNotEqual(bytes(nfc), bytes(nfd), "the fixture spells one text two ways")
        XCTAssertEqual(CanonicalName(nfd), CanonicalName(nfc))
        XCTAssertEqual(CanonicalName(nfd).hashValue, CanonicalName(nfc).hashValue)
        XCTAssertEqual(CanonicalName(nfd).bytes, bytes(nfc))
        XCTAssertEqual(Set([CanonicalName(nfc), CanonicalName(nfd)]).count, 1)
        XCTAssertTrue(CanonicalName.isCanonical(nfc))
        XCTAssertFalse(CanonicalName.isCanonical(nfd))
        XCTAssertTrue(CanonicalName.same(nfc + ".md", nfd + ".md"))
        // Hangul: conjoining jamo compose to the syllable.
        XCTAssertEqual(CanonicalName("\u{1112}\u{1161}\u{11AB}").bytes, bytes("\u{D55C}"))
        // Marks in another order are the same name (canonical reordering).
        XCTAssertEqual(CanonicalName("a\u{323}\u{302}"), CanonicalName("a\u{302}\u{323}"))
    }

    func testOnlyCanonicalEquivalenceCounts() {
        // Compatibility forms, case and look-alikes stay different names.
        XCTAssertNotEqual(CanonicalName("\u{FB01}le"), CanonicalName("file"))        // ﬁ ligature
        XCTAssertNotEqual(CanonicalName("\u{FF21}"), CanonicalName("A"))             // full-width A
        XCTAssertNotEqual(CanonicalName("caf\u{E9}"), CanonicalName("CAF\u{C9}"))
        XCTAssertNotEqual(CanonicalName("\u{3A9}"), CanonicalName("O"))
        // A singleton decomposition is canonical: Ohm sign is Omega.
        XCTAssertEqual(CanonicalName("\u{2126}").bytes, bytes("\u{3A9}"))
    }

    /// The fast path (every scalar below U+0300 is left as it is) must agree
    /// with Foundation's normalizer, alone and next to anything.
    func testFastPathAgreesWithTheNormalizer() {
        let low = (0x20..<0x300).compactMap(Unicode.Scalar.init).map { String($0) }
        for text in low {
            XCTAssertEqual(bytes(text.precomposedStringWithCanonicalMapping), bytes(text), text.debugDescription)
        }
        var generator = SplitMix64(seed: 0xface)
        let alphabet = Array(low.prefix(200)) + ["\u{301}", "\u{308}", "\u{327}", "\u{338}", "\u{1100}", "\u{1161}", "\u{11A8}", "\u{E9}", "\u{212B}", "\u{F900}", "\u{958}"]
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...8, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            XCTAssertEqual(CanonicalName(text).bytes, bytes(text.precomposedStringWithCanonicalMapping), text.debugDescription)
        }
    }

    func testAnyFormOfARowNameDecodesToTheNFCTitle() {
        XCTAssertEqual(title(FileNames.meaning(of: nfd + ".md", in: .notebook)), bytes(nfc))
        XCTAssertEqual(title(FileNames.meaning(of: nfc + ".md", in: .notebook)), bytes(nfc))
        XCTAssertEqual(title(FileNames.meaning(of: "Zoe\u{308}.vcf", in: .contacts)), bytes("Zo\u{EB}"))
        // `%3C` is no escape escaping writes: the name is its own title, and
        // what a mark composes with is the typed `C`, as NFC says.
        XCTAssertEqual(title(FileNames.meaning(of: "%3C\u{338}.md", in: .notebook)), bytes("%3C\u{338}".precomposedStringWithCanonicalMapping))
        XCTAssertEqual(title(FileNames.meaning(of: "%2E%CC%81x.md", in: .notebook)), bytes(".\u{301}x"))
        // Junk stays junk in every form.
        XCTAssertEqual(FileNames.meaning(of: "." + nfd + ".md.swp", in: .notebook), .junk)
    }

    /// Every name the mount makes is NFC and decodes back to the NFC title,
    /// typed in NFC or NFD, including titles whose marks follow an escape.
    func testSeededTitlesWithMarksMakeNFCNamesThatRoundTrip() {
        var generator = SplitMix64(seed: 0x0e301)
        let alphabet = ["a", "e", "C", "F", "E", "2", "/", "%", ".", "<", "~", " ", "\u{301}", "\u{308}", "\u{327}",
                        "\u{338}", "\u{323}", "\u{E9}", "\u{1100}", "\u{1161}", "\u{11A8}", "\u{958}", "\u{212B}", "漢", "\u{0}", "\t"]
        let key = RowKey(bytes: Array(repeating: 7, count: 16))!
        for _ in 0..<3_000 {
            let raw = (0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            let context = "seed 0x0e301, title \(raw.unicodeScalars.map { String($0.value, radix: 16) })"
            let stem = FileNames.stem(namespace: .notebook, title: raw, updatedAt: Timestamp(seconds: 0))
            let name = FileNames.name(stem: stem, namespace: .notebook, key: key, isFirst: true)
            XCTAssertTrue(CanonicalName.isCanonical(name), context)
            let expected = CanonicalName(raw).bytes
            XCTAssertEqual(title(FileNames.meaning(of: name, in: .notebook)), expected, context)
            XCTAssertEqual(title(FileNames.meaning(of: name.decomposedStringWithCanonicalMapping, in: .notebook)), expected, context)
        }
    }

    func testACutNameNeverEndsInsideAnEscapedCharacter() {
        let key = RowKey(bytes: Array(0..<16))!
        for prefix in ["", "a", "ab"] {
            let stem = FileNames.escape(prefix + String(repeating: "/\u{301}", count: 80))
            XCTAssertTrue(stem.hasPrefix(prefix + "%2F%CC%81"), stem)
            let name = FileNames.name(stem: stem, namespace: .notebook, key: key, isFirst: true)
            XCTAssertLessThanOrEqual(name.utf8.count, 255)
            XCTAssertTrue(name.hasSuffix("%~00010203.md"), name)
            guard case .row(let cut, _) = FileNames.meaning(of: name, in: .notebook) else { return XCTFail(name) }
            XCTAssertFalse(cut.unicodeScalars.contains("\u{FFFD}"), "cut inside an escaped mark: \(name)")
            XCTAssertTrue(cut.unicodeScalars.elementsEqual((prefix + String(repeating: "/\u{301}", count: 80)).unicodeScalars.prefix(cut.unicodeScalars.count)))
        }
    }

    func summary(_ key: RowKey, _ title: String, namespace: Namespace = .notebook) -> RowSummary {
        let content: RowContent
        switch namespace {
        case .settings: content = .setting(Setting(name: title, value: "v", updatedAt: Timestamp(seconds: 1)))
        default: content = .note(Note(title: title, body: [], createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1)))
        }
        return RowSummary(row: Row.single(namespace, key, dot: Dot(actor: Actor(device: key, incarnation: 1), counter: 1),
                                          context: VersionVector(), content: content), seq: 1)
    }

    /// A row whose stored title is NFD (`quire put`, a sibling, an older
    /// build) is listed once, under the NFC name, and found by both forms.
    func testARowWithAnNFDTitleIsListedOnceInNFCAndFoundByBothForms() {
        let key = RowKey(bytes: Array(repeating: 3, count: 16))!
        var listing = NamespaceListing(namespace: .notebook, summaries: [summary(key, nfd)])
        XCTAssertEqual(listing.sortedNames(in: nil).map(\.bytes), [bytes(nfc + ".md")!])
        XCTAssertEqual(listing.name(of: key)?.bytes, bytes(nfc + ".md"))
        XCTAssertEqual(listing.row(named: nfc + ".md")?.key, key)
        XCTAssertEqual(listing.row(named: nfd + ".md")?.key, key)
        XCTAssertEqual(listing.keys(titled: nfc), [key])
        XCTAssertEqual(listing.keys(titled: nfd), [key])
        XCTAssertEqual(bytes(listing.rows[key]?.title), bytes(nfd), "the stored title is left as it is")

        // Retitled elsewhere to the NFC form only: the name did not change.
        XCTAssertEqual(listing.apply(summary(key, nfc)), [])
        XCTAssertEqual(listing.name(of: key)?.bytes, bytes(nfc + ".md"))
    }

    /// Two rows whose titles differ only in form are two files that must
    /// not look alike: one keeps the plain name, the other gets its marker.
    func testTwoRowsWhoseTitlesDifferOnlyInFormAreMarked() {
        let small = RowKey(bytes: Array(repeating: 1, count: 16))!, large = RowKey(bytes: Array(repeating: 9, count: 16))!
        var listing = NamespaceListing(namespace: .notebook, summaries: [summary(large, nfc)])
        _ = listing.apply(summary(small, nfd))
        XCTAssertEqual(listing.name(of: small)?.bytes, bytes(nfc + ".md"), "the smallest key keeps the plain name")
        XCTAssertEqual(listing.name(of: large)?.bytes, bytes(nfc + "%~09090909.md"))
        XCTAssertEqual(listing.sortedNames(in: nil).count, 2)
        XCTAssertEqual(Set(listing.keys(titled: nfd)), [small, large])
        _ = listing.remove(small)
        XCTAssertEqual(listing.name(of: large)?.bytes, bytes(nfc + ".md"))
    }

    func testSettingsNamedInEitherFormShareAName() {
        let key = Setting.key(for: "th\u{E8}me")   // written through the mount: NFC
        var listing = NamespaceListing(namespace: .settings, summaries: [summary(key, "the\u{300}me", namespace: .settings)])
        XCTAssertEqual(listing.row(named: "th\u{E8}me.txt")?.key, key)
        XCTAssertEqual(listing.sortedNames(in: nil).map(\.bytes), [bytes("th\u{E8}me.txt")!])
    }

    /// A name with a key marker no row has (a copy of a folder holding
    /// twins, `cp -r` or `rsync` of `W.md` and `W%~df4d7e73.md`) names no
    /// file: created (beside the title's note, with a mark that sorts
    /// after its key), it is a new note of that title, never the title's
    /// existing note written over.
    func testANameWithAnUnknownKeyMarkerNeverWritesOverTheTitlesNote() throws {
        let mount = try DirectMount { try $0.putNote("y", "yy\n") }
        XCTAssertFalse(mount.exists("notebook/y%~fffffffe.md"))
        try mount.writeFile("notebook/y%~fffffffe.md", "new\n")
        XCTAssertEqual(try mount.text("notebook/y.md").map { $0.hasPrefix("yy") || $0.hasPrefix("new") }, true)
        let texts = try mount.store.summaries(.notebook).filter { $0.name == "y" }
            .map { String(decoding: try XCTUnwrap(mount.store.row(.notebook, $0.key)?.content.flatMap(RowFormat.render)), as: UTF8.self) }
        XCTAssertEqual(Set(texts), ["yy\n", "new\n"], "two notes titled y")
    }
}
