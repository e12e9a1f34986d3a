/// One version of a prose body (a notebook note's body, a journal day) as
/// the paragraph merge sees it.
///
/// Equality is byte equality of `text` (not Swift's Unicode-equivalence
/// `String ==`): two devices have converged only when their bytes agree,
/// because the bytes are what a leaf hashes.
public struct ProseVersion: Hashable, Sendable {
    /// The body.
    public var text: String
    /// Paragraph tombstones: identities of paragraphs deliberately deleted or
    /// deliberately rewritten. They sync with the row, only grow, and win
    /// over every copy of the paragraph on every device.
    public var deletedParagraphs: Set<ParagraphHash>

    public init(text: String, deletedParagraphs: Set<ParagraphHash> = []) {
        self.text = text
        self.deletedParagraphs = deletedParagraphs
    }

    /// The paragraphs of `text`, in order.
    public var paragraphs: [String] { Paragraphs.split(text) }

    /// This version as any merge would write it: canonical text, tombstoned
    /// paragraphs removed, and every copy of a paragraph spelled like its
    /// byte-greatest copy. `merge(v, v) == v.normalized()`.
    public func normalized() -> ProseVersion {
        ProseMerge.merge(self, self)
    }

    public static func == (lhs: ProseVersion, rhs: ProseVersion) -> Bool {
        lhs.text.utf8.elementsEqual(rhs.text.utf8) && lhs.deletedParagraphs == rhs.deletedParagraphs
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(text.utf8))
        hasher.combine(deletedParagraphs)
    }
}
