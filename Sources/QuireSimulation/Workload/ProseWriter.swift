import QuireCore

/// Paragraphs a simulated person writes. Each one starts with a fresh token
/// ("p17"), so every paragraph ever written is unique and "present" is a
/// plain membership test.
struct ProseWriter {
    static let vocabulary = """
        the a river morning coffee rain we walked talked slept wrote letter mother garden bread \
        train late early quiet window book chapter friend dinner snow light city field long short \
        called laughed found lost kept old new blue small warm cold after before again never
        """.split(separator: " ").map(String.init)

    /// A paragraph of a few words; now and then a long one (20 to 80 KB),
    /// so rows travel in chunks and responses fill their byte budget.
    static func paragraph(token: String, random: SeededRandom, long: Bool = false) -> String {
        let words = (long || random.chance(0.03)) ? random.int(3_000...12_000) : random.int(2...6)
        return ([token] + (0..<words).map { _ in random.pick(vocabulary) }).joined(separator: " ")
    }

    /// The edit as made: on an empty text every edit is an append.
    static func effective(_ edit: ProseEdit, on shown: [String]) -> ProseEdit {
        shown.isEmpty && edit != .appendLong ? .append : edit
    }

    /// Applies `edit` to what the editor shows. Returns the new paragraphs
    /// and the ones the person removed (a rewrite removes the old one).
    static func apply(_ edit: ProseEdit, to shown: [String], random: SeededRandom, fresh: () -> String)
        -> (paragraphs: [String], removed: [String]) {
        var paragraphs = shown
        switch effective(edit, on: shown) {
        case .append:
            paragraphs.append(paragraph(token: fresh(), random: random))
            return (paragraphs, [])
        case .appendLong:
            paragraphs.append(paragraph(token: fresh(), random: random, long: true))
            return (paragraphs, [])
        case .insert:
            paragraphs.insert(paragraph(token: fresh(), random: random), at: random.int(0...paragraphs.count))
            return (paragraphs, [])
        case .rewrite:
            let i = random.int(0..<paragraphs.count)
            let old = paragraphs[i]
            paragraphs[i] = paragraph(token: fresh(), random: random)
            return (paragraphs, [old])
        case .remove:
            let old = paragraphs.remove(at: random.int(0..<paragraphs.count))
            return (paragraphs, [old])
        }
    }

    static func text(_ paragraphs: [String]) -> [UInt8] { Array(Paragraphs.join(paragraphs).utf8) }

    static func paragraphs(of bytes: [UInt8]?) -> [String] {
        guard let bytes else { return [] }
        return Paragraphs.split(String(decoding: bytes, as: UTF8.self))
    }
}

/// The single value a write put in a row, and its prose: how the model and
/// the checks read content (never versions: those are `RowObservation`'s).
enum ContentValues {
    static func token(of content: RowContent?) -> String? {
        switch content {
        case .setting(let s)?: return s.value
        case .plan(let p)?: return p.notes
        case .contact(let c)?: return c.note
        case .note(let n)?: return n.title
        default: return nil
        }
    }

    static func prose(of content: RowContent?) -> [String]? {
        switch content {
        case .note(let n)?: return ProseWriter.paragraphs(of: n.body)
        case .saga(let s)?: return ProseWriter.paragraphs(of: s.text)
        default: return nil
        }
    }

    static func isProse(_ namespace: Namespace) -> Bool { namespace == .notebook || namespace == .saga }

    /// Whether the namespace carries a single value the checks can name.
    static func hasToken(_ namespace: Namespace) -> Bool {
        [.settings, .plans, .contacts, .notebook].contains(namespace)
    }
}
