import CSodium

/// Keys derived from a passphrase with Argon2id (crypto_pwhash).
public enum PasswordHash {
    public static let saltByteCount = Int(crypto_pwhash_saltbytes())

    /// How much work and memory one derivation costs. Equal passphrase, salt
    /// and strength always give the same key, so a strength is part of what
    /// must be stored next to the salt.
    public struct Strength: Hashable, Sendable, CustomStringConvertible {
        public let operations: UInt64
        public let memoryBytes: Int

        public init(operations: UInt64, memoryBytes: Int) {
            self.operations = operations
            self.memoryBytes = memoryBytes
        }

        /// For a passphrase typed at pairing time (about 64 MiB, a fraction of a second).
        public static let interactive = Strength(operations: UInt64(crypto_pwhash_opslimit_interactive()),
                                                 memoryBytes: Int(crypto_pwhash_memlimit_interactive()))
        /// For an invite file that may sit in a shared folder (about 256 MiB).
        public static let moderate = Strength(operations: UInt64(crypto_pwhash_opslimit_moderate()),
                                              memoryBytes: Int(crypto_pwhash_memlimit_moderate()))
        /// The minimum libsodium allows: for tests only, never for real secrets.
        public static let testing = Strength(operations: UInt64(crypto_pwhash_opslimit_min()),
                                             memoryBytes: Int(crypto_pwhash_memlimit_min()))

        public var description: String { "Argon2id(ops: \(operations), memory: \(memoryBytes / 1024) KiB)" }
    }

    /// The most a file read from outside (an invite, the recovery file) may
    /// ask for: its settings choose what opening it costs, so a crafted one
    /// must not cost minutes or gigabytes. Above what `moderate` needs.
    public static let maximumOperations: UInt64 = 16
    public static let maximumMemoryBytes: UInt64 = 1 << 30

    /// The strength a file asks for, or nil when quire would never write it.
    public static func strength(fromFile operations: UInt64, memoryBytes: UInt64) -> Strength? {
        guard operations >= 1, operations <= maximumOperations, memoryBytes >= 8192, memoryBytes <= maximumMemoryBytes else { return nil }
        return Strength(operations: operations, memoryBytes: Int(memoryBytes))
    }

    /// A fresh random salt.
    public static func makeSalt() -> [UInt8] { SecureRandom.bytes(saltByteCount) }

    public static func deriveKey(passphrase: String, salt: [UInt8], length: Int = SecretBox.keyByteCount,
                                 strength: Strength) throws -> SecretBytes {
        var utf8 = Array(passphrase.utf8)
        defer { secureZero(&utf8) }
        return try deriveKey(passphrase: utf8, salt: salt, length: length, strength: strength)
    }

    public static func deriveKey(passphrase: some ContiguousBytesLike, salt: [UInt8], length: Int = SecretBox.keyByteCount,
                                 strength: Strength) throws -> SecretBytes {
        Sodium.ready()
        let operation = "PasswordHash.deriveKey"
        guard salt.count == saltByteCount else { throw CryptoError.length(operation, "the salt", expected: saltByteCount, got: salt.count) }
        let minLength = Int(crypto_pwhash_bytes_min())
        guard length >= minLength else {
            throw CryptoError(.invalidLength, operation: operation, detail: "key length \(length) is below the \(minLength)-byte minimum")
        }
        var status: Int32 = -1
        let key = SecretBytes(count: length) { keyBuf in
            status = passphrase.withBytes { passBuf in
                passBuf.withMemoryRebound(to: CChar.self) { passChars in
                    crypto_pwhash(keyBuf.bindMemory(to: UInt8.self).baseAddress!, UInt64(length),
                                  passChars.baseAddress ?? UnsafeRawPointer(scratchByte).assumingMemoryBound(to: CChar.self),
                                  UInt64(passBuf.count), salt, strength.operations, strength.memoryBytes,
                                  crypto_pwhash_alg_argon2id13())
                }
            }
        }
        guard status == 0 else {
            throw CryptoError(.keyDerivationFailed, operation: operation,
                              detail: "Argon2id could not run at \(strength) (not enough memory?)")
        }
        return key
    }
}
