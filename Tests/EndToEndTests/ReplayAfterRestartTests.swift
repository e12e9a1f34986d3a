import Foundation
import QuireCore
import QuireRelay
import QuireStore
import QuireSync
import QuireTestSupport
import XCTest

/// The replay guard's floors outlive a restart: frames captured on the
/// relay before a restart are refused after it, and they make neither
/// `sync --until-converged` report convergence nor `devices` show the
/// sender as seen.
final class ReplayAfterRestartTests: SyncEndToEndBase {
    func lastSeen(_ of: String, on device: String) throws -> Int? {
        let r = try quireOK(["devices", "--json"], home: home(device))
        let list = (try jsonObject(r.stdout) as! [String: Any])["devices"] as! [[String: Any]]
        return list.first { $0["name"] as? String == of }?["lastSeen"] as? Int
    }

    func testFramesCapturedBeforeARestartAreRefusedAfterIt() throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: env)
        try startAll(["a", "b"])
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30), daemons.map(\.output).joined())

        let tap = try Eavesdropper(relay: relay, home: home("a"))
        defer { withExtendedLifetime(tap) {} }
        let (relayObject, channel) = (tap.relay, tap.channel)
        try put(home("b"), ["notebook", "Captured"], body: "b's frames to a are recorded")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 20))
        sleep(1)
        let frames = tap.stop()
        XCTAssertGreaterThan(frames.count, 0)
        stopAll()
        let seenBefore = try lastSeen("b", on: "a")
        try put(home("a"), ["notebook", "Only on a"], body: "b is away and cannot have this")

        // b stays away; a restarts and the captured frames are replayed, over and over.
        let replaying = DispatchSemaphore(value: 0)
        let done = Locked(false)
        DispatchQueue.global().async {
            while !done.value {
                for f in frames { try? relayObject.publish(f, to: channel) }
                usleep(200_000)
            }
            replaying.signal()
        }
        let sync = try quire(["sync", "--until-converged", "--timeout", "6"], home: home("a"))
        done.value = true
        replaying.wait()
        XCTAssertNotEqual(sync.status, 0, "replayed frames made a report convergence: \(sync.stdout)")
        let dropped = (try syncStatus(home("a"))["dropped"] as? [String: Int]) ?? [:]
        XCTAssertGreaterThanOrEqual(dropped["replay"] ?? 0, frames.count, "\(dropped)")
        let seenAfter = try lastSeen("b", on: "a")
        XCTAssertTrue(seenAfter == nil || seenAfter! <= seenBefore ?? 0, "a replayed frame made b look seen (\(String(describing: seenAfter)))")
    }
}

final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
