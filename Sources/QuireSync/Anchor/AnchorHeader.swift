import QuireCore

/// The anchor's cleartext header (docs/anchor-format.md):
///
///     "QUIREANC" ‖ format ‖ 7 zero bytes ‖ generation (u64 BE)
///     ‖ account id (32 bytes) ‖ written at (i64 BE, seconds)        64 bytes
///     format 2 only: key block length L (u32 BE) ‖ key block (L bytes,
///       canonical CBOR {1: [rotation ids], 2: keys sealed to the account})
///
/// The whole header is the body's associated data: altering any of it
/// (the generation, the key set) makes the body fail to open. Reading it
/// needs no key, so the start-up check costs one small read, and the key
/// set says which key sealed the body before any key is tried.
public struct AnchorHeader: Equatable, Sendable {
    public static let magic = Array("QUIREANC".utf8)
    /// The format this quire writes; 1 (no key block, the original key) is still read.
    public static let formatVersion: UInt8 = 2
    /// The fixed part, all a format-1 header has.
    public static let size = 64
    /// A key block larger than this is refused (a few thousand rotations).
    static let maxKeyBlock = 256 << 10

    public var format: UInt8
    public var generation: UInt64
    public var accountID: [UInt8]
    public var writtenAt: Timestamp
    /// The rotations whose key sealed the body (`BackupKeyRing.key(for:)`), in
    /// id order; empty: the account's original backup key (every format-1 anchor).
    public var keySet: [DeviceID]
    /// The keys of `keySet` sealed to the account key's X25519 form, so that
    /// `quire init --from-cloud` (which holds only the account seed and the
    /// original key) can open the anchor; empty in format 1.
    public var sealedForAccount: [UInt8]

    public init(generation: UInt64, accountID: [UInt8], writtenAt: Timestamp, keySet: [DeviceID] = [],
                sealedForAccount: [UInt8] = [], format: UInt8 = AnchorHeader.formatVersion) {
        self.format = format
        self.generation = generation
        self.accountID = accountID
        self.writtenAt = writtenAt
        self.keySet = Array(Set(keySet)).sorted()
        self.sealedForAccount = sealedForAccount
    }

    public func encoded() -> [UInt8] {
        var out = AnchorHeader.magic + [format] + [UInt8](repeating: 0, count: 7)
        out += bigEndian(generation)
        out += accountID
        out += bigEndian(UInt64(bitPattern: writtenAt.seconds))
        guard format >= 2 else { return out }
        let block = CBORWriter.encode(.map([(.unsigned(1), .array(keySet.map { .bytes($0.bytes) })),
                                            (.unsigned(2), .bytes(sealedForAccount))]))
        let n = UInt32(block.count)
        out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        return out + block
    }

    /// How many bytes the header starting `prefix` takes; nil while the
    /// prefix is too short to tell (read at least 68 bytes first).
    public static func length(of prefix: [UInt8]) throws(AnchorError) -> Int? {
        guard prefix.count >= size else { return nil }
        guard Array(prefix[0..<8]) == magic else { throw .malformed("not an anchor (bad magic)") }
        switch prefix[8] {
        case 1: return size
        case 2:
            guard prefix.count >= size + 4 else { return nil }
            let n = Int(readBigEndian(prefix[size..<size + 4]))
            guard n <= maxKeyBlock else { throw .malformed("a key block of \(n) bytes, more than any quire writes") }
            return size + 4 + n
        default: throw .unsupportedFormat(prefix[8])
        }
    }

    public init(decoding bytes: [UInt8]) throws(AnchorError) {
        guard let length = try AnchorHeader.length(of: bytes), bytes.count >= length else {
            throw .malformed("\(bytes.count) bytes, shorter than the header")
        }
        guard bytes[9..<16].allSatisfy({ $0 == 0 }) else { throw .malformed("reserved header bytes are not zero") }
        format = bytes[8]
        generation = readBigEndian(bytes[16..<24])
        accountID = Array(bytes[24..<56])
        writtenAt = Timestamp(seconds: Int64(bitPattern: readBigEndian(bytes[56..<64])))
        keySet = []
        sealedForAccount = []
        guard format >= 2 else { return }
        do {
            let fields = try CBORReader.decode(Array(bytes[AnchorHeader.size + 4..<length]),
                                               limits: .init(maxDepth: 3, maxItemLength: AnchorHeader.maxKeyBlock)).asFieldMap()
            for item in try fields.required(1, "key set").asArray() {
                guard let id = ID16(bytes: try item.asBytes()) else { throw AnchorError.malformed("a key set entry is not a rotation id") }
                // In order and unique: one header, one reading.
                guard keySet.last.map({ $0 < id }) ?? true else { throw AnchorError.malformed("the key set is not in order") }
                keySet.append(id)
            }
            sealedForAccount = try fields.required(2, "sealed keys").asBytes()
        } catch let error as AnchorError {
            throw error
        } catch {
            throw .malformed("the key block does not decode: \(error)")
        }
    }

    /// The header's size in bytes (where the sealed body starts).
    public var byteCount: Int { encoded().count }
}

private func bigEndian(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8((v >> (56 - 8 * UInt64($0))) & 0xFF) } }
private func readBigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
