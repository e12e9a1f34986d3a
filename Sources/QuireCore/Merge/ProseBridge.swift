/// Joins two concurrent bodies without losing either side's text. Bodies
/// are bytes: prose that is valid UTF-8 goes through the paragraph union
/// (`ProseMerge`); anything else is kept whole from both sides.
enum ProseBridge {
    static func mergeBodies(_ a: [UInt8], _ b: [UInt8], deleted: [[UInt8]]) -> [UInt8] {
        if a == b { return a }
        if let ta = String(validating: a, as: UTF8.self), let tb = String(validating: b, as: UTF8.self) {
            let tombstones = Set(deleted.compactMap { ParagraphHash(bytes: $0) })
            let merged = ProseMerge.merge(ProseVersion(text: ta, deletedParagraphs: tombstones),
                                          ProseVersion(text: tb, deletedParagraphs: tombstones))
            return Array(merged.text.utf8)
        }
        // Binary bodies: an empty side never erases; containment keeps the
        // larger; otherwise both, in byte order, so every device agrees.
        if a.isEmpty { return b }
        if b.isEmpty { return a }
        if contains(a, b) { return a }
        if contains(b, a) { return b }
        let (first, second) = a.lexicographicallyPrecedes(b) ? (a, b) : (b, a)
        return first + Array("\n\n".utf8) + second
    }

    private static func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= hay.count else { return false }
        if needle.isEmpty { return true }
        var i = 0
        while i + needle.count <= hay.count {
            if hay[i] == needle[0] && hay[i..<i + needle.count].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}
