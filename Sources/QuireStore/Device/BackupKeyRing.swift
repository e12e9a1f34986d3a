import Foundation
import QuireCore
import QuireCrypto

/// The backup keys a device holds beyond the account's original one
/// (`Identity.backupKey`, kept in `keys/backup.key`): one per rotation, a
/// fresh random key that a revocation sealed to every device it left on
/// the roster, named by the id of that revocation statement.
///
/// Anchors and commit records are sealed with the key of a *set* of
/// rotations (`key(for:)`): the original key mixed with the key of every
/// rotation in the set. The original key alone is the key of the empty set,
/// so everything written before rotation existed (epoch 0) still opens.
/// A device revoked by rotation R never receives R's key, so it can make
/// no key of a set that holds R; and two revocations made concurrently on
/// two devices need no choice between them: the set holding both is a key
/// neither revoked device can make, and every device that knows both
/// computes the same one.
///
/// Kept in `keys/backup-keys` (mode 0600, written with fsync before any
/// key in it is used), so a key opened once does not depend on the
/// statement that carried it.
public struct BackupKeyRing: Sendable {
    public private(set) var keys: [DeviceID: SecretBytes]

    public init(_ keys: [DeviceID: SecretBytes] = [:]) { self.keys = keys }

    public static let fileName = "backup-keys"
    static let derivationSeparator = "quire.backup-key.v2"
    static let checkSeparator = "quire.backup-key.check"

    /// The rotations whose keys are held, in id order.
    public var ids: [DeviceID] { keys.keys.sorted() }
    public var isEmpty: Bool { keys.isEmpty }

    public func holds(_ id: DeviceID) -> Bool { keys[id] != nil }

    public mutating func add(_ id: DeviceID, _ key: SecretBytes) { keys[id] = key }

    public mutating func remove(_ id: DeviceID) { keys[id] = nil }

    /// The ring with every key of `other` added.
    public func merging(_ other: BackupKeyRing) -> BackupKeyRing {
        BackupKeyRing(keys.merging(other.keys) { mine, _ in mine })
    }

    /// The key of a set of rotations: the original key for none; else a
    /// keyed hash, under the original key, of each rotation's id and key in
    /// id order. nil when a key of the set is not held here.
    public func key(for set: [DeviceID], original: SecretBytes) -> SecretBytes? {
        let ids = Array(Set(set)).sorted()
        if ids.isEmpty { return original }
        var parts: [KeyedHash.Part] = []
        for id in ids {
            guard let key = keys[id] else { return nil }
            parts += [.bytes(id.bytes), .secret(key)]
        }
        return try? KeyedHash.deriveKey(key: original, separator: Self.derivationSeparator, parts)
    }

    /// The public check value a revocation carries for its fresh key: a
    /// key received later (from an admit, a sibling) is taken only if it matches.
    public static func check(of key: SecretBytes) -> [UInt8] {
        (try? KeyedHash.check(of: key, separator: checkSeparator)) ?? []
    }

    // MARK: Encoding

    /// `[[id, key], ...]` in id order (CBOR), for sealing to a device or to
    /// the account. The caller zeroes the bytes (`secureZero`) once sealed.
    public func encodedSecret(only set: [DeviceID]? = nil) -> [UInt8] {
        let chosen = (set.map { Array(Set($0)).sorted() } ?? ids).filter { keys[$0] != nil }
        return CBORWriter.encode(.array(chosen.map { id in
            .array([.bytes(id.bytes), .bytes(keys[id]!.withUnsafeBytes { Array($0) })])
        }))
    }

    /// Parses `encodedSecret`; every key is 32 bytes.
    public static func decodeSecret(_ bytes: [UInt8]) throws(StoreError) -> BackupKeyRing {
        var ring = BackupKeyRing()
        do {
            for item in try CBORReader.decode(bytes, limits: .init(maxDepth: 4, maxItemLength: 1 << 20)).asArray() {
                let pair = try item.asArray()
                guard pair.count == 2, let id = ID16(bytes: try pair[0].asBytes()) else { throw CBORError.invalidValue("a backup key's id") }
                var key = try pair[1].asBytes()
                defer { secureZero(&key) }
                guard key.count == AEAD.keyByteCount else { throw CBORError.invalidValue("a backup key of \(key.count) bytes") }
                ring.add(id, SecretBytes(copying: key))
            }
        } catch {
            throw StoreError(.corrupt, "a set of backup keys does not decode: \(error)")
        }
        return ring
    }

    /// Seals the ring (or the keys of `set`) to a box key: what an admit
    /// carries for the joiner, and what an anchor carries for the account.
    public func sealed(to recipient: BoxPublicKey, only set: [DeviceID]? = nil) -> [UInt8] {
        var plain = encodedSecret(only: set)
        defer { secureZero(&plain) }
        return Box.sealAnonymously(plain, to: recipient)
    }

    /// Opens what `sealed(to:)` made.
    public static func open(_ sealed: [UInt8], with box: BoxKeyPair) throws -> BackupKeyRing {
        var plain = try Box.openAnonymous(sealed, to: box)
        defer { secureZero(&plain) }
        return try decodeSecret(plain)
    }

    // MARK: The file

    /// Reads `keys/backup-keys` (an empty ring when there is none: a device
    /// made before rotation, or one that never saw a revocation). Refused
    /// like every key file when it is not a regular owner-only file or does
    /// not decode: never silently replaced by an empty ring.
    public static func load(keysPath: String) throws(StoreError) -> BackupKeyRing {
        let path = keysPath + "/" + fileName
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return BackupKeyRing() }
            throw AtomicFile.posixError("cannot inspect key file \(path)")
        }
        var bytes = try Identity.readKeyFile(path, length: nil, what: "the backup keys").withUnsafeBytes { Array($0) }
        defer { secureZero(&bytes) }
        do {
            let fields = try CBORReader.decode(bytes, limits: .init(maxDepth: 5, maxItemLength: 1 << 20)).asFieldMap()
            guard try fields.required(1, "format").asUInt() == 1 else { throw CBORError.invalidValue("format") }
            return try decodeSecret(CBORWriter.encode(try fields.required(2, "keys")))
        } catch {
            throw StoreError(.corrupt, "key file \(path) is damaged (\(error)); move it aside and run 'quire sync': a sibling gives this device the keys again")
        }
    }

    /// Writes `keys/backup-keys` durably (temporary file, fsync, rename,
    /// fsync of the folder), mode 0600.
    public func save(keysPath: String) throws(StoreError) {
        var inner = encodedSecret()
        defer { secureZero(&inner) }
        guard let decoded = try? CBORReader.decode(inner) else { throw StoreError(.invalidInput, "backup keys do not encode") }
        var file = CBORWriter.encode(.map([(.unsigned(1), .unsigned(1)), (.unsigned(2), decoded)]))
        defer { secureZero(&file) }
        try AtomicFile.write(file, to: keysPath + "/" + Self.fileName, mode: 0o600)
    }
}
