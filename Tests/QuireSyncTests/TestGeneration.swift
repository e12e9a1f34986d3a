import Foundation
@testable import QuireStore

/// A device's generation as engines under test keep it: it never goes
/// backward (the prefs file's rule).
final class TestGeneration: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0
    func get() -> UInt64 { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ v: UInt64) throws {
        lock.lock(); defer { lock.unlock() }
        guard v >= value else { throw StoreError(.conflict, "generation backward") }
        value = v
    }
}
