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
public enum Paragraphs {
    /// The paragraphs of `text`, in order, duplicates included.
    public static func split(_ text: String) -> [String] {
        var paragraphs: [String] = []
        var current: [String] = []
        for line in lines(text) {
            if isBlank(line) {
                if !current.isEmpty { paragraphs.append(current.joined(separator: "\n")) }
                current.removeAll()
            } else {
                current.append(line)
            }
        }
        if !current.isEmpty { paragraphs.append(current.joined(separator: "\n")) }
        return paragraphs
    }

    /// The canonical text of `paragraphs` (see the type's comment).
    public static func join(_ paragraphs: [String]) -> String {
        paragraphs.isEmpty ? "" : paragraphs.joined(separator: "\n\n") + "\n"
    }

    /// `join(split(text))`: the form every merge result is written in.
    public static func canonical(_ text: String) -> String {
        join(split(text))
    }

    /// The identity of one paragraph (see `ParagraphHash`).
    public static func paragraphHash(_ paragraph: String) -> ParagraphHash {
        ParagraphHash(paragraph: paragraph)
    }

    /// What `ParagraphHash` digests: "\n" line breaks, each line's trailing
    /// `White_Space` removed. Nothing else changes.
    public static func normalizedForHashing(_ paragraph: String) -> String {
        lines(paragraph).map { line in
            var scalars = line.unicodeScalars
            while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
            return String(scalars)
        }.joined(separator: "\n")
    }

    // MARK: - Internals shared by the merge

    /// Lines of `text` with "\n", "\r\n" and "\r" all read as one break.
    static func lines(_ text: String) -> [String] {
        var result: [String] = []
        var current = String.UnicodeScalarView()
        var afterCarriageReturn = false
        for scalar in text.unicodeScalars {
            if scalar == "\n" && afterCarriageReturn {
                // Second half of "\r\n": the break was already taken at "\r".
                afterCarriageReturn = false
                continue
            }
            afterCarriageReturn = scalar == "\r"
            if scalar == "\n" || scalar == "\r" {
                result.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(scalar)
            }
        }
        result.append(String(current))
        return result
    }

    static func isBlank(_ line: String) -> Bool {
        line.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
    }

    /// Paragraphs with their identities and bytes, as the merge needs them.
    static func parse(_ text: String) -> [ParsedParagraph] {
        split(text).map(ParsedParagraph.init(text:))
    }
}

/// One paragraph with what the merge compares: its identity, and its exact
/// UTF-8 bytes (Swift's `String ==` treats canonically equivalent Unicode
/// as equal; convergence needs byte equality).
struct ParsedParagraph: Sendable {
    let text: String
    let hash: ParagraphHash
    let bytes: [UInt8]

    init(text: String) {
        self.text = text
        self.hash = ParagraphHash(paragraph: text)
        self.bytes = Array(text.utf8)
    }
}
