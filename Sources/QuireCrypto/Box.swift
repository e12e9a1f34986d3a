import CSodium

/// Public-key authenticated encryption (crypto_box: X25519, XSalsa20-Poly1305).
/// A sealed box is `nonce ‖ ciphertext`; the nonce is random, so the same
/// message sealed twice never yields the same bytes.
public enum Box {
    public static let nonceByteCount = Int(crypto_box_noncebytes())
    public static let macByteCount = Int(crypto_box_macbytes())
    /// Bytes a sealed box adds to its message.
    public static let overhead = nonceByteCount + macByteCount
    /// Bytes an anonymous sealed box adds (ephemeral public key and MAC).
    public static let anonymousOverhead = Int(crypto_box_sealbytes())

    /// Seals `message` so that only `recipient` can open it and can tell it came from `sender`.
    public static func seal(_ message: some ContiguousBytesLike, to recipient: BoxPublicKey, from sender: BoxKeyPair) -> [UInt8] {
        Sodium.ready()
        let nonce = SecureRandom.bytes(nonceByteCount)
        let messageCount = message.withBytes { $0.count }
        var out = nonce + [UInt8](repeating: 0, count: macByteCount + messageCount)
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            message.withBytes { messageBuf in
                sender.secretKey.withUnsafeBytes { skBuf in
                    crypto_box_easy(outBuf.baseAddress! + nonceByteCount, bytePointer(messageBuf), UInt64(messageCount),
                                    outBuf.baseAddress!, recipient.bytes, bytePointer(skBuf))
                }
            }
        }
        // crypto_box_easy fails only for a weak (all-zero shared secret) public key.
        precondition(status == 0, "crypto_box_easy failed: the recipient public key is degenerate")
        return out
    }

    /// Opens a box sealed by `sender` for `recipient`; throws if the bytes were
    /// sealed by anyone else, for anyone else, or altered on the way.
    public static func open(_ sealed: some ContiguousBytesLike, from sender: BoxPublicKey, to recipient: BoxKeyPair) throws -> [UInt8] {
        Sodium.ready()
        let sealedCount = sealed.withBytes { $0.count }
        guard sealedCount >= overhead else {
            throw CryptoError.tooShort("Box.open", minimum: overhead, got: sealedCount)
        }
        var out = [UInt8](repeating: 0, count: sealedCount - overhead)
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            sealed.withBytes { sealedBuf in
                recipient.secretKey.withUnsafeBytes { skBuf in
                    let base = bytePointer(sealedBuf)
                    return crypto_box_open_easy(outBuf.baseAddress ?? scratchByte, base + nonceByteCount,
                                                UInt64(sealedCount - nonceByteCount), base, sender.bytes, bytePointer(skBuf))
                }
            }
        }
        guard status == 0 else {
            throw CryptoError(.authenticationFailed, operation: "Box.open",
                              detail: "not sealed by \(sender) for this device's key, or altered in transit")
        }
        return out
    }

    /// Seals `message` for `recipient` with no sender identity (crypto_box_seal):
    /// for a first contact, before the recipient knows the sender's key.
    public static func sealAnonymously(_ message: some ContiguousBytesLike, to recipient: BoxPublicKey) -> [UInt8] {
        Sodium.ready()
        let messageCount = message.withBytes { $0.count }
        var out = [UInt8](repeating: 0, count: messageCount + anonymousOverhead)
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            message.withBytes { messageBuf in
                crypto_box_seal(outBuf.baseAddress!, bytePointer(messageBuf), UInt64(messageCount), recipient.bytes)
            }
        }
        precondition(status == 0, "crypto_box_seal failed: the recipient public key is degenerate")
        return out
    }

    /// Opens an anonymous sealed box addressed to `recipient`.
    public static func openAnonymous(_ sealed: some ContiguousBytesLike, to recipient: BoxKeyPair) throws -> [UInt8] {
        Sodium.ready()
        let sealedCount = sealed.withBytes { $0.count }
        guard sealedCount >= anonymousOverhead else {
            throw CryptoError.tooShort("Box.openAnonymous", minimum: anonymousOverhead, got: sealedCount)
        }
        var out = [UInt8](repeating: 0, count: sealedCount - anonymousOverhead)
        let status = out.withUnsafeMutableBufferPointer { outBuf in
            sealed.withBytes { sealedBuf in
                recipient.secretKey.withUnsafeBytes { skBuf in
                    crypto_box_seal_open(outBuf.baseAddress ?? scratchByte, bytePointer(sealedBuf), UInt64(sealedCount),
                                         recipient.publicKey.bytes, bytePointer(skBuf))
                }
            }
        }
        guard status == 0 else {
            throw CryptoError(.authenticationFailed, operation: "Box.openAnonymous",
                              detail: "not sealed for \(recipient.publicKey), or altered in transit")
        }
        return out
    }
}

/// A typed pointer to a buffer's bytes; libsodium takes `const unsigned char *`
/// and accepts any pointer when the length is zero.
@inline(__always)
func bytePointer(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
    UnsafePointer(buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafeRawPointer(scratchByte).assumingMemoryBound(to: UInt8.self))
}

/// A valid address for zero-length outputs (an empty array has no base address).
nonisolated(unsafe) let scratchByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
