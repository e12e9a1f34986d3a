/// One version of a prose body (a notebook note's body, a journal day) as
/// the paragraph merge sees it.
///
/// Equality is byte equality of `text` (not Swift's Unicode-equivalence
/// `String ==`): two devices have converged only when their bytes agree,
/// because the bytes are what a leaf hashes.
public struct ProseVersion: Hashable, Sendable {
    /// The body.
    public var text: String
    /// Paragraph tombstones: markers of paragraphs deliberately deleted or
    /// rewritten, and typed again since (`ParagraphTombstones` ranks them).
    /// They sync with the row, join by union at a merge, and win over every
    /// copy of the paragraph that never saw them, on every device.
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
        sameBytes(lhs.text, rhs.text) && lhs.deletedParagraphs == rhs.deletedParagraphs
    }

    private static func sameBytes(_ x: String, _ y: String) -> Bool {
        guard x.utf8.count == y.utf8.count else { return false }
        var x = x
        var y = y
        return x.withUTF8 { a in
            y.withUTF8 { b in
                let (a, b) = (UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b))
                // Eight bytes at a time: this runs on every sync comparison.
                var i = 0
                while i + 8 <= a.count {
                    if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                        return false
                    }
                    i += 8
                }
                while i < a.count {
                    if a[i] != b[i] { return false }
                    i += 1
                }
                return true
            }
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(text.utf8))
        hasher.combine(deletedParagraphs)
    }
}
