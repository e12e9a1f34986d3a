import CSodium

/// libsodium must be initialised once before any call; `sodium_init` is
/// idempotent and thread-safe, so every entry point calls `Sodium.ready()`.
public enum Sodium {
    private static let initialised: Bool = sodium_init() >= 0

    /// Call before using libsodium. Traps if the library cannot start, which
    /// only happens when the system has no usable randomness source.
    @inline(__always)
    public static func ready() {
        precondition(initialised, "libsodium failed to initialise (no randomness source?)")
    }
}

/// Random bytes from libsodium's CSPRNG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return out
    }

    /// A uniform integer in 0..<upperBound.
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        Sodium.ready()
        return randombytes_uniform(upperBound)
    }
}

/// Overwrites secret bytes in place (the compiler may not elide it).
public func secureZero(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buf in
        if let base = buf.baseAddress { sodium_memzero(base, buf.count) }
    }
}
