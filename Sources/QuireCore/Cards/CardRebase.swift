/// A card written whole by a program that read it a while ago (khard and
/// todoman read the file, the user edits it in `$EDITOR`, they write it
/// back) put onto the card as it is now: the lines the program changed
/// from what it was shown apply to the current text, and the lines it left
/// as shown take the current text's. A change that synced in meanwhile
/// (another device's new phone number) is not undone by a write that never
/// saw it, as a paragraph that lands under an editor is not deleted by its
/// save (`ProseMerge.applyEdit`).
///
/// Lines are compared by their unfolded text (`CardText.matchKey`), a
/// component inside an item (an alarm) as one (`CardText.mergeUnits`). A line
/// the program removed or changed is removed from the current text if it
/// is still there; a line it added or changed goes after the nearest line
/// before it in its own text that the current text holds (so it stays in
/// its component). For a property a component holds once (a todo's
/// SUMMARY, a card's N), the program's line replaces the current one: both
/// changed it, and the program writes last. Anything else both sides hold
/// stays, an extra line rather than a lost one.
public enum CardRebase {
    public static func rebase(_ mine: [UInt8], shown base: [UInt8], onto theirs: [UInt8], rules: CardRules) -> [UInt8] {
        if base == theirs || mine == theirs { return mine }
        let mineUnits = CardText.mergeUnits(of: mine)
        let mineKeys = mineUnits.map(CardText.matchKey)
        // What the program removed (and changed): base lines beyond their count in its text.
        var removed: [String: Int] = [:]
        for unit in CardText.mergeUnits(of: base) { removed[CardText.matchKey(unit), default: 0] += 1 }
        var added = [Bool](repeating: false, count: mineUnits.count)
        for (index, key) in mineKeys.enumerated() {
            if let left = removed[key], left > 0 { removed[key] = left - 1 } else { added[index] = true }
        }
        // The current text's lines, each unfolded once (a PHOTO line can be
        // large, and every kept line of the program's text is looked up).
        var result: [(bytes: [UInt8], key: String)] = []
        for unit in CardText.mergeUnits(of: theirs) {
            let key = CardText.matchKey(unit)
            if let left = removed[key], left > 0 {
                removed[key] = left - 1
                continue
            }
            result.append((unit, key))
        }
        // A line the program added that the current text already holds
        // (both sides made the same change: SEQUENCE:2 from SEQUENCE:1) is
        // that line, not a second copy of it.
        var holds: [String: Int] = [:]
        for line in result { holds[line.key, default: 0] += 1 }
        for (index, key) in mineKeys.enumerated() where !added[index] { holds[key, default: 0] -= 1 }
        for (index, key) in mineKeys.enumerated() where added[index] {
            if let left = holds[key], left > 0 { holds[key] = left - 1; added[index] = false }
        }
        // A single property the program wrote anew replaces the current one.
        let minePlaces = CardText.places(ofUnits: mineUnits)
        var replaced = Set<String>()
        for (index, place) in minePlaces.enumerated() where added[index] && rules.isSingle(place.path, place.name) {
            replaced.insert((place.path + [place.name]).joined(separator: "/"))
        }
        if !replaced.isEmpty {
            let mineLines = Set(mineKeys)
            let places = CardText.places(ofUnits: result.map(\.bytes))
            result = zip(result, places).filter { line, place in
                !replaced.contains((place.path + [place.name]).joined(separator: "/")) || mineLines.contains(line.key)
            }.map(\.0)
        }
        // The program's new lines, each after its nearest kept neighbour.
        var properties: [String?] = Array(repeating: nil, count: result.count)
        func property(_ index: Int) -> String {
            if let known = properties[index] { return known }
            let name = CardText.propertyKey(result[index].bytes)
            properties[index] = name
            return name
        }
        var cursor = -1
        for (index, unit) in mineUnits.enumerated() {
            if !added[index] {
                // The line itself, or what the current text changed it to
                // (a line of the same property after the cursor).
                let key = mineKeys[index]
                if let found = result.indices.dropFirst(cursor + 1).first(where: { result[$0].key == key })
                    ?? result.indices.first(where: { result[$0].key == key }) {
                    cursor = found
                } else {
                    let name = CardText.propertyKey(unit)
                    if let found = result.indices.dropFirst(cursor + 1).first(where: { property($0) == name }) { cursor = found }
                }
                continue
            }
            result.insert((unit, mineKeys[index]), at: cursor + 1)
            properties.insert(nil, at: cursor + 1)
            cursor += 1
        }
        var lines = result.map(\.bytes)
        // Every line but the last ends its line (one that ended a text may sit inside now).
        let end = ContentLines.lineEnd(of: lines)
        for index in lines.indices.dropLast() where lines[index].last != UInt8(ascii: "\n") { lines[index] += end }
        return lines.flatMap { $0 }
    }
}
