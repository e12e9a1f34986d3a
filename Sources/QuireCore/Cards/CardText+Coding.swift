/// A card text in the row codec and in leaves: the units as an array of
/// [id, bytes] or [id, bytes, slot], the removals as an array of ids.
extension CardText {
    /// Ids are 16 bytes; more units than this is not a card (a card of
    /// 16 MiB of one-byte lines would be; refused as hostile instead).
    public static let maxUnits = 100_000

    public var unitsCBOR: CBOR {
        .array(units.map { u in .array([.bytes(u.id), .bytes(u.bytes)] + (u.slot.map { [.bytes($0)] } ?? [])) })
    }

    public var removedCBOR: CBOR { .array(removed.map { .bytes($0) }) }

    public init(unitsCBOR: CBOR, removedCBOR: CBOR?) throws(CBORError) {
        let items = try unitsCBOR.asArray()
        guard items.count <= Self.maxUnits else { throw .invalidValue("a card of \(items.count) lines") }
        var units: [CardUnit] = []
        var ids = Set<[UInt8]>()
        for item in items {
            let parts = try item.asArray()
            guard parts.count == 2 || parts.count == 3 else { throw .invalidValue("card line") }
            let id = try parts[0].asBytes()
            let slot = parts.count == 3 ? try parts[2].asBytes() : nil
            guard id.count == 16, slot == nil || slot!.count == 16 else { throw .invalidValue("card line id") }
            guard ids.insert(id).inserted else { throw .invalidValue("two card lines with one id") }
            units.append(CardUnit(id: id, slot: slot, bytes: try parts[1].asBytes()))
        }
        var removed: [[UInt8]] = []
        for item in try removedCBOR?.asArray() ?? [] {
            let id = try item.asBytes()
            guard id.count == 16 else { throw .invalidValue("removed card line id") }
            removed.append(id)
        }
        self.init(units: units, removed: removed)
    }

    /// The fixed-order leaf form: [[id, slot?, bytes]...], [removed...].
    public func writeLeaf(to w: inout CBORWriter) {
        w.writeArrayHeader(units.count)
        for u in units {
            w.writeArrayHeader(3)
            w.writeBytes(u.id)
            w.writeOptional(u.slot) { $0.writeBytes($1) }
            w.writeBytes(u.bytes)
        }
        w.writeArrayHeader(removed.count)
        for id in removed { w.writeBytes(id) }
    }

    /// Bytes a card takes, lines and ids: what the size limit counts.
    public var storedBytes: Int { units.reduce(0) { $0 + $1.bytes.count + 32 } + removed.count * 16 }
}
