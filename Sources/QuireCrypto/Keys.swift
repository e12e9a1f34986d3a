import CSodium

/// An X25519 public key: the address a device's frames are sealed to.
public struct BoxPublicKey: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = Int(crypto_box_publickeybytes())
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else {
            throw CryptoError.length("BoxPublicKey", "an X25519 public key", expected: Self.byteCount, got: bytes.count)
        }
        self.bytes = bytes
    }

    public var description: String { "BoxPublicKey(\(hexPrefix(bytes))…)" }
}

/// An X25519 key pair for sealing (crypto_box).
public struct BoxKeyPair: Sendable {
    public static let secretKeyByteCount = Int(crypto_box_secretkeybytes())
    public static let seedByteCount = Int(crypto_box_seedbytes())

    public let publicKey: BoxPublicKey
    public let secretKey: SecretBytes

    /// A fresh random key pair.
    public init() {
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: BoxPublicKey.byteCount)
        let sk = SecretBytes(count: Self.secretKeyByteCount) { skBuf in
            _ = pk.withUnsafeMutableBufferPointer { crypto_box_keypair($0.baseAddress!, skBuf.bindMemory(to: UInt8.self).baseAddress!) }
        }
        publicKey = try! BoxPublicKey(bytes: pk)
        secretKey = sk
    }

    /// The key pair deterministically derived from a 32-byte seed.
    public init(seed: SecretBytes) throws {
        guard seed.count == Self.seedByteCount else {
            throw CryptoError.length("BoxKeyPair(seed:)", "the seed", expected: Self.seedByteCount, got: seed.count)
        }
        var pk = [UInt8](repeating: 0, count: BoxPublicKey.byteCount)
        let sk = SecretBytes(count: Self.secretKeyByteCount) { skBuf in
            seed.withUnsafeBytes { seedBuf in
                _ = pk.withUnsafeMutableBufferPointer {
                    crypto_box_seed_keypair($0.baseAddress!, skBuf.bindMemory(to: UInt8.self).baseAddress!,
                                            seedBuf.bindMemory(to: UInt8.self).baseAddress!)
                }
            }
        }
        publicKey = try BoxPublicKey(bytes: pk)
        secretKey = sk
    }

    /// Rebuilds a key pair from a stored secret key (the public key is derived).
    public init(secretKey: SecretBytes) throws {
        guard secretKey.count == Self.secretKeyByteCount else {
            throw CryptoError.length("BoxKeyPair(secretKey:)", "an X25519 secret key", expected: Self.secretKeyByteCount, got: secretKey.count)
        }
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: BoxPublicKey.byteCount)
        let status = secretKey.withUnsafeBytes { skBuf in
            pk.withUnsafeMutableBufferPointer { crypto_scalarmult_base($0.baseAddress!, skBuf.bindMemory(to: UInt8.self).baseAddress!) }
        }
        guard status == 0 else {
            throw CryptoError(.operationFailed, operation: "BoxKeyPair(secretKey:)", detail: "cannot derive the public key")
        }
        publicKey = try BoxPublicKey(bytes: pk)
        self.secretKey = secretKey
    }
}

/// An Ed25519 public key: verifies a device's or the account's signatures.
public struct SigningPublicKey: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = Int(crypto_sign_publickeybytes())
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else {
            throw CryptoError.length("SigningPublicKey", "an Ed25519 public key", expected: Self.byteCount, got: bytes.count)
        }
        self.bytes = bytes
    }

    public var description: String { "SigningPublicKey(\(hexPrefix(bytes))…)" }
}

/// An Ed25519 key pair. The secret key is libsodium's 64-byte form
/// (seed ‖ public key); store the 32-byte `seed()` and rebuild with `init(seed:)`.
public struct SigningKeyPair: Sendable {
    public static let secretKeyByteCount = Int(crypto_sign_secretkeybytes())
    public static let seedByteCount = Int(crypto_sign_seedbytes())

    public let publicKey: SigningPublicKey
    public let secretKey: SecretBytes

    /// A fresh random key pair.
    public init() {
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: SigningPublicKey.byteCount)
        let sk = SecretBytes(count: Self.secretKeyByteCount) { skBuf in
            _ = pk.withUnsafeMutableBufferPointer { crypto_sign_keypair($0.baseAddress!, skBuf.bindMemory(to: UInt8.self).baseAddress!) }
        }
        publicKey = try! SigningPublicKey(bytes: pk)
        secretKey = sk
    }

    /// The key pair deterministically derived from a 32-byte seed.
    public init(seed: SecretBytes) throws {
        guard seed.count == Self.seedByteCount else {
            throw CryptoError.length("SigningKeyPair(seed:)", "the seed", expected: Self.seedByteCount, got: seed.count)
        }
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: SigningPublicKey.byteCount)
        let sk = SecretBytes(count: Self.secretKeyByteCount) { skBuf in
            seed.withUnsafeBytes { seedBuf in
                _ = pk.withUnsafeMutableBufferPointer {
                    crypto_sign_seed_keypair($0.baseAddress!, skBuf.bindMemory(to: UInt8.self).baseAddress!,
                                             seedBuf.bindMemory(to: UInt8.self).baseAddress!)
                }
            }
        }
        publicKey = try SigningPublicKey(bytes: pk)
        secretKey = sk
    }

    /// The 32-byte seed this key pair can be rebuilt from.
    public func seed() -> SecretBytes {
        SecretBytes(count: Self.seedByteCount) { seedBuf in
            secretKey.withUnsafeBytes { skBuf in
                _ = crypto_sign_ed25519_sk_to_seed(seedBuf.bindMemory(to: UInt8.self).baseAddress!,
                                                   skBuf.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
    }
}

/// The first bytes of a public key in hex, enough to tell keys apart in logs.
func hexPrefix(_ bytes: [UInt8], count: Int = 8) -> String {
    let digits = Array("0123456789abcdef")
    var out = ""
    for byte in bytes.prefix(count) {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }
    return out
}

// MARK: The account key as a sealing address

extension BoxPublicKey {
    /// The X25519 form of an Ed25519 public key
    /// (`crypto_sign_ed25519_pk_to_curve25519`). Every device knows the
    /// account's public key; only whoever holds the account seed (the
    /// recovery file, opened with the recovery code) can open what is
    /// sealed to this form of it. Used for nothing else.
    public init(convertingSigningKey key: SigningPublicKey) throws {
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: BoxPublicKey.byteCount)
        let status = pk.withUnsafeMutableBufferPointer { crypto_sign_ed25519_pk_to_curve25519($0.baseAddress!, key.bytes) }
        guard status == 0 else {
            throw CryptoError(.operationFailed, operation: "BoxPublicKey(convertingSigningKey:)", detail: "not a valid Ed25519 public key")
        }
        try self.init(bytes: pk)
    }
}

extension BoxKeyPair {
    /// The X25519 key pair of an Ed25519 key pair (`crypto_sign_ed25519_sk_to_curve25519`):
    /// opens what was sealed to `BoxPublicKey(convertingSigningKey:)`.
    public init(convertingSigningKeyPair pair: SigningKeyPair) throws {
        Sodium.ready()
        var status: Int32 = -1
        let sk = SecretBytes(count: Self.secretKeyByteCount) { skBuf in
            pair.secretKey.withUnsafeBytes { ed in
                status = crypto_sign_ed25519_sk_to_curve25519(skBuf.bindMemory(to: UInt8.self).baseAddress!, bytePointer(ed))
            }
        }
        guard status == 0 else {
            throw CryptoError(.operationFailed, operation: "BoxKeyPair(convertingSigningKeyPair:)", detail: "cannot convert the Ed25519 secret key")
        }
        try self.init(secretKey: sk)
    }
}
