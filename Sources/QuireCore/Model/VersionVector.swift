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

/// A causal context: for each actor, the highest counter seen. Because an
/// actor's dots on one row are made in sequence by one replica that held all
/// earlier ones, "counter ≤ entry" means "this dot was seen". Join is the
/// pointwise maximum; no operation here ever mints a dot.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// Entries with a zero counter are never stored, so equal vectors have
    /// one representation.
    public private(set) var counters: [Actor: UInt64]

    public init(_ counters: [Actor: UInt64] = [:]) {
        self.counters = counters.filter { $0.value > 0 }
    }

    public subscript(actor: Actor) -> UInt64 { counters[actor] ?? 0 }

    public var isEmpty: Bool { counters.isEmpty }

    public func covers(_ dot: Dot) -> Bool { self[dot.actor] >= dot.counter }

    /// The next dot of `actor` on the row this context belongs to.
    public func nextDot(for actor: Actor) -> Dot { Dot(actor: actor, counter: self[actor] + 1) }

    public func adding(_ dot: Dot) -> VersionVector {
        var copy = self
        copy.counters[dot.actor] = max(copy[dot.actor], dot.counter)
        return copy
    }

    /// The same context with `actor`'s entry set to `counter` (0 removes it).
    public func setting(_ actor: Actor, to counter: UInt64) -> VersionVector {
        var copy = self
        copy.counters[actor] = counter > 0 ? counter : nil
        return copy
    }

    public func joined(with other: VersionVector) -> VersionVector {
        VersionVector(counters.merging(other.counters, uniquingKeysWith: max))
    }

    public enum Order: Sendable, Equatable { case equal, dominates, dominated, concurrent }

    public func compare(_ other: VersionVector) -> Order {
        var greater = false, less = false
        for actor in Set(counters.keys).union(other.counters.keys) {
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
    public var sortedEntries: [(Actor, UInt64)] {
        counters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Canonical CBOR: an array of [device, incarnation, counter], sorted.
    public func write(to w: inout CBORWriter) {
        let entries = sortedEntries
        w.writeArrayHeader(entries.count)
        for (actor, counter) in entries { Dot(actor: actor, counter: counter).write(to: &w) }
    }

    public func encoded() -> [UInt8] {
        var w = CBORWriter(capacity: 8 + 32 * counters.count)
        write(to: &w)
        return w.bytes
    }

    public var cbor: CBOR {
        .array(sortedEntries.map { Dot(actor: $0.0, counter: $0.1).cbor })
    }

    /// Decodes a context; every entry must be a distinct actor in canonical
    /// order with a non-zero counter, so one context has one encoding.
    public init(cbor: CBOR) throws(CBORError) {
        var counters: [Actor: UInt64] = [:]
        var previous: Actor? = nil
        for entry in try cbor.asArray() {
            let dot = try Dot(cbor: entry)
            if let previous, !(previous < dot.actor) { throw .invalidValue("causal context entries out of order") }
            previous = dot.actor
            counters[dot.actor] = dot.counter
        }
        self.init(counters)
    }

    /// A vector of the first schema ([device, counter] pairs): every entry
    /// becomes the legacy incarnation 0 of its device.
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
        "{" + sortedEntries.map { "\($0.0):\($0.1)" }.joined(separator: ",") + "}"
    }
}
