import QuireCrypto

/// A note in the notebook. `body` is nil while the body is offloaded to a
/// holder; `contentHash` always names the body's content, resident or not.
public struct Note: Equatable, Sendable {
    public var title: String
    /// A set: kept sorted and unique so one tag list has one encoding.
    public var tags: [String] { didSet { tags = Note.canonicalTags(tags) } }
    /// Setting a body restamps `contentHash`, so a resident note's hash
    /// always names its bytes (the store and the leaf rely on it). Only a
    /// pointer (nil body) has a hash set by hand.
    public var body: [UInt8]? {
        didSet { if let body, body != oldValue { contentHash = Note.bodyDigest(body) } }
    }
    public var contentHash: [UInt8]
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// Paragraph tombstones: hashes of paragraphs deliberately deleted.
    public var deletedParagraphs: [[UInt8]]
    public var editedBy: DeviceID?
    /// The body's length when the body is not here (offloaded): a per-device
    /// convenience for listings, derived from content, never hashed.
    public var length: Int?

    public init(title: String, tags: [String] = [], body: [UInt8], createdAt: Timestamp, updatedAt: Timestamp,
                deletedParagraphs: [[UInt8]] = [], editedBy: DeviceID? = nil) {
        self.title = title
        self.tags = Note.canonicalTags(tags)
        self.body = body
        self.contentHash = Note.bodyDigest(body)
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedParagraphs = Array(Set(deletedParagraphs)).sorted { $0.lexicographicallyPrecedes($1) }
        self.editedBy = editedBy
    }

    /// A note whose hash was already checked against its body (decoding).
    init(title: String, tags: [String], body: [UInt8]?, checkedHash: [UInt8], createdAt: Timestamp, updatedAt: Timestamp,
         deletedParagraphs: [[UInt8]], editedBy: DeviceID?) {
        self.title = title
        self.tags = Note.canonicalTags(tags)
        self.body = body
        self.contentHash = checkedHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedParagraphs = Array(Set(deletedParagraphs)).sorted { $0.lexicographicallyPrecedes($1) }
        self.editedBy = editedBy
    }

    /// SHA-256 of a body under its own separator: the value an offloaded
    /// pointer is stamped with, so resident and offloaded leaves agree.
    public static func bodyDigest(_ body: [UInt8]) -> [UInt8] {
        SHA256.hash(separator: "quire.notebook.body", body)
    }

    /// Equality of content; `length` is a derived convenience and ignored.
    public static func == (a: Note, b: Note) -> Bool {
        a.title == b.title && a.tags == b.tags && a.body == b.body && a.contentHash == b.contentHash
            && a.createdAt == b.createdAt && a.updatedAt == b.updatedAt && a.deletedParagraphs == b.deletedParagraphs
            && a.editedBy == b.editedBy
    }

    public static func canonicalTags(_ tags: [String]) -> [String] {
        Array(Set(tags.filter { !$0.isEmpty })).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }
}

/// One journal entry per day. Its row key is derived from the date, so two
/// devices writing the same day meet on one row and merge.
public struct SagaEntry: Equatable, Sendable {
    public var date: String            // YYYY-MM-DD
    public var text: [UInt8]
    public var updatedAt: Timestamp
    public var deletedParagraphs: [[UInt8]]
    public var editedBy: DeviceID?

    public init(date: String, text: [UInt8], updatedAt: Timestamp, deletedParagraphs: [[UInt8]] = [], editedBy: DeviceID? = nil) {
        self.date = date
        self.text = text
        self.updatedAt = updatedAt
        self.deletedParagraphs = Array(Set(deletedParagraphs)).sorted { $0.lexicographicallyPrecedes($1) }
        self.editedBy = editedBy
    }

    public static func key(for date: String) -> RowKey { .derived(separator: "quire.saga.key", name: date) }

    /// A valid day: YYYY-MM-DD with a real month and day.
    public static func isValidDate(_ s: String) -> Bool {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard s.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]) else { return false }
        guard (1...12).contains(m), y >= 1 else { return false }
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
        return (1...days).contains(d)
    }
}

public struct Plan: Equatable, Sendable {
    public var title: String
    public var notes: String
    public var due: Timestamp?
    public var isDone: Bool
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var editedBy: DeviceID?

    public init(title: String, notes: String = "", due: Timestamp? = nil, isDone: Bool = false,
                createdAt: Timestamp, updatedAt: Timestamp, editedBy: DeviceID? = nil) {
        self.title = title; self.notes = notes; self.due = due; self.isDone = isDone
        self.createdAt = createdAt; self.updatedAt = updatedAt; self.editedBy = editedBy
    }
}

public struct Contact: Equatable, Sendable {
    public var name: String
    public var emails: [String]
    public var phones: [String]
    public var note: String?
    public var updatedAt: Timestamp
    public var editedBy: DeviceID?

    public init(name: String, emails: [String] = [], phones: [String] = [], note: String? = nil,
                updatedAt: Timestamp, editedBy: DeviceID? = nil) {
        self.name = name; self.emails = emails; self.phones = phones; self.note = note
        self.updatedAt = updatedAt; self.editedBy = editedBy
    }
}

/// One key of the synced settings dictionary. Its row key is derived from
/// the name; a removed key is a tombstone like any row.
public struct Setting: Equatable, Sendable {
    public var name: String
    public var value: String
    public var updatedAt: Timestamp
    public var editedBy: DeviceID?

    public init(name: String, value: String, updatedAt: Timestamp, editedBy: DeviceID? = nil) {
        self.name = name; self.value = value; self.updatedAt = updatedAt; self.editedBy = editedBy
    }

    public static func key(for name: String) -> RowKey { .derived(separator: "quire.settings.key", name: name) }
}

/// An append-only memory event. Never edited; a deletion is a new event
/// whose `buries` names the events it hides.
public struct MemoryEvent: Equatable, Sendable {
    public var at: Timestamp
    public var kind: String
    public var text: String
    public var buries: [RowKey]

    public init(at: Timestamp, kind: String, text: String, buries: [RowKey] = []) {
        self.at = at; self.kind = kind; self.text = text; self.buries = buries.sorted()
    }
}

/// A roster entry: an account-signed device certificate (opaque here; the
/// sync layer verifies it) and, once revoked, the signed revocation.
public struct DeviceRecord: Equatable, Sendable {
    public var name: String
    public var certificate: [UInt8]
    public var revocation: [UInt8]?

    public init(name: String, certificate: [UInt8], revocation: [UInt8]? = nil) {
        self.name = name; self.certificate = certificate; self.revocation = revocation
    }
}

/// The synced content of a live row.
public enum RowContent: Equatable, Sendable {
    case note(Note)
    case plan(Plan)
    case contact(Contact)
    case saga(SagaEntry)
    case setting(Setting)
    case memory(MemoryEvent)
    case device(DeviceRecord)

    public var namespace: Namespace {
        switch self {
        case .note: return .notebook
        case .plan: return .plans
        case .contact: return .contacts
        case .saga: return .saga
        case .setting: return .settings
        case .memory: return .memory
        case .device: return .devices
        }
    }

    /// What a person calls this row: a note's title, a day, a name.
    public var displayName: String {
        switch self {
        case .note(let n): return n.title
        case .plan(let p): return p.title
        case .contact(let c): return c.name
        case .saga(let s): return s.date
        case .setting(let s): return s.name
        case .memory(let m): return m.kind
        case .device(let d): return d.name
        }
    }

    public var updatedAt: Timestamp? {
        switch self {
        case .note(let n): return n.updatedAt
        case .plan(let p): return p.updatedAt
        case .contact(let c): return c.updatedAt
        case .saga(let s): return s.updatedAt
        case .setting(let s): return s.updatedAt
        case .memory(let m): return m.at
        case .device: return nil
        }
    }

    public var editedBy: DeviceID? {
        switch self {
        case .note(let n): return n.editedBy
        case .plan(let p): return p.editedBy
        case .contact(let c): return c.editedBy
        case .saga(let s): return s.editedBy
        case .setting(let s): return s.editedBy
        case .memory, .device: return nil
        }
    }
}

/// A row as the sync layer and the store see it.
public struct Row: Equatable, Sendable {
    public var namespace: Namespace
    public var key: RowKey
    public var version: RowVersion
    /// nil exactly when the row is a tombstone.
    public var content: RowContent?

    public init(namespace: Namespace, key: RowKey, version: RowVersion, content: RowContent?) {
        precondition(version.isTombstone == (content == nil), "a tombstone carries no content")
        precondition(content == nil || content!.namespace == namespace, "content of another namespace")
        self.namespace = namespace
        self.key = key
        self.version = version
        self.content = content
    }

    public static func tombstone(_ namespace: Namespace, _ key: RowKey, vector: VersionVector) -> Row {
        Row(namespace: namespace, key: key, version: RowVersion(vector: vector, isTombstone: true), content: nil)
    }

    public var isTombstone: Bool { version.isTombstone }
}
