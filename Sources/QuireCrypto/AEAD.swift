import CSodium

/// Authenticated encryption with associated data: XChaCha20-Poly1305
/// (crypto_aead_xchacha20poly1305_ietf), for the cloud anchor, whose
/// cleartext header is bound as associated data so that a header altered
/// in the cloud folder makes the body fail to open. A sealed body is
/// `nonce ‖ ciphertext ‖ tag` with a random 24-byte nonce (random nonces
/// are safe at this size).
public enum AEAD {
    public static let keyByteCount = Int(crypto_aead_xchacha20poly1305_ietf_keybytes())
    public static let nonceByteCount = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
    public static let tagByteCount = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
    public static let overhead = nonceByteCount + tagByteCount

    public static func seal(_ message: [UInt8], associatedData: [UInt8], with key: SecretBytes) throws -> [UInt8] {
        try checkKey(key, "AEAD.seal")
        let nonce = SecureRandom.bytes(nonceByteCount)
        var out = nonce + [UInt8](repeating: 0, count: message.count + tagByteCount)
        var written: UInt64 = 0
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            message.withUnsafeBufferPointer { m in
                associatedData.withUnsafeBufferPointer { ad in
                    key.withUnsafeBytes { k in
                        crypto_aead_xchacha20poly1305_ietf_encrypt(
                            outBuf.baseAddress! + nonceByteCount, &written, m.baseAddress ?? UnsafePointer(scratchByte), UInt64(message.count),
                            ad.baseAddress ?? UnsafePointer(scratchByte), UInt64(associatedData.count), nil, outBuf.baseAddress!, bytePointer(k))
                    }
                }
            }
        }
        guard status == 0 else { throw CryptoError(.operationFailed, operation: "AEAD.seal", detail: "xchacha20poly1305 encrypt failed") }
        return out
    }

    /// Opens a sealed body; throws for a wrong key, an altered body or an
    /// altered associated header, which cannot be told apart.
    public static func open(_ sealed: [UInt8], associatedData: [UInt8], with key: SecretBytes) throws -> [UInt8] {
        try checkKey(key, "AEAD.open")
        guard sealed.count >= overhead else { throw CryptoError.tooShort("AEAD.open", minimum: overhead, got: sealed.count) }
        var out = [UInt8](repeating: 0, count: sealed.count - overhead)
        var written: UInt64 = 0
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            sealed.withUnsafeBufferPointer { s in
                associatedData.withUnsafeBufferPointer { ad in
                    key.withUnsafeBytes { k in
                        crypto_aead_xchacha20poly1305_ietf_decrypt(
                            outBuf.baseAddress ?? scratchByte, &written, nil, s.baseAddress! + nonceByteCount,
                            UInt64(sealed.count - nonceByteCount), ad.baseAddress ?? UnsafePointer(scratchByte), UInt64(associatedData.count),
                            s.baseAddress!, bytePointer(k))
                    }
                }
            }
        }
        guard status == 0 else {
            throw CryptoError(.authenticationFailed, operation: "AEAD.open", detail: "wrong key, or the body or its header was altered")
        }
        return out
    }

    private static func checkKey(_ key: SecretBytes, _ operation: String) throws {
        Sodium.ready()
        guard key.count == keyByteCount else { throw CryptoError.length(operation, "the key", expected: keyByteCount, got: key.count) }
    }
}
