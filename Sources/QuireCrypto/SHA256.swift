import CSodium

/// SHA-256 through libsodium. All hashing in Quire goes through here.
public struct SHA256: Sendable {
    public static let byteCount = 32
    private var state = crypto_hash_sha256_state()

    public init() {
        Sodium.ready()
        crypto_hash_sha256_init(&state)
    }

    public mutating func update<Bytes: ContiguousBytesLike>(_ bytes: Bytes) {
        bytes.withBytes { buf in
            _ = crypto_hash_sha256_update(&state, buf.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(buf.count))
        }
    }

    /// Feeds a domain separator: its UTF-8 bytes, length-prefixed so that
    /// no separator is a prefix-collision of another.
    public mutating func updateSeparator(_ separator: String) {
        let utf8 = separator.utf8
        let len = UInt16(utf8.count)
        update([UInt8(len >> 8), UInt8(len & 0xFF)])
        update(utf8)
    }

    public mutating func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: SHA256.byteCount)
        out.withUnsafeMutableBufferPointer { _ = crypto_hash_sha256_final(&state, $0.baseAddress!) }
        return out
    }

    /// One-shot hash.
    public static func hash<Bytes: ContiguousBytesLike>(_ bytes: Bytes) -> [UInt8] {
        var h = SHA256()
        h.update(bytes)
        return h.finalize()
    }

    /// Hash under a domain separator, so equal bytes in different roles never
    /// produce equal digests.
    public static func hash<Bytes: ContiguousBytesLike>(separator: String, _ bytes: Bytes) -> [UInt8] {
        var h = SHA256()
        h.updateSeparator(separator)
        h.update(bytes)
        return h.finalize()
    }
}

/// Byte containers we hash without copying.
public protocol ContiguousBytesLike {
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ContiguousBytesLike where Element == UInt8 {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}

extension ArraySlice: ContiguousBytesLike where Element == UInt8 {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}

extension String.UTF8View: ContiguousBytesLike {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        // Native strings are contiguous UTF-8: hash them in place.
        if let result = try withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) { return result }
        return try Array(self).withUnsafeBytes(body)
    }
}
