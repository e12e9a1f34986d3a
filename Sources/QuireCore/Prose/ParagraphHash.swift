import QuireCrypto

/// The identity of one paragraph: SHA-256, under the separator
/// `quire.prose.paragraph`, of the paragraph's normalized UTF-8 bytes.
///
/// Normalized form (see `Paragraphs.normalizedForHashing`): line breaks are
/// "\n" ("\r\n" and lone "\r" become "\n") and each line loses its trailing
/// whitespace. Trailing spaces are invisible in every editor and some editors
/// strip them on save; if they changed the identity, a save with no visible
/// change would read as "deleted one paragraph, wrote another", and the
/// tombstone would kill the other devices' copy. Leading whitespace
/// (indentation) and everything inside a line are kept: they are visible.
///
/// All 32 bytes are kept: tombstones are forever (until a barrier collects
/// the row), so a collision would silently delete a paragraph. Stored as
/// four big-endian words so that sets of identities hash and compare fast.
public struct ParagraphHash: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public static let separator = "quire.prose.paragraph"

    private var words: (UInt64, UInt64, UInt64, UInt64)

    /// Wraps digest bytes read from a row; nil unless exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == ParagraphHash.byteCount else { return nil }
        words = bytes.withUnsafeBytes { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }
    }

    /// Hashes one paragraph's text (normalized first, so callers may pass a
    /// paragraph exactly as it appears in a body).
    public init(paragraph: String) {
        self.init(normalizedBytes: Paragraphs.normalizedBytes(Array(paragraph.utf8)))
    }

    init(normalizedBytes: [UInt8]) {
        let digest = SHA256.hash(separator: ParagraphHash.separator, normalizedBytes)
        self.init(bytes: digest)!  // SHA-256 is always 32 bytes
    }

    /// The 32 digest bytes, as they travel in a row's `deletedParagraphs`.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(ParagraphHash.byteCount)
        for word in [words.0, words.1, words.2, words.3] {
            withUnsafeBytes(of: word.bigEndian) { out.append(contentsOf: $0) }
        }
        return out
    }

    public static func == (lhs: ParagraphHash, rhs: ParagraphHash) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1
            && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

    /// The identity with its last four bytes XORed with `k` (`ParagraphTombstones`' ranks).
    func flippingLastWord(_ k: UInt32) -> ParagraphHash {
        var copy = self
        copy.words.3 ^= UInt64(k)
        return copy
    }

    /// All but the last four bytes, and those four (`ParagraphTombstones` groups by the first).
    var rankKey: (prefix: RankPrefix, last: UInt32) {
        (RankPrefix(a: words.0, b: words.1, c: words.2, d: UInt32(truncatingIfNeeded: words.3 >> 32)), UInt32(truncatingIfNeeded: words.3))
    }

    struct RankPrefix: Hashable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt32
    }

    /// Byte order, so that tombstone sets serialize in one canonical order.
    public static func < (lhs: ParagraphHash, rhs: ParagraphHash) -> Bool {
        if lhs.words.0 != rhs.words.0 { return lhs.words.0 < rhs.words.0 }
        if lhs.words.1 != rhs.words.1 { return lhs.words.1 < rhs.words.1 }
        if lhs.words.2 != rhs.words.2 { return lhs.words.2 < rhs.words.2 }
        return lhs.words.3 < rhs.words.3
    }

    public var description: String {
        let digits: [Character] = Array("0123456789abcdef")
        return String(bytes.prefix(6).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }
}
