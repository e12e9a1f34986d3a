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
/// the row), so a collision would silently delete a paragraph.
public struct ParagraphHash: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public static let separator = "quire.prose.paragraph"

    /// The 32 digest bytes, as they travel in a row's `deletedParagraphs`.
    public let bytes: [UInt8]

    /// Wraps digest bytes read from a row; nil unless exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == ParagraphHash.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Hashes one paragraph's text (normalized first, so callers may pass a
    /// paragraph exactly as it appears in a body).
    public init(paragraph: String) {
        let normalized = Paragraphs.normalizedForHashing(paragraph)
        self.bytes = SHA256.hash(separator: ParagraphHash.separator, Array(normalized.utf8))
    }

    /// Byte order, so that tombstone sets serialize in one canonical order.
    public static func < (lhs: ParagraphHash, rhs: ParagraphHash) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    public var description: String {
        let digits: [Character] = Array("0123456789abcdef")
        return String(bytes.prefix(6).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }
}
