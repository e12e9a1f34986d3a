import QuireCrypto

/// A contact: a whole vCard (RFC 6350 4.0, or 3.0 as a tool wrote it),
/// every property and parameter kept as written (`CardText`), so address
/// books that read a folder of `.vcf` files (khard, vdirsyncer) get back
/// exactly what they wrote, `X-` properties and photos included.
///
/// `title` is the file's name stem: a vdir's file name is an opaque handle
/// the client chose (khard names files by UID), so it is kept apart from
/// the person's name (FN), which is read from the card.
public struct Contact: Equatable, Sendable {
    public var title: String
    public var card: CardText
    public var updatedAt: Timestamp
    public var editedBy: DeviceID?

    public init(title: String, card: CardText, updatedAt: Timestamp, editedBy: DeviceID? = nil) {
        self.title = title; self.card = card; self.updatedAt = updatedAt; self.editedBy = editedBy
    }

    /// A new vCard 4.0 contact named `name` (also its file's title).
    public init(name: String, emails: [String] = [], phones: [String] = [], note: String? = nil, uid: String? = nil,
                updatedAt: Timestamp, editedBy: DeviceID? = nil) {
        var lines = ["BEGIN:VCARD", "VERSION:4.0"]
        if let uid { lines.append("UID:" + uid) }
        lines.append("FN:" + ContentLines.escape(name))
        lines += emails.map { "EMAIL:" + ContentLines.escape($0) }
        lines += phones.map { "TEL:" + ContentLines.escape($0) }
        if let note { lines.append("NOTE:" + ContentLines.escape(note)) }
        lines.append("END:VCARD")
        self.init(title: name, card: CardText(fresh: lines.flatMap { ContentLines.unit($0) }), updatedAt: updatedAt, editedBy: editedBy)
    }

    public static let path = ["VCARD"]

    /// Properties a card holds once (RFC 6350 cardinality *1 and 1, and
    /// FN, which tools read as one): concurrent versions show the last
    /// writer's.
    public static let rules = CardRules { path, name in
        if path.isEmpty { return name == "BEGIN" || name == "END" }
        return path == Contact.path && singleProperties.contains(name)
    }

    static let singleProperties: Set<String> = [
        "VERSION", "N", "FN", "BDAY", "ANNIVERSARY", "GENDER", "UID", "PRODID", "REV", "KIND",
        "NAME", "PROFILE", "SORT-STRING", "CLASS",
    ]

    /// The person's name: FN, else the parts of N, else the file's title.
    public var name: String {
        if let fn = card.text("FN", in: Self.path), !fn.isEmpty { return fn }
        if let n = card.properties("N", in: Self.path).first {
            let parts = ContentLines.splitUnescaped(n.value, on: ";")
            func part(_ i: Int) -> String { i < parts.count ? parts[i] : "" }
            let ordered = [part(3), part(1), part(2), part(0), part(4)].filter { !$0.isEmpty }
            if !ordered.isEmpty { return ordered.joined(separator: " ") }
        }
        return title
    }

    public var uid: String? { card.properties("UID", in: Self.path).first?.value }

    public var emails: [String] {
        get { card.properties("EMAIL", in: Self.path).map { ContentLines.unescape($0.value) } }
        set { card = card.setting("EMAIL", in: Self.path, to: newValue.map { "EMAIL:" + ContentLines.escape($0) }) }
    }

    public var phones: [String] {
        get { card.properties("TEL", in: Self.path).map { ContentLines.unescape($0.value) } }
        set { card = card.setting("TEL", in: Self.path, to: newValue.map { "TEL:" + ContentLines.escape($0) }) }
    }

    public var note: String? {
        get { card.text("NOTE", in: Self.path) }
        set { card = card.setting("NOTE", in: Self.path, to: newValue.map { ["NOTE:" + ContentLines.escape($0)] } ?? []) }
    }

    /// The file's bytes.
    public var bytes: [UInt8] { card.bytes }

    public static func == (a: Contact, b: Contact) -> Bool {
        a.title.sameBytes(b.title) && a.card == b.card && a.updatedAt == b.updatedAt && a.editedBy == b.editedBy
    }

    /// A contact stored before contacts kept whole cards (name, emails,
    /// phones, note): the card the old mount showed, the same on every
    /// device, so an upgraded fleet agrees without a sync.
    public static func legacy(name: String, emails: [String], phones: [String], note: String?, updatedAt: Timestamp,
                              editedBy: DeviceID?) -> Contact {
        Contact(name: name, emails: emails, phones: phones, note: note, updatedAt: updatedAt, editedBy: editedBy)
    }
}
