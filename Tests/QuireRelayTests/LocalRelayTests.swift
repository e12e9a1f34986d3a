import Foundation
import QuireRelay
import XCTest

final class LocalRelayTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
    }

    override func tearDown() {
        removeDirectory(directory)
    }

    func testTwoSubscribersOnOneChannelBothReceive() throws {
        let relay = try LocalRelay(directory: directory + "/relay")
        defer { relay.close() }
        let first = FrameInbox(), second = FrameInbox(), other = FrameInbox()
        let a = try relay.subscribe("device-a", handler: first.handler)
        let b = try relay.subscribe("device-a", handler: second.handler)
        let c = try relay.subscribe("device-b", handler: other.handler)
        try relay.publish([1, 2, 3], to: "device-a")
        XCTAssertEqual(first.wait(for: 1), [[1, 2, 3]])
        XCTAssertEqual(second.wait(for: 1), [[1, 2, 3]])
        usleep(50_000)
        XCTAssertEqual(other.count, 0, "a frame leaked to another channel")
        _ = (a, b, c)
    }

    func testDirectoryIsPrivate() throws {
        let path = directory + "/relay"
        let relay = try LocalRelay(directory: path)
        defer { relay.close() }
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
    }

    func testFrameWithNoListenerIsGone() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        // Nobody has ever listened, then a listener came and went: both lose the frame.
        try relay.publish([9], to: "nobody")
        try relay.subscribe("nobody", handler: { _ in }).cancel()
        try relay.publish([10], to: "nobody")
        let inbox = FrameInbox()
        let late = try relay.subscribe("nobody", handler: inbox.handler)
        try relay.publish([11], to: "nobody")
        XCTAssertEqual(inbox.wait(for: 1), [[11]])
        usleep(50_000)
        XCTAssertEqual(inbox.received, [[11]], "a frame published before subscribing was delivered: that is a mailbox")
        late.cancel()
    }

    func testCancelStopsDelivery() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        let inbox = FrameInbox()
        let subscription = try relay.subscribe("c", handler: inbox.handler)
        try relay.publish([1], to: "c")
        inbox.wait(for: 1)
        subscription.cancel()
        XCTAssertTrue(subscription.isCancelled)
        try relay.publish([2], to: "c")
        usleep(50_000)
        XCTAssertEqual(inbox.received, [[1]])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory + "/c")
        XCTAssertEqual(leftovers, [], "cancel left its socket file behind")
    }

    func testStaleSocketFileIsRemovedWithoutError() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        // A listener that died without cleaning up: its file is bound, then its socket closed.
        try FileManager.default.createDirectory(atPath: directory + "/ch", withIntermediateDirectories: true)
        let stalePath = directory + "/ch/dead.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in stalePath.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        close(fd)
        XCTAssertTrue(FileManager.default.fileExists(atPath: stalePath))

        let inbox = FrameInbox()
        let live = try relay.subscribe("ch", handler: inbox.handler)
        XCTAssertNoThrow(try relay.publish([7, 7], to: "ch"))
        XCTAssertEqual(inbox.wait(for: 1), [[7, 7]], "the live listener next to a stale file must still receive")
        XCTAssertFalse(FileManager.default.fileExists(atPath: stalePath), "stale socket file was not removed")
        live.cancel()
    }

    func testFramesAtMaxSizeRoundTripByteExact() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        let inbox = FrameInbox()
        let subscription = try relay.subscribe("big", handler: inbox.handler)
        let frames = (0..<5).map { patternBytes(count: relay.maxFrameSize, seed: UInt64($0) + 1) } + [[], [0, 0, 0]]
        for frame in frames { try relay.publish(frame, to: "big") }
        XCTAssertEqual(inbox.wait(for: frames.count), frames)
        subscription.cancel()
    }

    func testOversizeFrameIsRefused() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        XCTAssertThrowsError(try relay.publish([UInt8](repeating: 1, count: relay.maxFrameSize + 1), to: "x")) { error in
            let relayError = error as? RelayError
            XCTAssertEqual(relayError?.code, .frameTooLarge)
            XCTAssertTrue(relayError?.message.contains("chunk") ?? false, "\(error)")
        }
    }

    func testInvalidChannelIsRefused() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        for bad in ["", "..", "a/b", ".hidden", String(repeating: "x", count: 201)] {
            XCTAssertThrowsError(try relay.publish([1], to: bad)) { XCTAssertEqual(($0 as? RelayError)?.code, .invalidChannel) }
        }
    }

    func testLongChannelNamePastSunPathLimit() throws {
        // 64-hex channel ids under a deep directory exceed sun_path's 107 bytes.
        let deep = directory + "/" + String(repeating: "d", count: 60)
        let relay = try LocalRelay(directory: deep)
        defer { relay.close() }
        let channel = String(repeating: "ab", count: 32)
        XCTAssertGreaterThan((deep + "/" + channel + "/0123456789abcdef.sock").utf8.count, 107)
        let inbox = FrameInbox()
        let subscription = try relay.subscribe(channel, handler: inbox.handler)
        try relay.publish([4, 2], to: channel)
        XCTAssertEqual(inbox.wait(for: 1), [[4, 2]])
        subscription.cancel()
    }

    func testBurstToSlowListenerDoesNotWedgePublisher() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        // A listener whose handler never returns in time: its queue fills.
        let stuck = try relay.subscribe("s", handler: { _ in usleep(1_000_000) })
        let inbox = FrameInbox()
        let healthy = try relay.subscribe("s", handler: inbox.handler)
        let start = Date()
        for index in 0..<200 { try relay.publish(patternBytes(count: 1000, seed: UInt64(index) + 1), to: "s") }
        let elapsed = Date().timeIntervalSince(start)
        // Waiting the 50 ms grace on every frame would take 10 s; a loaded
        // machine may add some waits for the healthy listener, hence 3 s.
        XCTAssertLessThan(elapsed, 3.0, "a stuck listener slowed the publisher: \(elapsed)s for 200 frames")
        inbox.wait(for: 200, timeout: 5)
        XCTAssertEqual(inbox.count, 200, "the healthy listener should get every frame")
        healthy.cancel()
        stuck.cancel()
    }

    func testHandlerMayCancelItsOwnSubscription() throws {
        let relay = try LocalRelay(directory: directory)
        defer { relay.close() }
        let inbox = FrameInbox()
        let holder = SubscriptionHolder()
        holder.subscription = try relay.subscribe("self", handler: { frame in
            inbox.handler(frame)
            holder.subscription?.cancel()
        })
        try relay.publish([1], to: "self")
        inbox.wait(for: 1)
        usleep(20_000)
        try relay.publish([2], to: "self")
        usleep(50_000)
        XCTAssertEqual(inbox.received, [[1]])
    }

    func testClosedRelayRefusesWork() throws {
        let relay = try LocalRelay(directory: directory)
        let inbox = FrameInbox()
        let subscription = try relay.subscribe("z", handler: inbox.handler)
        relay.close()
        XCTAssertTrue(subscription.isCancelled, "close() must cancel live subscriptions")
        XCTAssertThrowsError(try relay.publish([1], to: "z")) { XCTAssertEqual(($0 as? RelayError)?.code, .closed) }
        XCTAssertThrowsError(try relay.subscribe("z", handler: inbox.handler)) { XCTAssertEqual(($0 as? RelayError)?.code, .closed) }
        // A second relay on the same directory sees no listener left behind.
        let other = try LocalRelay(directory: directory)
        defer { other.close() }
        try other.publish([2], to: "z")
        usleep(50_000)
        XCTAssertEqual(inbox.count, 0)
    }
}

final class SubscriptionHolder: @unchecked Sendable {
    // Written once before any frame can arrive, read on the receive thread.
    var subscription: RelaySubscription?
}
