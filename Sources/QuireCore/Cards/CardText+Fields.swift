/// Reading and setting single properties of a card: what `quire put`,
/// `quire ls` and the fields a row shows in words need. A set is an edit
/// (`edited(to:)`): every line it does not touch keeps its bytes and its
/// identity.
extension CardText {
    /// The lines of property `name` directly inside the first component
    /// at `path` (["VCARD"], ["VCALENDAR", "VTODO"]).
    public func properties(_ name: String, in path: [String]) -> [ContentLines.Line] {
        var out: [ContentLines.Line] = []
        var inside = false
        for (unit, place) in zip(units, places) {
            if place.path == path {
                inside = true
                if place.name == name, let line = ContentLines.parse(ContentLines.unfolded(unit.bytes)) { out.append(line) }
            } else if inside && place.name == "END" && place.path == Array(path.dropLast()) {
                break
            }
        }
        return out
    }

    /// The first value of `name` in the component at `path`, unescaped.
    public func text(_ name: String, in path: [String]) -> String? {
        properties(name, in: path).first.map { ContentLines.unescape($0.value) }
    }

    /// This text with every `name` line of the first component at `path`
    /// replaced by `lines` (whole content lines, `NAME;params:value`), at
    /// the place of the first one, or before the component's END.
    public func setting(_ name: String, in path: [String], to lines: [String]) -> CardText {
        var out: [[UInt8]] = []
        var inserted = false
        var inside = false
        var done = false
        // In the text's own line ends (an LF file stays LF).
        let end = ContentLines.lineEnd(of: units.map(\.bytes))
        let newUnits = lines.map { ContentLines.unit($0, end: end) }
        for (unit, place) in zip(units, places) {
            if !done && place.path == path {
                inside = true
                if place.name == name {
                    if !inserted { out += newUnits; inserted = true }
                    continue
                }
            } else if !done && inside && place.name == "END" && place.path == Array(path.dropLast()) {
                if !inserted { out += newUnits; inserted = true }
                done = true
            }
            out.append(unit.bytes)
        }
        if !inserted { out += newUnits }
        return edited(to: out.flatMap { $0 })
    }
}
