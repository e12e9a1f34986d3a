import QuireCore

/// A key prefix on the wire: [level, packed nibbles].
extension KeyPrefix {
    /// Wire form: [level, packed nibbles].
    var cbor: [CBOR] { [.unsigned(UInt64(level)), .bytes(lowerBound)] }

    static func decode(level: CBOR, packed: CBOR) throws(CBORError) -> KeyPrefix {
        let l = try level.asUInt()
        let bytes = try packed.asBytes()
        guard l <= UInt64(maxLevel), bytes.count == (Int(l) + 1) / 2 else { throw .invalidValue("key prefix") }
        var nibbles: [UInt8] = []
        for i in 0..<Int(l) { nibbles.append(i % 2 == 0 ? bytes[i / 2] >> 4 : bytes[i / 2] & 0x0F) }
        // The unused low half of an odd-length prefix must be zero: one range, one encoding.
        if l % 2 == 1, bytes.last! & 0x0F != 0 { throw .invalidValue("key prefix padding") }
        return KeyPrefix(nibbles: nibbles)!
    }

}
