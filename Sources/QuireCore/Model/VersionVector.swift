/// Per-device edit counters. Dominance decides merges; a local edit bumps
/// only this device's counter; merging takes the pointwise maximum and never
/// bumps anything.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// Entries with a zero counter are never stored, so equal vectors have
    /// one representation.
    public private(set) var counters: [DeviceID: UInt64]

    public init(_ counters: [DeviceID: UInt64] = [:]) {
        self.counters = counters.filter { $0.value > 0 }
    }

    public subscript(device: DeviceID) -> UInt64 { counters[device] ?? 0 }

    public func bumped(for device: DeviceID) -> VersionVector {
        var copy = self
        copy.counters[device, default: 0] += 1
        return copy
    }

    public func joined(with other: VersionVector) -> VersionVector {
        VersionVector(counters.merging(other.counters, uniquingKeysWith: max))
    }

    public enum Order: Sendable, Equatable { case equal, dominates, dominated, concurrent }

    public func compare(_ other: VersionVector) -> Order {
        var greater = false, less = false
        for device in Set(counters.keys).union(other.counters.keys) {
            let a = self[device], b = other[device]
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

    /// Entries sorted by device id: the canonical order for encoding.
    public var sortedEntries: [(DeviceID, UInt64)] {
        counters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    public func write(to w: inout CBORWriter) {
        let entries = sortedEntries
        w.writeArrayHeader(entries.count)
        for (device, counter) in entries {
            w.writeArrayHeader(2)
            w.writeBytes(device.bytes)
            w.writeUInt(counter)
        }
    }

    /// The canonical CBOR bytes, written without building a tree.
    public func encoded() -> [UInt8] {
        var w = CBORWriter(capacity: 8 + 20 * counters.count)
        write(to: &w)
        return w.bytes
    }

    public var cbor: CBOR {
        .array(sortedEntries.map { .array([.bytes($0.0.bytes), .unsigned($0.1)]) })
    }

    public init(cbor: CBOR) throws(CBORError) {
        var counters: [DeviceID: UInt64] = [:]
        for entry in try cbor.asArray() {
            let pair = try entry.asArray()
            guard pair.count == 2, let device = ID16(bytes: try pair[0].asBytes()) else {
                throw .invalidValue("version vector entry")
            }
            counters[device] = try pair[1].asUInt()
        }
        self.init(counters)
    }

    public var description: String {
        "{" + sortedEntries.map { "\($0.0.hex.prefix(8)):\($0.1)" }.joined(separator: ",") + "}"
    }
}

/// The version of one row: its vector and whether it is a tombstone. A
/// tombstone keeps a deleted row deleted; only the barrier may drop it.
public struct RowVersion: Hashable, Sendable {
    public var vector: VersionVector
    public var isTombstone: Bool

    public init(vector: VersionVector, isTombstone: Bool) {
        self.vector = vector
        self.isTombstone = isTombstone
    }
}
