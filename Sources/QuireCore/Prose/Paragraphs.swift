/// Splits a body into paragraphs and joins them back in one canonical form.
///
/// Definitions (every device must apply exactly these, or merges diverge):
/// - A **line break** is "\n", "\r\n" or a lone "\r". Windows and classic-Mac
///   line endings are read as "\n", so a file saved by a Windows editor is
///   the same prose, not a rewrite of every paragraph. Other Unicode
///   separators (U+2028, U+0085, form feed) are ordinary characters.
/// - A line is **blank** when every scalar in it is Unicode `White_Space`
///   (spaces, tabs, no-break space...), including the empty line.
/// - A **paragraph** is a maximal run of non-blank lines, joined by "\n".
///   Its text is kept exactly: indentation, inner single line breaks and
///   trailing spaces stay. One or more blank lines separate paragraphs;
///   blank lines before the first or after the last paragraph are dropped.
/// - The **canonical text** of a paragraph list is the paragraphs separated
///   by exactly one empty line ("\n\n"), ending with one "\n"; the canonical
///   text of no paragraphs is "". `split(join(ps)) == ps` for any list
///   `split` can produce, so `canonical(canonical(t)) == canonical(t)`.
///
/// The work is done on UTF-8 bytes: every break and the common whitespace
/// are ASCII, and slicing valid UTF-8 at an ASCII byte keeps it valid.
public enum Paragraphs {
    /// The paragraphs of `text`, in order, duplicates included.
    public static func split(_ text: String) -> [String] {
        parse(text).map(\.text)
    }

    /// The canonical text of `paragraphs` (see the type's comment).
    public static func join(_ paragraphs: [String]) -> String {
        paragraphs.isEmpty ? "" : paragraphs.joined(separator: "\n\n") + "\n"
    }

    /// `join(split(text))`: the form every merge result is written in.
    public static func canonical(_ text: String) -> String {
        join(split(text))
    }

    /// `first`'s paragraphs, then those of `second` that `first` lacks
    /// (by identity), in canonical form.
    public static func union(_ first: String, _ second: String) -> String {
        let kept = parse(first)
        let known = Set(kept.map(\.hash))
        return join(kept.map(\.text) + parse(second).filter { !known.contains($0.hash) }.map(\.text))
    }

    /// The identity of one paragraph (see `ParagraphHash`).
    public static func paragraphHash(_ paragraph: String) -> ParagraphHash {
        ParagraphHash(paragraph: paragraph)
    }

    /// The identities of every paragraph of `text`.
    public static func hashes(of text: String) -> Set<ParagraphHash> {
        Set(parse(text).map(\.hash))
    }

    /// What `ParagraphHash` digests: "\n" line breaks, each line's trailing
    /// `White_Space` removed. Nothing else changes.
    public static func normalizedForHashing(_ paragraph: String) -> String {
        String(decoding: normalizedBytes(Array(paragraph.utf8)), as: UTF8.self)
    }

    // MARK: - Internals shared by the merge

    /// Paragraphs with their identities and bytes, as the merge needs them.
    static func parse(_ text: String) -> [ParsedParagraph] {
        var paragraphs: [ParsedParagraph] = []
        forEachParagraph(Array(text.utf8)) { exact, normalized in
            paragraphs.append(ParsedParagraph(exact: exact, normalized: normalized))
        }
        return paragraphs
    }

    /// The normalized bytes of each paragraph of `text` (what its identity
    /// digests), in order, not digested: equal bytes are equal identities,
    /// so a comparison can digest only the paragraphs it keeps.
    static func normalizedParagraphs(_ text: String) -> [NormalizedParagraph] {
        var paragraphs: [NormalizedParagraph] = []
        forEachParagraph(Array(text.utf8)) { _, normalized in paragraphs.append(NormalizedParagraph(bytes: normalized)) }
        return paragraphs
    }

    /// Calls `body` with each paragraph's exact and normalized bytes, in order.
    private static func forEachParagraph(_ bytes: [UInt8], _ body: (_ exact: [UInt8], _ normalized: [UInt8]) -> Void) {
        var exact: [UInt8] = []
        var normalized: [UInt8] = []
        forEachLine(bytes) { line in
            if isBlank(line) {
                if !exact.isEmpty { body(exact, normalized) }
                exact.removeAll(keepingCapacity: true)
                normalized.removeAll(keepingCapacity: true)
                return
            }
            if !exact.isEmpty {
                exact.append(newline)
                normalized.append(newline)
            }
            exact.append(contentsOf: line)
            normalized.append(contentsOf: trimmingTrailingWhitespace(line))
        }
        if !exact.isEmpty { body(exact, normalized) }
    }

    /// `normalizedForHashing` on bytes.
    static func normalizedBytes(_ paragraph: [UInt8]) -> [UInt8] {
        var normalized: [UInt8] = []
        var first = true
        forEachLine(paragraph) { line in
            if !first { normalized.append(newline) }
            first = false
            normalized.append(contentsOf: trimmingTrailingWhitespace(line))
        }
        return normalized
    }

    private static let newline = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")

    /// Calls `body` with each line of `bytes`, breaks removed.
    private static func forEachLine(_ bytes: [UInt8], _ body: (ArraySlice<UInt8>) -> Void) {
        var breaks: [(start: Int, end: Int, next: Int)] = []
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                let byte = buffer[index]
                if byte == newline || byte == carriageReturn {
                    let isCRLF = byte == carriageReturn && index + 1 < buffer.count && buffer[index + 1] == newline
                    breaks.append((0, index, index + (isCRLF ? 2 : 1)))
                    index += isCRLF ? 2 : 1
                } else {
                    index += 1
                }
            }
        }
        var start = 0
        for lineBreak in breaks {
            body(bytes[start..<lineBreak.end])
            start = lineBreak.next
        }
        body(bytes[start..<bytes.count])
    }

    /// ASCII White_Space other than the two line breaks.
    private static func isASCIISpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0B || byte == 0x0C
    }

    private static func isBlank(_ line: ArraySlice<UInt8>) -> Bool {
        for byte in line where !isASCIISpace(byte) {
            guard byte >= 0x80 else { return false }
            // Rare: non-ASCII present, ask Unicode about every scalar.
            return String(decoding: line, as: UTF8.self).unicodeScalars.allSatisfy { $0.properties.isWhitespace }
        }
        return true
    }

    private static func trimmingTrailingWhitespace(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var end = line.endIndex
        while end > line.startIndex {
            let last = line[end - 1]
            if isASCIISpace(last) {
                end -= 1
            } else if last >= 0x80 {
                // Back up to the first byte of the last scalar (UTF-8
                // continuation bytes are 10xxxxxx) and ask Unicode.
                var scalarStart = end - 1
                while scalarStart > line.startIndex && line[scalarStart] & 0xC0 == 0x80 { scalarStart -= 1 }
                let scalar = String(decoding: line[scalarStart..<end], as: UTF8.self).unicodeScalars.first
                guard let scalar, scalar.properties.isWhitespace else { break }
                end = scalarStart
            } else {
                break
            }
        }
        return line[line.startIndex..<end]
    }
}

/// A paragraph's normalized bytes, hashed by Swift's hasher in one call
/// (an array of bytes hashes byte by byte).
struct NormalizedParagraph: Hashable {
    let bytes: [UInt8]

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    var identity: ParagraphHash { ParagraphHash(normalizedBytes: bytes) }
}

/// One paragraph with what the merge compares: its identity, and its exact
/// UTF-8 bytes (Swift's `String ==` treats canonically equivalent Unicode
/// as equal; convergence needs byte equality).
struct ParsedParagraph: Sendable {
    let text: String
    let hash: ParagraphHash
    let bytes: [UInt8]
    /// False when the exact bytes are the normalized ones; two copies of an
    /// identity can then differ only if one of them has this set.
    let hasTrailingWhitespace: Bool

    init(exact: [UInt8], normalized: [UInt8]) {
        self.text = String(decoding: exact, as: UTF8.self)
        self.hash = ParagraphHash(normalizedBytes: normalized)
        self.bytes = exact
        self.hasTrailingWhitespace = exact.count != normalized.count
    }
}
