import QuireRelay
import QuireSimulation
import XCTest

/// The simulated network alone: each fault does what it says and is counted.
final class FaultyRelayTests: XCTestCase {
    private final class Inbox: @unchecked Sendable {
        let lock = NSLock()
        var frames: [[UInt8]] = []
        func add(_ f: [UInt8]) { lock.lock(); frames.append(f); lock.unlock() }
        var all: [[UInt8]] { lock.lock(); defer { lock.unlock() }; return frames }
    }

    private func network(_ rates: FaultRates, seed: UInt64 = 7) -> (FaultyRelay, SimClock, Inbox, RelaySubscription) {
        let clock = SimClock()
        let relay = FaultyRelay(clock: clock, random: SeededRandom(seed: seed))
        relay.rates = rates
        let inbox = Inbox()
        let subscription = try! relay.endpoint(for: 1).subscribe("to-b") { inbox.add($0) }
        return (relay, clock, inbox, subscription)
    }

    private func frame(_ i: Int) -> [UInt8] { [UInt8(i), 1, 2, 3, 4, 5, 6, 7] }

    func testCleanNetworkDeliversEverythingInOrderWithTheSendersTag() throws {
        let (relay, _, inbox, subscription) = network(.none)
        var tags: [(Int, Int, [Int])] = []
        relay.tagOfSender = { [$0 * 10] }
        relay.onDelivered = { to, from, tag in tags.append((to, from, tag)) }
        for i in 0..<5 { try relay.endpoint(for: 0).publish(frame(i), to: "to-b") }
        XCTAssertEqual(inbox.all.count, 0, "publish only queues")
        XCTAssertEqual(relay.deliverReady(), 5)
        XCTAssertEqual(inbox.all, (0..<5).map(frame))
        XCTAssertEqual(tags.map(\.2), Array(repeating: [0], count: 5))
        XCTAssertEqual(tags.map(\.0), Array(repeating: 1, count: 5))
        XCTAssertEqual(relay.injected.total, 0)
        subscription.cancel()
    }

    func testEachFaultDoesWhatItSaysAndIsCounted() throws {
        var rates = FaultRates()
        rates.drop = 1
        var (relay, clock, inbox, subscription) = network(rates)
        try relay.endpoint(for: 0).publish(frame(1), to: "to-b")
        relay.deliverReady()
        XCTAssertEqual(inbox.all.count, 0)
        XCTAssertEqual(relay.injected[.drop], 1)
        subscription.cancel()

        rates = FaultRates(); rates.duplicate = 1
        (relay, clock, inbox, subscription) = network(rates)
        try relay.endpoint(for: 0).publish(frame(1), to: "to-b")
        clock.advance(ms: 5_000)
        relay.deliverReady()
        XCTAssertEqual(inbox.all, [frame(1), frame(1)])
        XCTAssertEqual(relay.injected[.duplicate], 1)
        subscription.cancel()

        rates = FaultRates(); rates.delay = 1
        (relay, clock, inbox, subscription) = network(rates)
        try relay.endpoint(for: 0).publish(frame(1), to: "to-b")
        relay.deliverReady()
        clock.advance(ms: 15_000)
        relay.deliverReady()
        XCTAssertEqual(inbox.all.count, 0, "a delayed frame is held longer than the 15 s heartbeat")
        clock.advance(ms: 80_000)
        relay.deliverReady()
        XCTAssertEqual(inbox.all, [frame(1)])
        XCTAssertEqual(relay.injected[.delay], 1)
        subscription.cancel()

        rates = FaultRates(); rates.corrupt = 1
        (relay, clock, inbox, subscription) = network(rates)
        try relay.endpoint(for: 0).publish(frame(1), to: "to-b")
        relay.deliverReady()
        XCTAssertEqual(inbox.all.count, 1)
        XCTAssertNotEqual(inbox.all.first, frame(1))
        XCTAssertEqual(inbox.all.first?.count, frame(1).count)
        XCTAssertEqual(relay.injected[.corrupt], 1)
        subscription.cancel()

        rates = FaultRates(); rates.reorder = 1
        (relay, clock, inbox, subscription) = network(rates)
        for i in 0..<4 { try relay.endpoint(for: 0).publish(frame(i), to: "to-b") }
        relay.deliverReady()
        XCTAssertEqual(Set(inbox.all), Set((0..<4).map(frame)))
        XCTAssertNotEqual(inbox.all, (0..<4).map(frame))
        XCTAssertEqual(relay.injected[.reorder], 3, "every delivery with another frame ready overtakes")
        subscription.cancel()

        (relay, clock, inbox, subscription) = network(.none)
        relay.partition = [0: 0, 1: 1]
        try relay.endpoint(for: 0).publish(frame(1), to: "to-b")
        relay.deliverReady()
        XCTAssertEqual(inbox.all.count, 0)
        XCTAssertEqual(relay.injected[.partition], 1)
        relay.partition = nil
        try relay.endpoint(for: 0).publish(frame(2), to: "to-b")
        relay.deliverReady()
        XCTAssertEqual(inbox.all, [frame(2)])
        subscription.cancel()
    }

    func testNoMailboxAndNoDeliveryAfterCancel() throws {
        let (relay, _, inbox, subscription) = network(.none)
        try relay.endpoint(for: 0).publish(frame(1), to: "nobody-listens")
        try relay.endpoint(for: 0).publish(frame(2), to: "to-b")
        subscription.cancel()
        XCTAssertEqual(relay.framesInFlight, 0, "frames to a listener that left are gone")
        relay.deliverReady()
        XCTAssertEqual(inbox.all.count, 0)
        XCTAssertThrowsError(try relay.endpoint(for: 0).publish([UInt8](repeating: 0, count: relay.maxFrameSize + 1), to: "to-b"))
    }

    func testTheSameSeedBreaksTheSameFrames() throws {
        var rates = FaultRates()
        rates.drop = 0.3; rates.duplicate = 0.2; rates.reorder = 0.3; rates.corrupt = 0.1; rates.delay = 0.1
        func run() throws -> ([[UInt8]], FaultCounts) {
            let (relay, clock, inbox, subscription) = network(rates, seed: 99)
            for i in 0..<200 {
                try relay.endpoint(for: 0).publish(frame(i), to: "to-b")
                if i % 7 == 0 { relay.deliverReady(); clock.advance(ms: 1_000) }
            }
            clock.advance(ms: 100_000)
            relay.deliverReady()
            subscription.cancel()
            return (inbox.all, relay.injected)
        }
        let (first, second) = (try run(), try run())
        XCTAssertEqual(first.0, second.0)
        XCTAssertEqual(first.1, second.1)
        for kind in [FaultKind.drop, .duplicate, .reorder, .corrupt, .delay] { XCTAssertGreaterThan(first.1[kind], 0, "\(kind)") }
    }
}
