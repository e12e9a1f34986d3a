import QuireCrypto

/// A plan: an iCalendar file (RFC 5545) holding one VTODO, every property
/// kept as written (`CardText`), so todo tools that read a folder of
/// `.ics` files (todoman, khal) get back exactly what they wrote: SUMMARY,
/// DESCRIPTION, DUE, STATUS, COMPLETED, PRIORITY, CATEGORIES, RRULE, VALARMs
/// and anything else.
///
/// `title` is the file's name stem, which the client chose (todoman names
/// files by UID); the plan's words are its SUMMARY.
public struct Plan: Equatable, Sendable {
    public var title: String
    public var calendar: CardText
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var editedBy: DeviceID?

    public init(title: String, calendar: CardText, createdAt: Timestamp, updatedAt: Timestamp, editedBy: DeviceID? = nil) {
        self.title = title; self.calendar = calendar; self.createdAt = createdAt; self.updatedAt = updatedAt
        self.editedBy = editedBy
    }

    /// A new plan whose SUMMARY is `title`. `uid`: nil derives one from the
    /// plan's fields (deterministic: the upgrade of a stored plan makes the
    /// same UID on every device); a new plan should pass a fresh one.
    public init(title: String, notes: String = "", due: Timestamp? = nil, isDone: Bool = false,
                createdAt: Timestamp, updatedAt: Timestamp, editedBy: DeviceID? = nil, uid: String? = nil) {
        let derived = {
            var h = SHA256()
            h.updateSeparator("quire.plan.uid")
            h.update(Array(title.utf8) + [0] + Array(notes.utf8) + [0] + Array(String(createdAt.seconds).utf8))
            return Hex.encode(Array(h.finalize().prefix(16)))
        }
        var lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Quire//Quire plans//EN", "BEGIN:VTODO",
                     "UID:" + (uid ?? derived()), "DTSTAMP:" + CardDates.formatDateTime(createdAt.seconds),
                     "SUMMARY:" + ContentLines.escape(title)]
        if !notes.isEmpty { lines.append("DESCRIPTION:" + ContentLines.escape(notes)) }
        if let due { lines.append(Self.dueLine(due)) }
        lines.append(isDone ? "STATUS:COMPLETED" : "STATUS:NEEDS-ACTION")
        if isDone { lines.append("COMPLETED:" + CardDates.formatDateTime(updatedAt.seconds)) }
        lines += ["END:VTODO", "END:VCALENDAR"]
        self.init(title: title, calendar: CardText(fresh: lines.flatMap { ContentLines.unit($0) }), createdAt: createdAt,
                  updatedAt: updatedAt, editedBy: editedBy)
    }

    public static let path = ["VCALENDAR", "VTODO"]

    /// Properties a component holds once (RFC 5545 §3.6.2 "MUST NOT occur
    /// more than once", and RRULE, which "SHOULD NOT"): concurrent versions
    /// show the last writer's.
    public static let rules = CardRules { path, name in
        if path.isEmpty { return name == "BEGIN" || name == "END" }
        if path == ["VCALENDAR"] { return ["VERSION", "PRODID", "CALSCALE", "METHOD"].contains(name) }
        return path.count == 2 && singleProperties.contains(name)
    }

    static let singleProperties: Set<String> = [
        "DTSTAMP", "UID", "CLASS", "COMPLETED", "CREATED", "DESCRIPTION", "DTSTART", "GEO", "LAST-MODIFIED",
        "LOCATION", "ORGANIZER", "PERCENT-COMPLETE", "PRIORITY", "RECURRENCE-ID", "SEQUENCE", "STATUS", "SUMMARY",
        "URL", "RRULE", "DUE", "DURATION", "DTEND", "TRANSP",
    ]

    /// The plan's words: SUMMARY, else the file's title.
    public var summary: String {
        get { calendar.text("SUMMARY", in: Self.path).flatMap { $0.isEmpty ? nil : $0 } ?? title }
        set { calendar = calendar.setting("SUMMARY", in: Self.path, to: ["SUMMARY:" + ContentLines.escape(newValue)]) }
    }

    public var uid: String? { calendar.properties("UID", in: Self.path).first?.value }

    /// DESCRIPTION ("" when there is none).
    public var notes: String {
        get { calendar.text("DESCRIPTION", in: Self.path) ?? "" }
        set {
            calendar = calendar.setting("DESCRIPTION", in: Self.path,
                                        to: newValue.isEmpty ? [] : ["DESCRIPTION:" + ContentLines.escape(newValue)])
        }
    }

    /// DUE, read in UTC (see `CardDates`).
    public var due: Timestamp? {
        get { calendar.properties("DUE", in: Self.path).first.flatMap { CardDates.parse($0.value) }.map(Timestamp.init) }
        set { calendar = calendar.setting("DUE", in: Self.path, to: newValue.map { [Self.dueLine($0)] } ?? []) }
    }

    /// STATUS:COMPLETED (or a COMPLETED time without a STATUS). Setting it
    /// writes STATUS, and COMPLETED at `updatedAt`, as todoman does.
    public var isDone: Bool {
        get {
            if let status = calendar.text("STATUS", in: Self.path) { return status.uppercased() == "COMPLETED" }
            return !calendar.properties("COMPLETED", in: Self.path).isEmpty
        }
        set {
            guard newValue != isDone else { return }
            calendar = calendar.setting("STATUS", in: Self.path, to: [newValue ? "STATUS:COMPLETED" : "STATUS:NEEDS-ACTION"])
            calendar = calendar.setting("COMPLETED", in: Self.path,
                                        to: newValue ? ["COMPLETED:" + CardDates.formatDateTime(updatedAt.seconds)] : [])
            if !newValue { calendar = calendar.setting("PERCENT-COMPLETE", in: Self.path, to: []) }
        }
    }

    /// PRIORITY 1 (highest) to 9; nil for none (0 or absent).
    public var priority: Int? {
        get { calendar.text("PRIORITY", in: Self.path).flatMap { Int($0) }.flatMap { $0 == 0 ? nil : $0 } }
        set { calendar = calendar.setting("PRIORITY", in: Self.path, to: newValue.map { ["PRIORITY:\($0)"] } ?? []) }
    }

    /// CATEGORIES, every line's list in order.
    public var categories: [String] {
        get { calendar.properties("CATEGORIES", in: Self.path).flatMap { ContentLines.splitUnescaped($0.value, on: ",") } }
        set {
            calendar = calendar.setting("CATEGORIES", in: Self.path,
                                        to: newValue.isEmpty ? [] : ["CATEGORIES:" + newValue.map(ContentLines.escape).joined(separator: ",")])
        }
    }

    public var recurrence: String? { calendar.properties("RRULE", in: Self.path).first?.value }

    /// The file's bytes.
    public var bytes: [UInt8] { calendar.bytes }

    static func dueLine(_ due: Timestamp) -> String {
        CardDates.isMidnight(due.seconds) ? "DUE;VALUE=DATE:" + CardDates.formatDate(due.seconds)
            : "DUE:" + CardDates.formatDateTime(due.seconds)
    }

    public static func == (a: Plan, b: Plan) -> Bool {
        a.title.sameBytes(b.title) && a.calendar == b.calendar && a.createdAt == b.createdAt && a.updatedAt == b.updatedAt
            && a.editedBy == b.editedBy
    }
}
