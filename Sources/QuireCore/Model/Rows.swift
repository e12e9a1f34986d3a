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
        get { storedBody }
        set {
            if let newValue, newValue != storedBody { contentHash = Note.bodyDigest(newValue) }
            storedBody = newValue
        }
    }
    private var storedBody: [UInt8]?
    public var contentHash: [UInt8]
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// Paragraph tombstones: hashes of paragraphs deliberately deleted.
    public var deletedParagraphs: [[UInt8]]
    public var editedBy: DeviceID?
    /// The body's length when the body is not here (offloaded): a per-device
    /// convenience for listings, derived from content, never hashed.
    public var length: Int?
    /// Note, attachment or folder (see `NoteKind`).
    public var kind: NoteKind = .note
    /// The folder row this row is in; nil: the top of the notebook.
    public var folder: RowKey?
    /// The file's modification time in nanoseconds since 1970, when one
    /// was set (utimensat, a copy that keeps times); nil: `updatedAt`.
    public var modifiedAt: Int64?
    /// When the title, folder or kind last changed (a rename or a move);
    /// nil: never since it was made. Concurrent versions take their place
    /// from the one placed last, so a rename here is not undone by an edit
    /// made elsewhere at the same time.
    public var placedAt: Timestamp?

    public init(title: String, tags: [String] = [], body: [UInt8], createdAt: Timestamp, updatedAt: Timestamp,
                deletedParagraphs: [[UInt8]] = [], editedBy: DeviceID? = nil, kind: NoteKind = .note, folder: RowKey? = nil,
                modifiedAt: Int64? = nil) {
        self.kind = kind
        self.folder = folder
        self.modifiedAt = modifiedAt
        self.title = title
        self.tags = Note.canonicalTags(tags)
        self.storedBody = body
        self.contentHash = Note.bodyDigest(body)
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedParagraphs = ParagraphHashes.canonical(deletedParagraphs)
        self.editedBy = editedBy
    }

    /// A note whose hash was already checked against its body (decoding).
    init(title: String, tags: [String], body: [UInt8]?, checkedHash: [UInt8], createdAt: Timestamp, updatedAt: Timestamp,
         deletedParagraphs: [[UInt8]], editedBy: DeviceID?) {
        self.title = title
        self.tags = Note.canonicalTags(tags)
        self.storedBody = body
        self.contentHash = checkedHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedParagraphs = ParagraphHashes.canonical(deletedParagraphs)
        self.editedBy = editedBy
    }

    /// Puts back a body already checked against `contentHash` (a stored
    /// body read after its damage check): hashing it again would only
    /// repeat that check.
    mutating func restoreCheckedBody(_ body: [UInt8]) {
        storedBody = body
    }

    /// SHA-256 of a body under its own separator: the value an offloaded
    /// pointer is stamped with, so resident and offloaded leaves agree.
    public static func bodyDigest(_ body: [UInt8]) -> [UInt8] {
        SHA256.hash(separator: "quire.notebook.body", body)
    }

    /// Equality of content, byte for byte (two texts that are canonically
    /// equivalent Unicode but differ in bytes hash to different leaves, so
    /// they must not compare equal either); `length` is derived and ignored.
    public static func == (a: Note, b: Note) -> Bool {
        a.title.sameBytes(b.title) && a.tags.sameBytes(b.tags) && a.body == b.body && a.contentHash == b.contentHash
            && a.createdAt == b.createdAt && a.updatedAt == b.updatedAt && a.deletedParagraphs == b.deletedParagraphs
            && a.editedBy == b.editedBy && a.kind == b.kind && a.folder == b.folder && a.modifiedAt == b.modifiedAt
            && a.placedAt == b.placedAt
    }

    /// Whether the body is prose (merged by paragraphs, shadowed): notes
    /// only; attachments and folders are bytes kept as written.
    public var isProse: Bool { kind == .note }

    /// Whether any field of the folder tree is set: rows without them keep
    /// the leaf encoding they had before the tree existed.
    public var hasTreeFields: Bool { kind != .note || folder != nil || modifiedAt != nil || placedAt != nil }

    public static func canonicalTags(_ tags: [String]) -> [String] {
        Array(Set(tags.filter { !$0.isEmpty })).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }
}

extension String {
    /// Byte equality of the UTF-8 encodings. Swift's `==` is canonical
    /// equivalence ("café" in NFC equals it in NFD), which is not what a
    /// leaf hashes; every equality that decides a merge or "nothing changed"
    /// must use this instead.
    public func sameBytes(_ other: String) -> Bool { utf8.elementsEqual(other.utf8) }
}

extension Optional where Wrapped == String {
    func sameBytes(_ other: String?) -> Bool {
        switch (self, other) {
        case (nil, nil): return true
        case let (a?, b?): return a.sameBytes(b)
        default: return false
        }
    }
}

extension Array where Element == String {
    func sameBytes(_ other: [String]) -> Bool {
        count == other.count && zip(self, other).allSatisfy { $0.sameBytes($1) }
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
        self.deletedParagraphs = ParagraphHashes.canonical(deletedParagraphs)
        self.editedBy = editedBy
    }

    public static func key(for date: String) -> RowKey { .derived(separator: "quire.saga.key", name: date) }

    public static func == (a: SagaEntry, b: SagaEntry) -> Bool {
        a.date.sameBytes(b.date) && a.text == b.text && a.updatedAt == b.updatedAt
            && a.deletedParagraphs == b.deletedParagraphs && a.editedBy == b.editedBy
    }

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

    public static func == (a: Setting, b: Setting) -> Bool {
        a.name.sameBytes(b.name) && a.value.sameBytes(b.value) && a.updatedAt == b.updatedAt && a.editedBy == b.editedBy
    }
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

    public static func == (a: MemoryEvent, b: MemoryEvent) -> Bool {
        a.at == b.at && a.kind.sameBytes(b.kind) && a.text.sameBytes(b.text) && a.buries == b.buries
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

    public static func == (a: DeviceRecord, b: DeviceRecord) -> Bool {
        a.name.sameBytes(b.name) && a.certificate == b.certificate && a.revocation == b.revocation
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
        case .contact(let c): return c.title
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

/// One concurrent latest version of a row: the dot that wrote it and what
/// it wrote.
public struct RowHead: Equatable, Sendable {
    public var dot: Dot
    public var content: RowContent

    public init(dot: Dot, content: RowContent) {
        self.dot = dot
        self.content = content
    }

    /// What a context records of this write beside its dot.
    public var tag: UInt64 { Self.tag(ofDigest: LeafEncoding.headDigest(self)) }

    /// The tag of a head whose digest (`LeafEncoding.headDigest`) is known.
    public static func tag(ofDigest digest: [UInt8]) -> UInt64 { digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }

    /// The canonical order of heads: by dot, then (only for two versions
    /// under one dot, a collision) by the content's leaf bytes.
    static func precedes(_ a: RowHead, _ b: RowHead) -> Bool {
        if a.dot != b.dot { return a.dot < b.dot }
        return LeafEncoding.headDigest(a).lexicographicallyPrecedes(LeafEncoding.headDigest(b))
    }
}

/// A row as the sync layer and the store see it: its concurrent latest
/// versions (heads) under a causal context of every dot it has seen. A
/// tombstone has no heads: a delete removes exactly the versions its
/// context covers. What a file shows (`content`) is a pure function of the
/// heads (`RowView`), so every device that holds the same heads shows the
/// same thing.
public struct Row: Equatable, Sendable {
    public var namespace: Namespace
    public var key: RowKey
    public private(set) var context: VersionVector
    /// In canonical order (see `RowHead.precedes`); every dot is covered by
    /// `context`, and (as every join and edit keeps, and a sibling's row is
    /// checked on arrival) `context` saw every one by its tag.
    public private(set) var heads: [RowHead]
    /// What a reader is shown: the resolution of the heads; nil exactly
    /// when the row is a tombstone.
    public private(set) var content: RowContent?

    public init(namespace: Namespace, key: RowKey, context: VersionVector, heads: [RowHead]) {
        precondition(heads.allSatisfy { context.covers($0.dot) }, "a head outside its row's context")
        precondition(heads.allSatisfy { $0.content.namespace == namespace }, "content of another namespace")
        self.namespace = namespace
        self.key = key
        self.context = context
        self.heads = heads.sorted(by: RowHead.precedes)
        self.content = RowView.resolve(self.heads)
    }

    /// A row with one version: `dot` wrote `content` having seen `context`.
    public static func single(_ namespace: Namespace, _ key: RowKey, dot: Dot, context: VersionVector,
                              content: RowContent) -> Row {
        single(namespace, key, dot: dot, context: context, content: content, headDigest: LeafEncoding.contentDigest(content))
    }

    /// The same, for a caller that computed the head's digest already
    /// (`LeafEncoding.contentDigest(content)`) to make its leaf from it.
    public static func single(_ namespace: Namespace, _ key: RowKey, dot: Dot, context: VersionVector,
                              content: RowContent, headDigest: [UInt8]) -> Row {
        let head = RowHead(dot: dot, content: content)
        return Row(namespace: namespace, key: key, context: context.adding(dot, tag: RowHead.tag(ofDigest: headDigest)), heads: [head])
    }

    public static func tombstone(_ namespace: Namespace, _ key: RowKey, context: VersionVector) -> Row {
        Row(namespace: namespace, key: key, context: context, heads: [])
    }

    public var isTombstone: Bool { heads.isEmpty }

    /// Replaces the content of the head written by `dot` (residency only:
    /// a pointer's body put back, never an edit).
    public mutating func replaceHeadContent(_ dot: Dot, with content: RowContent) {
        guard let i = heads.firstIndex(where: { $0.dot == dot }) else { return }
        heads[i].content = content
        self.content = RowView.resolve(heads)
    }

    public static func == (a: Row, b: Row) -> Bool {
        a.namespace == b.namespace && a.key == b.key && a.context == b.context && a.heads == b.heads
    }
}

/// A prose row's paragraph tombstones in their one stored form: each hash
/// once, in byte order.
public enum ParagraphHashes {
    /// The list grows with every deleted paragraph and is decoded at every
    /// read of the row, stored in this form already: checked in one pass,
    /// sorted only when it is not. (A set of byte arrays would hash every
    /// byte on its own; equal neighbours after the sort are the duplicates.)
    public static func canonical(_ hashes: [[UInt8]]) -> [[UInt8]] {
        if zip(hashes, hashes.dropFirst()).allSatisfy({ $0.lexicographicallyPrecedes($1) }) { return hashes }
        var unique: [[UInt8]] = []
        unique.reserveCapacity(hashes.count)
        for hash in hashes.sorted(by: { $0.lexicographicallyPrecedes($1) }) where unique.last != hash { unique.append(hash) }
        return unique
    }
}
