import QuireCrypto

/// One property line of a card as stored: its exact bytes and an identity
/// that survives edits which leave the property alone.
public struct CardUnit: Equatable, Sendable {
    /// 16 bytes, derived (never random) so every device that makes the same
    /// edit of the same text makes the same ids.
    public var id: [UInt8]
    /// The property this one took the place of (the first of the chain: a
    /// TEL changed twice still names the TEL it started from); nil: a
    /// property added, not changed. Two concurrent changes of one property
    /// meet on it.
    public var slot: [UInt8]?
    public var bytes: [UInt8]

    public init(id: [UInt8], slot: [UInt8]?, bytes: [UInt8]) {
        self.id = id; self.slot = slot; self.bytes = bytes
    }

    /// The property this unit is a version of: its slot, or itself.
    var slotKey: [UInt8] { slot ?? id }
}

/// Which properties a card may hold once per component, so that two
/// concurrent versions of one (two birthdays, two REVs) show as the last
/// writer's instead of as an invalid card.
public struct CardRules: Sendable {
    let isSingle: @Sendable (_ path: [String], _ name: String) -> Bool

    public init(isSingle: @escaping @Sendable (_ path: [String], _ name: String) -> Bool) { self.isSingle = isSingle }
}

/// A vCard or an iCalendar file as a replica keeps it: its property lines
/// (`mergeUnits`: lines, and components inside an item whole) in order,
/// each with an identity, and the identities of the lines this version
/// deliberately removed or replaced.
///
/// Why lines with identities. A contact edited on two devices at once must
/// keep both edits when they touch different properties (one device
/// changes the phone, the other adds an address), and a whole-card last
/// writer would drop one. Each head of the row keeps its own text; the
/// view (`merged`) is the union of every head's lines minus every line a
/// head removed: a line another head never saw being removed stays. Like
/// the paragraph union of notes, the removals are kept with the text, so a
/// removal still wins over a copy of the old line that arrives later.
///
/// Two versions of one property (both devices changed the phone, or both
/// set the birthday) resolve to the last writer's line; the other stays in
/// its head (`quire get --json`) until an edit that saw both replaces them.
///
/// Bytes are kept exactly: concatenating the units gives the file back,
/// so a card nobody changed comes back byte for byte. A line whose bytes
/// change but whose unfolded text does not (refolded, LF for CRLF) keeps
/// its identity: that is not an edit of the property.
public struct CardText: Equatable, Sendable {
    public private(set) var units: [CardUnit]
    /// Sorted and unique, so one set has one encoding.
    public private(set) var removed: [[UInt8]]

    public init(units: [CardUnit], removed: [[UInt8]]) {
        self.units = units
        self.removed = Array(Set(removed)).sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// A first version of a text: every line new.
    public init(fresh bytes: [UInt8]) {
        self = CardText(units: [], removed: []).edited(to: bytes)
    }

    public var bytes: [UInt8] { units.flatMap(\.bytes) }

    /// The text `newBytes`, written by someone who was shown this one.
    /// Lines whose unfolded text is unchanged keep their identity; the
    /// rest are new, and each new line of a property name takes the slot
    /// of the next removed line of that name (a change, not an add).
    public func edited(to newBytes: [UInt8]) -> CardText {
        let newUnits = Self.mergeUnits(of: newBytes)
        var available: [String: [Int]] = [:]
        for (index, unit) in units.enumerated() { available[Self.matchKey(unit.bytes), default: []].append(index) }
        var matched = [Int?](repeating: nil, count: newUnits.count)
        var used = Set<Int>()
        for (index, unit) in newUnits.enumerated() {
            let key = Self.matchKey(unit)
            if var queue = available[key], !queue.isEmpty {
                matched[index] = queue.removeFirst()
                available[key] = queue
                used.insert(matched[index]!)
            }
        }
        var leftByName: [String: [Int]] = [:]
        var newlyRemoved: [[UInt8]] = []
        for index in units.indices where !used.contains(index) {
            leftByName[Self.propertyKey(units[index].bytes), default: []].append(index)
            newlyRemoved.append(units[index].id)
        }
        let seed = digest
        var out: [CardUnit] = []
        for (index, bytes) in newUnits.enumerated() {
            if let old = matched[index] {
                out.append(CardUnit(id: units[old].id, slot: units[old].slot, bytes: bytes))
                continue
            }
            var slot: [UInt8]?
            let name = Self.propertyKey(bytes)
            if var queue = leftByName[name], !queue.isEmpty {
                slot = units[queue.removeFirst()].slotKey
                leftByName[name] = queue
            }
            var hasher = SHA256()
            hasher.updateSeparator("quire.card.unit")
            hasher.update(seed)
            hasher.update(Array(String(index).utf8) + [0])
            hasher.update(bytes)
            out.append(CardUnit(id: Array(hasher.finalize().prefix(16)), slot: slot, bytes: bytes))
        }
        return CardText(units: out, removed: removed + newlyRemoved)
    }

    /// What a reader is shown of several concurrent versions, `texts` in
    /// ascending priority (the last writer last). A pure function of its
    /// input, so every device shows the same card.
    public static func merged(_ texts: [CardText], rules: CardRules) -> CardText {
        guard let winner = texts.last else { return CardText(units: [], removed: []) }
        if texts.count == 1 { return winner }
        var removedSet = Set(texts.flatMap(\.removed))
        var newest: [[UInt8]: CardUnit] = [:]   // by id, the highest-priority copy
        var owner: [[UInt8]: Int] = [:]         // by id, the highest text holding it
        var members: [Set<[UInt8]>] = []
        for (t, text) in texts.enumerated() {
            for unit in text.units { newest[unit.id] = unit; owner[unit.id] = t }
            members.append(Set(text.units.map(\.id)))
        }
        // Conflicts: visible lines that are versions of one property, or of a
        // property a component holds once. The highest text holding any of
        // them decides; the others are hidden (kept in their heads).
        var groups: [[UInt8]: Set<[UInt8]>] = [:]
        for (t, text) in texts.enumerated() {
            for (unit, place) in zip(text.units, placesOf(text)) where !removedSet.contains(unit.id) && owner[unit.id] == t {
                groups[[0] + unit.slotKey, default: []].insert(unit.id)
                if rules.isSingle(place.path, place.name) {
                    groups[[1] + Array((place.path + [place.name]).joined(separator: "/").utf8), default: []].insert(unit.id)
                }
            }
        }
        var hidden = Set<[UInt8]>()
        for (_, ids) in groups where ids.count > 1 {
            let top = ids.map { owner[$0]! }.max()!
            for id in ids where !members[top].contains(id) { hidden.insert(id) }
        }
        removedSet.formUnion(hidden)
        // Order: the last writer's lines, then each other line after the
        // nearest line before it in its own text that is already placed.
        var order: [[UInt8]] = []
        var placed = Set<[UInt8]>()
        for text in texts.reversed() {
            var after: [UInt8]?
            for unit in text.units {
                defer { if placed.contains(unit.id) { after = unit.id } }
                guard !removedSet.contains(unit.id), !placed.contains(unit.id) else { continue }
                let position = after.flatMap { a in order.firstIndex(of: a).map { $0 + 1 } } ?? 0
                order.insert(unit.id, at: position)
                placed.insert(unit.id)
            }
        }
        return CardText(units: order.map { newest[$0]! }, removed: Array(removedSet))
    }

    /// The components whose properties merge one by one: the card, the
    /// calendar and its items. Any other component (a to-do's VALARM, a
    /// VTIMEZONE and its STANDARD and DAYLIGHT parts) is one unit.
    static let componentsMergedByLine: Set<String> = ["VCARD", "VCALENDAR", "VTODO", "VEVENT", "VJOURNAL"]

    /// The units a text merges by: one per logical line
    /// (`ContentLines.units`), except that a component inside an item is
    /// one unit from its BEGIN to its END. Its lines mean something only
    /// together: two alarms added at once are two alarms (line by line,
    /// their identical BEGIN lines were one, and the result had one BEGIN
    /// and two ENDs), and an alarm one device changed while another
    /// deleted it comes back whole, not as a TRIGGER on its own.
    public static func mergeUnits(of bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var block: [UInt8] = []
        var depth = 0
        for unit in ContentLines.units(of: bytes) {
            let line = ContentLines.parse(ContentLines.unfolded(unit))
            if depth > 0 {
                block += unit
                if line?.name == "BEGIN" { depth += 1 } else if line?.name == "END" { depth -= 1 }
                if depth == 0 { out.append(block); block = [] }
            } else if let line, line.name == "BEGIN", !componentsMergedByLine.contains(line.value.uppercased()) {
                block = unit
                depth = 1
            } else {
                out.append(unit)
            }
        }
        // A component never closed (a text no check passed): kept as it is.
        if !block.isEmpty { out.append(block) }
        return out
    }

    /// The logical lines of a unit, unfolded: one, or a component's. Only a
    /// unit that starts with BEGIN can be a component: any other (a PHOTO
    /// line of megabytes) is unfolded once, not cut into lines first.
    static func logicalLines(_ unit: [UInt8]) -> [String] {
        guard let first = unit.first, first | 0x20 == UInt8(ascii: "b") else { return [ContentLines.unfolded(unit)] }
        let lines = ContentLines.units(of: unit)
        return lines.count <= 1 ? [ContentLines.unfolded(unit)] : lines.map(ContentLines.unfolded)
    }

    /// Where each unit sits: the components open around it and its name.
    /// BEGIN and END sit in the component around the one they delimit; a
    /// component that is one unit sits, as its BEGIN, where it is.
    static func placesOf(_ text: CardText) -> [(path: [String], name: String)] { places(ofUnits: text.units.map(\.bytes)) }

    /// `placesOf` for the units of a text as bytes.
    static func places(ofUnits units: [[UInt8]]) -> [(path: [String], name: String)] {
        var stack: [String] = []
        var out: [(path: [String], name: String)] = []
        for unit in units {
            let lines = logicalLines(unit)
            guard let line = ContentLines.parse(lines[0]) else { out.append((stack, "")); continue }
            if lines.count > 1 && line.name == "BEGIN" { out.append((stack, "BEGIN")); continue }
            switch line.name {
            case "BEGIN":
                out.append((stack, "BEGIN"))
                stack.append(line.value.uppercased())
            case "END":
                if !stack.isEmpty { stack.removeLast() }
                out.append((stack, "END"))
            default:
                out.append((stack, line.name))
            }
        }
        return out
    }

    /// The places of this text's units (for readers of its fields).
    public var places: [(path: [String], name: String)] { Self.placesOf(self) }

    /// A digest of the whole state (ids, slots, bytes, removals): the seed
    /// of new ids, so a line written again after it was removed gets a new
    /// identity rather than the removed one.
    var digest: [UInt8] {
        var hasher = SHA256()
        hasher.updateSeparator("quire.card.state")
        for unit in units {
            hasher.update(unit.id)
            hasher.update(unit.slot.map { [1] + $0 } ?? [0])
            hasher.update(SHA256.hash(unit.bytes))
        }
        hasher.update([0xFF])
        for id in removed { hasher.update(id) }
        return hasher.finalize()
    }

    /// Lines match when their unfolded text does (a component's, line by line).
    static func matchKey(_ unit: [UInt8]) -> String { logicalLines(unit).joined(separator: "\n") }

    /// A property's name with its group: what a changed line pairs on. A
    /// component pairs on its kind (`BEGIN:VALARM`).
    static func propertyKey(_ unit: [UInt8]) -> String {
        guard let line = ContentLines.parse(logicalLines(unit)[0]) else { return "" }
        if line.name == "BEGIN" || line.name == "END" { return line.name + ":" + line.value.uppercased() }
        return (line.group.map { $0.uppercased() + "." } ?? "") + line.name
    }
}
