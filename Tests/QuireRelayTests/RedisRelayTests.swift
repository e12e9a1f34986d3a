import Foundation
import QuireTestSupport
import QuireRelay
import XCTest

/// Real Redis: our own server per test class, or `QUIRE_TEST_REDIS_URL`.
final class RedisRelayTests: XCTestCase {
    nonisolated(unsafe) static var server: RedisServerProcess?
    nonisolated(unsafe) static var startFailure: Error?

    static var externalURL: String? { ProcessInfo.processInfo.environment["QUIRE_TEST_REDIS_URL"] }

    override class func setUp() {
        super.setUp()
        guard externalURL == nil else { return }
        do { server = try RedisServerProcess() } catch { startFailure = error }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
        super.tearDown()
    }

    var url: String = ""

    override func setUpWithError() throws {
        // Fail, not skip: these tests are the only proof the Redis relay works.
        if let failure = Self.startFailure { throw failure }
        url = Self.externalURL ?? Self.server!.url
    }

    /// A channel no other test (or earlier run on a shared server) uses.
    func uniqueChannel() -> String { "test-" + String(UInt64.random(in: .min ... .max), radix: 16) }

    func testPublishReachesSubscriberOnAnotherRelayInstance() throws {
        let listener = try RedisRelay(url: url), sender = try RedisRelay(url: url)
        defer { listener.close(); sender.close() }
        let channel = uniqueChannel()
        let first = FrameInbox(), second = FrameInbox()
        let a = try listener.subscribe(channel, handler: first.handler)
        let b = try listener.subscribe(channel, handler: second.handler)
        try sender.publish(Array("hello".utf8), to: channel)
        XCTAssertEqual(first.wait(for: 1), [Array("hello".utf8)])
        XCTAssertEqual(second.wait(for: 1), [Array("hello".utf8)])
        _ = (a, b)
    }

    func testBinaryFramesWithZeroBytesAreExact() throws {
        let listener = try RedisRelay(url: url), sender = try RedisRelay(url: url)
        defer { listener.close(); sender.close() }
        let channel = uniqueChannel()
        let inbox = FrameInbox()
        let subscription = try listener.subscribe(channel, handler: inbox.handler)
        let frames: [[UInt8]] = [[0], [0, 0, 0], [0, 1, 0, 255, 0, 13, 10, 0], Array(0...255), []]
        for frame in frames { try sender.publish(frame, to: channel) }
        XCTAssertEqual(inbox.wait(for: frames.count), frames)
        subscription.cancel()
    }

    func testOneMebibyteFramesRoundTripAndOversizeIsRefused() throws {
        let listener = try RedisRelay(url: url), sender = try RedisRelay(url: url)
        defer { listener.close(); sender.close() }
        XCTAssertEqual(sender.maxFrameSize, 1024 * 1024)
        let channel = uniqueChannel()
        let inbox = FrameInbox()
        let subscription = try listener.subscribe(channel, handler: inbox.handler)
        let frames = (1...3).map { patternBytes(count: sender.maxFrameSize, seed: UInt64($0)) }
        for frame in frames { try sender.publish(frame, to: channel) }
        let received = inbox.wait(for: 3, timeout: 10)
        XCTAssertEqual(received.count, 3)
        XCTAssertTrue(received == frames, "1 MiB frames differ after the round trip")
        XCTAssertThrowsError(try sender.publish([UInt8](repeating: 0, count: sender.maxFrameSize + 1), to: channel)) {
            XCTAssertEqual(($0 as? RelayError)?.code, .frameTooLarge)
        }
        subscription.cancel()
    }

    func testNoMailboxAndCancelStopsDelivery() throws {
        let relay = try RedisRelay(url: url)
        defer { relay.close() }
        let channel = uniqueChannel()
        try relay.publish([1], to: channel)   // nobody listens: gone, and no error
        let inbox = FrameInbox()
        let subscription = try relay.subscribe(channel, handler: inbox.handler)
        try relay.publish([2], to: channel)
        XCTAssertEqual(inbox.wait(for: 1), [[2]])
        subscription.cancel()
        try relay.publish([3], to: channel)
        usleep(100_000)
        XCTAssertEqual(inbox.received, [[2]], "frame before subscribing or after cancel was delivered")
    }

    func testRefusedConnectionAndBadURLSayWhatFailed() throws {
        let port = try freeTCPPort()
        XCTAssertThrowsError(try RedisRelay(url: "redis://127.0.0.1:\(port)")) { error in
            XCTAssertEqual((error as? RelayError)?.code, .unreachable)
            XCTAssertEqual("\(error)", "cannot reach Redis at 127.0.0.1:\(port): connection refused")
        }
        for bad in ["http://127.0.0.1:6379", "redis://", "redis://host:99999", "redis://host:6379/extra"] {
            XCTAssertThrowsError(try RedisRelay(url: bad), bad) { error in
                XCTAssertEqual((error as? RelayError)?.code, .invalidAddress, "\(error)")
                XCTAssertTrue("\(error)".hasPrefix("invalid Redis URL"), "\(error)")
            }
        }
        XCTAssertFalse("\(RelayError(.invalidAddress, ""))".contains("secret"))
        XCTAssertThrowsError(try RedisRelay(url: "redis://:secret@host:0")) { XCTAssertFalse("\($0)".contains("secret")) }
    }

    func testSubscriberReconnectsAfterServerRestart() throws {
        guard let server = Self.server else { throw XCTSkip("using QUIRE_TEST_REDIS_URL: cannot restart that server") }
        let listener = try RedisRelay(url: url), sender = try RedisRelay(url: url)
        defer { listener.close(); sender.close() }
        let channel = uniqueChannel()
        let inbox = FrameInbox()
        let subscription = try listener.subscribe(channel, handler: inbox.handler)
        try sender.publish(Array("before".utf8), to: channel)
        XCTAssertEqual(inbox.wait(for: 1), [Array("before".utf8)])

        server.kill()
        XCTAssertThrowsError(try sender.publish(Array("during".utf8), to: channel)) {
            XCTAssertEqual(($0 as? RelayError)?.code, .unreachable, "\($0)")
        }
        try server.start()

        // Lossy by contract: keep publishing until the re-subscribed reader hears one.
        let deadline = Date().addingTimeInterval(15)
        var attempt = 0
        while Date() < deadline && inbox.count < 2 {
            attempt += 1
            try? sender.publish(Array("after-\(attempt)".utf8), to: channel)
            usleep(100_000)
        }
        let received = inbox.received.map { String(decoding: $0, as: UTF8.self) }
        XCTAssertGreaterThanOrEqual(received.count, 2, "no frame arrived after the restart")
        XCTAssertEqual(received.first, "before")
        XCTAssertFalse(received.contains("during"))
        XCTAssertTrue(received.dropFirst().allSatisfy { $0.hasPrefix("after-") }, "\(received)")
        subscription.cancel()
    }

    /// Redis 6 ACL: `redis://user:password@host:port` authenticates as that
    /// user (percent-escapes decoded); a wrong password is refused by name.
    func testAnACLUserAndPasswordInTheURLAuthenticate() throws {
        let server = try TestRedisServer(arguments: ["--user", "quire", "on", ">s3cr:t@x", "~*", "&*", "+@all", "--user", "default", "off"])
        defer { server.stop() }
        let hostPort = server.url.dropFirst("redis://".count)
        let good = "redis://quire:s3cr%3At%40x@" + hostPort
        let listener = try RedisRelay(url: good), sender = try RedisRelay(url: good)
        defer { listener.close(); sender.close() }
        let channel = uniqueChannel()
        let inbox = FrameInbox()
        let subscription = try listener.subscribe(channel, handler: inbox.handler)
        defer { subscription.cancel() }
        try sender.publish([1, 2, 3], to: channel)
        XCTAssertEqual(inbox.wait(for: 1), [[1, 2, 3]])
        XCTAssertThrowsError(try RedisRelay(url: "redis://quire:wrong@" + hostPort)) { XCTAssertTrue("\($0)".contains("refused"), "\($0)") }
        XCTAssertThrowsError(try RedisRelay(url: "redis://" + hostPort).publish([1], to: channel), "the default user is off")
    }
}
