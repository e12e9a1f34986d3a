/// Joins two concurrent bodies without losing either side's text. Bodies
/// are bytes; prose that is valid UTF-8 goes through the paragraph union,
/// anything else is kept whole from both sides in a canonical order.
enum ProseBridge {
    static func mergeBodies(_ a: [UInt8], _ b: [UInt8], deleted: [[UInt8]]) -> [UInt8] {
        if a == b { return a }
        if a.isEmpty { return b }
        if b.isEmpty { return a }
        // Interim rule until the paragraph union lands: both texts, in byte
        // order, separated by a blank line; containment keeps the larger.
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
