import CSodium

/// Secret key bytes kept out of Swift arrays, so they are not copied around
/// by value semantics and are zeroed when the last reference goes.
///
/// The contents never change after `init`, so sharing across threads is safe;
/// that is why the `@unchecked Sendable` holds.
public final class SecretBytes: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    // Allocated one byte larger than needed when empty, since a zero-byte
    // allocation is not portable; `count` is the real size.
    private let storage: UnsafeMutableRawBufferPointer

    /// The number of secret bytes.
    public let count: Int

    /// Fresh random bytes from libsodium's CSPRNG.
    public convenience init(randomCount count: Int) {
        self.init(count: count) { buffer in
            if let base = buffer.baseAddress { randombytes_buf(base, buffer.count) }
        }
    }

    /// Copies `bytes`. The caller should zero its own copy (`secureZero`).
    public convenience init(copying bytes: some ContiguousBytesLike) {
        let count = bytes.withBytes { $0.count }
        self.init(count: count) { destination in
            bytes.withBytes { source in
                if let base = destination.baseAddress, count > 0 { base.copyMemory(from: source.baseAddress!, byteCount: count) }
            }
        }
    }

    /// Allocates `count` zeroed bytes and lets `fill` write them; the only
    /// place that hands out a mutable pointer, and only during construction.
    /// `fill` cannot throw: a failing fill leaves zeros, and the caller reports
    /// the failure after `deinit` has wiped them.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        Sodium.ready()
        precondition(count >= 0, "SecretBytes: negative count")
        self.count = count
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        if let base = storage.baseAddress { sodium_memzero(base, storage.count) }
        fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
    }

    deinit { Self.wipe(storage) }

    private static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
        buffer.deallocate()
    }

    /// Read access for the duration of `body`; the pointer must not escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Constant-time comparison, so equality checks leak no timing.
    public func isEqual(to other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }

    // Never print secret bytes, not even in a debugger or a log line.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
}
