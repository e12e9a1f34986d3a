import QuireCore

/// Contacts as vCard files (RFC 6350 4.0, and 3.0 as phones, Google and
/// khard write it), kept whole: every property, parameter and byte as
/// written (`Contact`, `CardText`). A card nobody changed comes back byte
/// for byte; one line changed changes one line.
///
/// What is added: a card without a UID gets one (tools such as khard find
/// cards by UID and skip one without), right after VERSION. An empty file
/// becomes a card with just a name (the file's title), as `touch` makes.
/// What is refused (close() fails with the reason, the row keeps what it
/// had): text that is not UTF-8 or not content lines, a file that is not
/// one BEGIN:VCARD ... END:VCARD, a vCard version other than 3.0 or 4.0,
/// and a card with no VERSION line: both versions require one, and
/// guessing which was meant would change how every other line is read.
enum VCard {
    static func parse(_ bytes: [UInt8], title: String, key: RowKey?, previous: Contact?) throws(FormatError) -> Contact {
        let zero = Timestamp(seconds: 0)
        var bytes = bytes
        if CardFile.isBlank(bytes) {
            bytes = Contact(name: title, uid: CardFile.uid(previous: previous?.uid, key: key), updatedAt: zero).bytes
        }
        let checked = try CardFile.check(bytes, outer: "VCARD", kind: "a vCard")
        var hasUID = false, hasVersion = false
        for place in checked.lines {
            guard let line = place.line, place.path == Contact.path else { continue }
            if line.name == "VERSION", line.value != "4.0", line.value != "3.0" {
                throw FormatError(.invalid, "is vCard version \(line.value); quire reads 4.0 and 3.0")
            }
            if line.name == "VERSION" { hasVersion = true }
            if line.name == "UID" { hasUID = true }
        }
        guard hasVersion else {
            throw FormatError(.invalid, "has no VERSION line; quire reads vCard 4.0 and 3.0 (add VERSION:4.0 or VERSION:3.0 after BEGIN:VCARD)")
        }
        if !hasUID {
            let uid = CardFile.uid(previous: previous?.uid, key: key)
            bytes = CardFile.inserting("UID:" + uid, into: checked) { path, line in path == Contact.path && line.name == "VERSION" }
        }
        let card = previous.map { $0.card.edited(to: bytes) } ?? CardText(fresh: bytes)
        return Contact(title: title, card: card, updatedAt: previous?.updatedAt ?? zero)
    }
}

/// Plans as iCalendar files (RFC 5545) holding a VTODO, the layout todoman
/// and khal read and write, kept whole as contacts are (`Plan`).
///
/// What is added: a VTODO without a UID gets one. An empty file becomes a
/// todo whose SUMMARY is the file's title. What is refused: what `CardFile`
/// refuses, and a calendar with no VTODO (an event belongs in a calendar,
/// not in plans).
enum ICalendar {
    static func parse(_ bytes: [UInt8], title: String, key: RowKey?, previous: Plan?) throws(FormatError) -> Plan {
        let zero = Timestamp(seconds: 0)
        var bytes = bytes
        if CardFile.isBlank(bytes) {
            bytes = Plan(title: title, createdAt: zero, updatedAt: zero, uid: CardFile.uid(previous: previous?.uid, key: key)).bytes
        }
        let checked = try CardFile.check(bytes, outer: "VCALENDAR", kind: "an iCalendar file")
        let todos = checked.lines.filter { $0.path == ["VCALENDAR"] && $0.line?.name == "BEGIN" && $0.line?.value.uppercased() == "VTODO" }
        guard !todos.isEmpty else {
            throw FormatError(.invalid, "holds no VTODO; plans/ keeps todos (an iCalendar file with BEGIN:VTODO ... END:VTODO)")
        }
        let hasUID = checked.lines.contains { $0.path == Plan.path && $0.line?.name == "UID" }
        if !hasUID {
            let uid = CardFile.uid(previous: previous?.uid, key: key)
            bytes = CardFile.inserting("UID:" + uid, into: checked) { path, line in
                path == ["VCALENDAR"] && line.name == "BEGIN" && line.value.uppercased() == "VTODO"
            }
        }
        let calendar = previous.map { $0.calendar.edited(to: bytes) } ?? CardText(fresh: bytes)
        return Plan(title: title, calendar: calendar, createdAt: previous?.createdAt ?? zero, updatedAt: previous?.updatedAt ?? zero)
    }
}
