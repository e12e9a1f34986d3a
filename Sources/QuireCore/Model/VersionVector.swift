/// Who wrote a version: a device in one of its lives. A device mints a new
/// random incarnation at init, at every restore, and whenever it learns it
/// was rolled back (a copy of its directory put back), so that a counter it
/// already used before the rollback is never used again under the same
/// actor: no dot is ever minted twice.
public struct Actor: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let device: DeviceID
    /// 0 only for versions written before incarnations existed (migrated rows).
    public let incarnation: UInt64

    public init(device: DeviceID, incarnation: UInt64) {
        self.device = device
        self.incarnation = incarnation
    }

    public static func < (a: Actor, b: Actor) -> Bool {
        a.device != b.device ? a.device < b.device : a.incarnation < b.incarnation
    }

    public var description: String { "\(device.hex.prefix(8))/\(String(incarnation, radix: 16).prefix(6))" }
}

/// One write's identity: the actor and that actor's counter on this row.
/// Counters are per row: a local edit of a row takes the row's context entry
/// for this actor plus one, so dots of one actor on one row are 1, 2, 3, ...
public struct Dot: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let actor: Actor
    public let counter: UInt64

    public init(actor: Actor, counter: UInt64) {
        self.actor = actor
        self.counter = counter
    }

    public static func < (a: Dot, b: Dot) -> Bool {
        a.actor != b.actor ? a.actor < b.actor : a.counter < b.counter
    }

    public var description: String { "\(actor):\(counter)" }

    public func write(to w: inout CBORWriter) {
        w.writeArrayHeader(3)
        w.writeBytes(actor.device.bytes)
        w.writeUInt(actor.incarnation)
        w.writeUInt(counter)
    }

    public var cbor: CBOR { .array([.bytes(actor.device.bytes), .unsigned(actor.incarnation), .unsigned(counter)]) }

    public init(cbor: CBOR) throws(CBORError) {
        let parts = try cbor.asArray()
        guard parts.count == 3, let device = ID16(bytes: try parts[0].asBytes()) else { throw .invalidValue("dot") }
        let counter = try parts[2].asUInt()
        guard counter > 0 else { throw .invalidValue("dot counter 0") }
        self.init(actor: Actor(device: device, incarnation: try parts[1].asUInt()), counter: counter)
    }
}

/// A causal context: for each actor, the highest counter seen, and the
/// tags of the writes seen at that counter (a tag is the first 8 bytes of
/// a head's digest). Because an actor's dots on one row are made in
/// sequence by one replica that held all earlier ones, "counter ≤ entry"
/// means "this dot was seen". The tags tell a write that was seen from
/// another write under the same dot (a device that came back from a copy
/// of itself): a sibling whose context names our dot with our tag saw our
/// write, and one that names it with other tags only saw those.
///
/// Join is the pointwise maximum by counter; at equal counters the tag
/// sets are united. A set may also be unknown (no tags: written before
/// tags, lowered below a re-issue, or re-encoded by an upgrade), and
/// unknown absorbs every set: an entry that cannot list what it saw says
/// "any". Per entry this is a union with an absorbing top, so the join
/// stays commutative, associative and idempotent, and a joined context saw
/// a write exactly when one of its parts did (the row join relies on it,
/// so the sets are never cut short). Nothing here mints a dot.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    public struct Entry: Hashable, Sendable {
        public var counter: UInt64
        /// The tags of the writes seen at `counter`, ascending, none zero;
        /// empty when not known.
        public private(set) var tags: [UInt64]

        public init(counter: UInt64, tag: UInt64) {
            self.counter = counter
            tags = tag == 0 ? [] : [tag]
        }

        init(counter: UInt64, tags: [UInt64]) {
            self.counter = counter
            self.tags = tags
        }

        func joined(with other: Entry) -> Entry {
            if counter != other.counter { return counter > other.counter ? self : other }
            if tags == other.tags { return self }
            guard !tags.isEmpty, !other.tags.isEmpty else { return Entry(counter: counter, tags: []) }
            return Entry(counter: counter, tags: Set(tags).union(other.tags).sorted())
        }
    }

    /// Entries with a zero counter are never stored, so equal vectors have
    /// one representation.
    public private(set) var entries: [Actor: Entry]

    public init(_ counters: [Actor: UInt64] = [:]) {
        entries = [:]
        for (actor, counter) in counters where counter > 0 { entries[actor] = Entry(counter: counter, tag: 0) }
    }

    init(entries: [Actor: Entry]) { self.entries = entries.filter { $0.value.counter > 0 } }

    public var counters: [Actor: UInt64] { entries.mapValues(\.counter) }

    public subscript(actor: Actor) -> UInt64 { entries[actor]?.counter ?? 0 }

    /// The tags of the writes seen at this actor's counter (empty: not known).
    public func tags(_ actor: Actor) -> [UInt64] { entries[actor]?.tags ?? [] }

    /// Whether this context saw the write `tag` under `dot`: it saw a later
    /// write of the actor on this row, or this counter with this tag among
    /// its tags, or this counter with its tags not known.
    /// (The tag, a digest of the write, is computed only when needed.)
    public func saw(_ dot: Dot, tag: @autoclosure () -> UInt64) -> Bool {
        guard let entry = entries[dot.actor], entry.counter >= dot.counter else { return false }
        return entry.counter > dot.counter || entry.tags.isEmpty || entry.tags.contains(tag())
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// Whether this context saw every write `other` saw: per actor a later
    /// counter, or the same one with every tag `other` names (or its own
    /// tags not known).
    public func includes(_ other: VersionVector) -> Bool {
        other.entries.allSatisfy { actor, theirs in
            guard let mine = entries[actor], mine.counter >= theirs.counter else { return false }
            return mine.counter > theirs.counter || mine.tags.isEmpty
                || (!theirs.tags.isEmpty && Set(theirs.tags).isSubset(of: mine.tags))
        }
    }

    public func covers(_ dot: Dot) -> Bool { self[dot.actor] >= dot.counter }

    /// The next dot of `actor` on the row this context belongs to.
    public func nextDot(for actor: Actor) -> Dot { Dot(actor: actor, counter: self[actor] + 1) }

    /// This context after seeing `dot`, which wrote content tagged `tag`.
    public func adding(_ dot: Dot, tag: UInt64) -> VersionVector {
        var copy = self
        let entry = Entry(counter: dot.counter, tag: tag)
        copy.entries[dot.actor] = copy.entries[dot.actor].map { $0.joined(with: entry) } ?? entry
        return copy
    }

    /// The same context with `actor`'s entry lowered to `counter` (0
    /// removes it); the write at a lowered counter is not known (tag 0).
    public func lowering(_ actor: Actor, to counter: UInt64) -> VersionVector {
        guard counter < self[actor] else { return self }
        var copy = self
        copy.entries[actor] = counter > 0 ? Entry(counter: counter, tag: 0) : nil
        return copy
    }

    /// The same counters with each entry's tags replaced by `tag(actor,
    /// entry)`: an upgrade that changes how content is digested re-tags
    /// the write it re-encodes, and forgets (0, unknown) the rest.
    public func retagged(_ tag: (Actor, Entry) -> UInt64) -> VersionVector {
        VersionVector(entries: Dictionary(uniqueKeysWithValues: entries.map { ($0.key, Entry(counter: $0.value.counter, tag: tag($0.key, $0.value))) }))
    }

    public func joined(with other: VersionVector) -> VersionVector {
        VersionVector(entries: entries.merging(other.entries) { $0.joined(with: $1) })
    }

    public enum Order: Sendable, Equatable { case equal, dominates, dominated, concurrent }

    /// Causal order by counters alone (tags only tell writes apart).
    public func compare(_ other: VersionVector) -> Order {
        var greater = false, less = false
        for actor in Set(entries.keys).union(other.entries.keys) {
            let a = self[actor], b = other[actor]
            if a > b { greater = true } else if a < b { less = true }
            if greater && less { return .concurrent }
        }
        switch (greater, less) {
        case (false, false): return .equal
        case (true, false): return .dominates
        case (false, true): return .dominated
        case (true, true): return .concurrent
        }
    }

    /// Entries sorted by actor: the canonical order for encoding.
    public var sortedEntries: [(Actor, Entry)] {
        entries.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Canonical CBOR: an array of [device, incarnation, counter, tags],
    /// sorted by actor. `tags` is 0 (not known), the one tag, or (two
    /// writes or more under one dot) an ascending array of them; so a
    /// context with no such collision encodes as it did before tag sets.
    public func write(to w: inout CBORWriter) {
        let sorted = sortedEntries
        w.writeArrayHeader(sorted.count)
        for (actor, entry) in sorted {
            w.writeArrayHeader(4)
            w.writeBytes(actor.device.bytes)
            w.writeUInt(actor.incarnation)
            w.writeUInt(entry.counter)
            switch entry.tags.count {
            case 0: w.writeUInt(0)
            case 1: w.writeUInt(entry.tags[0])
            default:
                w.writeArrayHeader(entry.tags.count)
                for tag in entry.tags { w.writeUInt(tag) }
            }
        }
    }

    public func encoded() -> [UInt8] {
        var w = CBORWriter(capacity: 8 + 48 * entries.count)
        write(to: &w)
        return w.bytes
    }

    public var cbor: CBOR {
        .array(sortedEntries.map { actor, entry in
            let tags: CBOR = entry.tags.count > 1 ? .array(entry.tags.map { .unsigned($0) }) : .unsigned(entry.tags.first ?? 0)
            return .array([.bytes(actor.device.bytes), .unsigned(actor.incarnation), .unsigned(entry.counter), tags])
        })
    }

    /// Decodes a context; every entry must be a distinct actor in canonical
    /// order with a non-zero counter, and a list of tags at least two
    /// long, ascending, none zero, so one context has one encoding.
    public init(cbor: CBOR) throws(CBORError) {
        var entries: [Actor: Entry] = [:]
        var previous: Actor? = nil
        for item in try cbor.asArray() {
            let parts = try item.asArray()
            guard parts.count == 4, let device = ID16(bytes: try parts[0].asBytes()) else { throw .invalidValue("causal context entry") }
            let actor = Actor(device: device, incarnation: try parts[1].asUInt())
            let entry: Entry
            if case .array(let list) = parts[3] {
                var tags: [UInt64] = []
                for item in list {
                    let tag = try item.asUInt()
                    guard tag > (tags.last ?? 0) else { throw .invalidValue("causal context tags out of order") }
                    tags.append(tag)
                }
                guard tags.count >= 2 else { throw .invalidValue("causal context with \(tags.count) tags in a list") }
                entry = Entry(counter: try parts[2].asUInt(), tags: tags)
            } else {
                entry = Entry(counter: try parts[2].asUInt(), tag: try parts[3].asUInt())
            }
            guard entry.counter > 0 else { throw .invalidValue("causal context entry with counter 0") }
            if let previous, !(previous < actor) { throw .invalidValue("causal context entries out of order") }
            previous = actor
            entries[actor] = entry
        }
        self.init(entries: entries)
    }

    /// A vector of the first schema ([device, counter] pairs): every entry
    /// becomes the legacy incarnation 0 of its device, tag unknown.
    public init(legacyCBOR cbor: CBOR) throws(CBORError) {
        var counters: [Actor: UInt64] = [:]
        for entry in try cbor.asArray() {
            let pair = try entry.asArray()
            guard pair.count == 2, let device = ID16(bytes: try pair[0].asBytes()) else {
                throw .invalidValue("version vector entry")
            }
            counters[Actor(device: device, incarnation: 0)] = try pair[1].asUInt()
        }
        self.init(counters)
    }

    public var description: String {
        "{" + sortedEntries.map { "\($0.0):\($0.1.counter)" }.joined(separator: ",") + "}"
    }
}
