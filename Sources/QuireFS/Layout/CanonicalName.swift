import Foundation

/// A name in the one form the mount stores, lists and compares: Unicode
/// NFC (canonical composition). This type owns the rule; see "Names" in
/// mount/README.md.
///
/// Linux names are bytes, and one text can be spelled by several byte
/// strings: `café` precomposed (NFC, what Linux tools, keyboards and the
/// web produce) or as `e` + U+0301 (NFD, what macOS clients over a network
/// share, some sync tools and Python round trips produce). The mount
/// treats canonically equivalent names as one name:
///
/// - a lookup, create, rename, unlink or xattr call by any form reaches the
///   same file, and creating a form whose twin exists opens the twin;
/// - what the mount lists, and what it stores (titles of rows made or
///   renamed here, scratch file names), is the NFC form;
/// - a row whose title is not NFC (written by `quire put`, a sibling or an
///   older build) keeps its title as stored, is listed once under the NFC
///   form of its name, and is reached by every form.
///
/// Equality and hashing compare the NFC bytes. Nothing that decides "same
/// file" compares Swift `String`s with `==` (canonical equivalence by the
/// standard library's own Unicode tables, which need not match the
/// normalizer's) or raw bytes: it compares `CanonicalName`s. Only canonical
/// equivalence counts: compatibility forms (`ﬁ` and `fi`, full-width
/// letters) and letter case stay different names, as on Linux.
struct CanonicalName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The name in NFC.
    let text: String

    init(_ name: some StringProtocol) {
        text = Self.normalize(String(name))
    }

    /// The NFC form of `text`: the one normalization function of the mount.
    static func normalize(_ text: String) -> String {
        // Below U+0300 every scalar is a starter that composes with nothing
        // before it and is its own NFC: such a text is NFC already (ASCII
        // and Latin-1 names, most names, skip Foundation).
        if text.unicodeScalars.allSatisfy({ $0.value < 0x300 }) { return text }
        return text.precomposedStringWithCanonicalMapping
    }

    /// Whether `name` is in the stored form byte for byte.
    static func isCanonical(_ name: String) -> Bool {
        normalize(name).utf8.elementsEqual(name.utf8)
    }

    /// Whether two names (or titles) are the same name under the rule.
    static func same(_ a: String, _ b: String) -> Bool { CanonicalName(a) == CanonicalName(b) }

    var bytes: [UInt8] { Array(text.utf8) }
    var description: String { text }

    /// Appends `suffix` (ASCII, such as `~` or `.rejected`) to a canonical name.
    func appending(_ suffix: String) -> CanonicalName {
        CanonicalName(text + suffix)
    }

    static func == (a: CanonicalName, b: CanonicalName) -> Bool {
        a.text.utf8.elementsEqual(b.text.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Byte order of the NFC forms (readdir order).
    static func < (a: CanonicalName, b: CanonicalName) -> Bool {
        a.text.utf8.lexicographicallyPrecedes(b.text.utf8)
    }
}
