import CSodium

/// Keyed BLAKE2b-256 (`crypto_generichash` with a key): a pseudo-random
/// function, used to mix several secret keys into one (the backup key of a
/// set of revocations) and to give a key a public check value that says
/// nothing about the key itself.
///
/// Each part is fed with its length in front (4 bytes, big-endian), so two
/// different lists of parts never hash the same bytes.
public enum KeyedHash {
    public static let byteCount = 32

    public enum Part {
        case bytes([UInt8])
        case secret(SecretBytes)

        var count: Int {
            switch self {
            case .bytes(let b): b.count
            case .secret(let s): s.count
            }
        }
    }

    /// The 32-byte output as a secret (a derived key).
    public static func deriveKey(key: SecretBytes, separator: String, _ parts: [Part]) throws -> SecretBytes {
        try checkKey(key)
        let all: [Part] = [.bytes(Array(separator.utf8))] + parts
        let total = all.reduce(0) { $0 + 4 + $1.count }
        // The message holds secret parts: it lives in SecretBytes, zeroed when freed.
        let message = SecretBytes(count: total) { buffer in
            var offset = 0
            for part in all {
                let n = UInt32(part.count)
                for shift in [24, 16, 8, 0] { buffer[offset] = UInt8(truncatingIfNeeded: n >> UInt32(shift)); offset += 1 }
                switch part {
                case .bytes(let b):
                    for byte in b { buffer[offset] = byte; offset += 1 }
                case .secret(let s):
                    s.withUnsafeBytes { source in
                        for byte in source { buffer[offset] = byte; offset += 1 }
                    }
                }
            }
        }
        var status: Int32 = -1
        let out = SecretBytes(count: byteCount) { outBuf in
            message.withUnsafeBytes { m in
                key.withUnsafeBytes { k in
                    status = crypto_generichash(outBuf.bindMemory(to: UInt8.self).baseAddress!, byteCount, bytePointer(m), UInt64(m.count),
                                                bytePointer(k), k.count)
                }
            }
        }
        guard status == 0 else { throw CryptoError(.operationFailed, operation: "KeyedHash.deriveKey", detail: "crypto_generichash failed") }
        return out
    }

    /// A public value that identifies `key` (someone who holds a candidate
    /// key can check it) and reveals nothing of it.
    public static func check(of key: SecretBytes, separator: String) throws -> [UInt8] {
        let derived = try deriveKey(key: key, separator: separator, [])
        return derived.withUnsafeBytes { Array($0) }
    }

    private static func checkKey(_ key: SecretBytes) throws {
        Sodium.ready()
        guard key.count >= Int(crypto_generichash_keybytes_min()), key.count <= Int(crypto_generichash_keybytes_max()) else {
            throw CryptoError.length("KeyedHash", "the key", expected: Int(crypto_generichash_keybytes()), got: key.count)
        }
    }
}
