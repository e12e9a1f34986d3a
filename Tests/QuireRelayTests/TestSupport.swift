import Foundation
import Synchronization
import XCTest
import QuireTestSupport

/// Frames a handler received, safe to fill from the relay's threads and to
/// wait on from the test's.
final class FrameInbox: Sendable {
    private let frames = Mutex<[[UInt8]]>([])

    var handler: @Sendable ([UInt8]) -> Void { { [self] frame in frames.withLock { $0.append(frame) } } }
    var received: [[UInt8]] { frames.withLock { $0 } }
    var count: Int { frames.withLock { $0.count } }

    /// Waits until at least `count` frames arrived; returns them.
    @discardableResult
    func wait(for count: Int, timeout: TimeInterval = 5) -> [[UInt8]] {
        let deadline = Date().addingTimeInterval(timeout)
        while self.count < count && Date() < deadline { usleep(2_000) }
        return received
    }

    /// Waits until `predicate` holds over the frames, or the timeout.
    @discardableResult
    func wait(timeout: TimeInterval = 5, until predicate: ([[UInt8]]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if predicate(received) { return true }
            usleep(2_000)
        }
        return predicate(received)
    }
}

/// A fresh private temporary directory per test, removed afterwards. Kept
/// short: AF_UNIX socket paths are limited to 107 bytes.
func makeTemporaryDirectory() throws -> String {
    var template = Array("/tmp/qr-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw NSError(domain: "QuireRelayTests", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "mkdtemp failed"])
    }
    return String(cString: made)
}

func removeDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Deterministic pseudo-random bytes (xorshift), so a failing case replays.
func patternBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    var out = [UInt8](repeating: 0, count: count)
    for index in 0..<count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        out[index] = UInt8(truncatingIfNeeded: state)
    }
    return out
}

