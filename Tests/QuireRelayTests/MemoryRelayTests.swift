import QuireRelay
import XCTest

final class MemoryRelayTests: XCTestCase {
    func testDeliveryIsDrivenStepByStep() throws {
        let relay = MemoryRelay()
        let inbox = FrameInbox()
        let subscription = try relay.subscribe("a", handler: inbox.handler)
        try relay.publish([1], to: "a")
        try relay.publish([2], to: "a")
        XCTAssertEqual(inbox.count, 0, "publish must not deliver by itself")
        XCTAssertEqual(relay.pending.map(\.frame), [[1], [2]])
        XCTAssertTrue(relay.deliver(at: 1))
        XCTAssertEqual(inbox.received, [[2]])
        XCTAssertEqual(relay.deliverAll(), 1)
        XCTAssertEqual(inbox.received, [[2], [1]])
        XCTAssertFalse(relay.deliver())
        subscription.cancel()
    }

    func testDropDuplicateAndNoMailbox() throws {
        let relay = MemoryRelay()
        try relay.publish([0], to: "a")   // nobody listens: gone
        let inbox = FrameInbox()
        let subscription = try relay.subscribe("a", handler: inbox.handler)
        try relay.publish([1], to: "a")
        try relay.publish([2], to: "a")
        relay.drop(at: 0)
        relay.duplicate(at: 0)
        relay.deliverAll()
        XCTAssertEqual(inbox.received, [[2], [2]])
        subscription.cancel()
        try relay.publish([3], to: "a")
        XCTAssertTrue(relay.pending.isEmpty, "a cancelled subscriber still gets deliveries")
    }

    func testEachSubscriberHasItsOwnDeliveryAndReorderWorks() throws {
        let relay = MemoryRelay()
        let first = FrameInbox(), second = FrameInbox()
        let a = try relay.subscribe("c", handler: first.handler)
        let b = try relay.subscribe("c", handler: second.handler)
        try relay.publish([1], to: "c")
        try relay.publish([2], to: "c")
        XCTAssertEqual(relay.pending.count, 4)
        relay.reorderPending { $0.reverse() }
        relay.drop(at: 0)   // [2] to the second subscriber is lost
        relay.deliverAll()
        XCTAssertEqual(first.received, [[2], [1]])
        XCTAssertEqual(second.received, [[1]])
        _ = (a, b)
    }

    func testHandlersMayPublishDuringDelivery() throws {
        let relay = MemoryRelay()
        let inbox = FrameInbox()
        let echo = try relay.subscribe("ping", handler: { frame in try? relay.publish(frame + [0], to: "pong") })
        let sink = try relay.subscribe("pong", handler: inbox.handler)
        try relay.publish([7], to: "ping")
        XCTAssertEqual(relay.deliverAll(), 2)
        XCTAssertEqual(inbox.received, [[7, 0]])
        XCTAssertThrowsError(try relay.publish([UInt8](repeating: 0, count: relay.maxFrameSize + 1), to: "ping"))
        _ = (echo, sink)
    }
}

final class RelaySpecTests: XCTestCase {
    func testParsesEachForm() throws {
        XCTAssertEqual(try RelaySpec(parsing: "local:/var/x"), .local(directory: "/var/x"))
        XCTAssertEqual(try RelaySpec(parsing: "redis://10.0.0.2:7000"), .redis(url: "redis://10.0.0.2:7000"))
        guard case .local(let directory) = try RelaySpec(parsing: "local") else { return XCTFail("local is not local") }
        let expected = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { $0 + "/quire-relay" } ?? "/tmp/quire-relay-\(getuid())"
        XCTAssertEqual(directory, expected)
    }

    func testRejectsWhatItCannotUse() {
        for bad in ["", "udp://x", "local:relative/dir", "redis://:1"] {
            XCTAssertThrowsError(try RelaySpec(parsing: bad), bad) { XCTAssertEqual(($0 as? RelayError)?.code, .invalidAddress, "\($0)") }
        }
    }

    func testMakeRelayOpensALocalRelay() throws {
        let directory = try makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let relay = try makeRelay(from: "local:" + directory + "/r")
        defer { relay.close() }
        XCTAssertTrue(relay is LocalRelay)
        let inbox = FrameInbox()
        let subscription = try relay.subscribe("x", handler: inbox.handler)
        try relay.publish([5], to: "x")
        XCTAssertEqual(inbox.wait(for: 1), [[5]])
        subscription.cancel()
    }
}
