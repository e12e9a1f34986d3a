import CSodium

/// Secret-key authenticated encryption (crypto_secretbox: XSalsa20-Poly1305),
/// e.g. for an invite file under a passphrase-derived key. A sealed box is
/// `nonce ‖ ciphertext` with a random nonce.
public enum SecretBox {
    public static let keyByteCount = Int(crypto_secretbox_keybytes())
    public static let nonceByteCount = Int(crypto_secretbox_noncebytes())
    public static let macByteCount = Int(crypto_secretbox_macbytes())
    public static let overhead = nonceByteCount + macByteCount

    /// A fresh random key.
    public static func makeKey() -> SecretBytes { SecretBytes(randomCount: keyByteCount) }

    public static func seal(_ message: some ContiguousBytesLike, with key: SecretBytes) throws -> [UInt8] {
        try checkKey(key, "SecretBox.seal")
        let nonce = SecureRandom.bytes(nonceByteCount)
        let messageCount = message.withBytes { $0.count }
        var out = nonce + [UInt8](repeating: 0, count: macByteCount + messageCount)
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            message.withBytes { messageBuf in
                key.withUnsafeBytes { keyBuf in
                    crypto_secretbox_easy(outBuf.baseAddress! + nonceByteCount, bytePointer(messageBuf), UInt64(messageCount),
                                          outBuf.baseAddress!, bytePointer(keyBuf))
                }
            }
        }
        guard status == 0 else { throw CryptoError(.operationFailed, operation: "SecretBox.seal", detail: "crypto_secretbox_easy failed") }
        return out
    }

    /// Opens bytes sealed under `key`; throws for a wrong key (a mistyped
    /// passphrase) or altered bytes, which cannot be told apart.
    public static func open(_ sealed: some ContiguousBytesLike, with key: SecretBytes) throws -> [UInt8] {
        try checkKey(key, "SecretBox.open")
        let sealedCount = sealed.withBytes { $0.count }
        guard sealedCount >= overhead else { throw CryptoError.tooShort("SecretBox.open", minimum: overhead, got: sealedCount) }
        var out = [UInt8](repeating: 0, count: sealedCount - overhead)
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            sealed.withBytes { sealedBuf in
                key.withUnsafeBytes { keyBuf in
                    let base = bytePointer(sealedBuf)
                    return crypto_secretbox_open_easy(outBuf.baseAddress ?? scratchByte, base + nonceByteCount,
                                                      UInt64(sealedCount - nonceByteCount), base, bytePointer(keyBuf))
                }
            }
        }
        guard status == 0 else {
            throw CryptoError(.authenticationFailed, operation: "SecretBox.open", detail: "wrong key (passphrase?) or altered bytes")
        }
        return out
    }

    private static func checkKey(_ key: SecretBytes, _ operation: String) throws {
        Sodium.ready()
        guard key.count == keyByteCount else { throw CryptoError.length(operation, "the key", expected: keyByteCount, got: key.count) }
    }
}
