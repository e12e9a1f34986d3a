import CSodium

extension SigningKeyPair {
    public static let signatureByteCount = Int(crypto_sign_bytes())

    /// A 64-byte detached Ed25519 signature over `message`.
    public func sign(_ message: some ContiguousBytesLike) -> [UInt8] {
        Sodium.ready()
        var signature = [UInt8](repeating: 0, count: Self.signatureByteCount)
        let status = signature.withUnsafeMutableBufferPointer { sigBuf in
            message.withBytes { messageBuf in
                secretKey.withUnsafeBytes { skBuf in
                    crypto_sign_detached(sigBuf.baseAddress!, nil, bytePointer(messageBuf), UInt64(messageBuf.count), bytePointer(skBuf))
                }
            }
        }
        precondition(status == 0, "crypto_sign_detached failed")
        return signature
    }
}

extension SigningPublicKey {
    /// True only if `signature` is this key's signature over exactly `message`.
    /// A signature of the wrong length is simply not valid (no throw): callers
    /// treat every unverifiable frame the same way.
    public func isValidSignature(_ signature: some ContiguousBytesLike, for message: some ContiguousBytesLike) -> Bool {
        Sodium.ready()
        return signature.withBytes { sigBuf in
            guard sigBuf.count == SigningKeyPair.signatureByteCount else { return false }
            return message.withBytes { messageBuf in
                crypto_sign_verify_detached(bytePointer(sigBuf), bytePointer(messageBuf), UInt64(messageBuf.count), bytes) == 0
            }
        }
    }
}
