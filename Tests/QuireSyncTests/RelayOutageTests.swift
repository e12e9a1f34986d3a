import Foundation
import QuireCore
import QuireRelay
import QuireStore
import Synchronization
import XCTest
@testable import QuireSync

/// A relay that can be taken down: `publish` fails as a server that cannot
/// be reached does, and delivery goes on through the memory relay inside.
private final class SwitchableRelay: Relay {
    let inner = MemoryRelay()
    let isDown = Mutex(false)
    var maxFrameSize: Int { inner.maxFrameSize }

    func publish(_ frame: [UInt8], to channel: String) throws {
        if isDown.withLock({ $0 }) { throw RelayError(.unreachable, "connect to 127.0.0.1:6390: connection refused") }
        try inner.publish(frame, to: channel)
    }

    func subscribe(_ channel: String, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription {
        try inner.subscribe(channel, handler: handler)
    }

    func close() { inner.close() }
}

/// A relay outage is said once when it begins and once when it ends, in the
/// status snapshot and the log, however long it lasts; a device that only
/// listens learns of it from its own heartbeats.
final class RelayOutageTests: XCTestCase {
    func testAnOutageIsSaidWhenItBeginsAndWhenItEnds() throws {
        let base = makeShortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let clock = SimClock()
        let relay = SwitchableRelay()
        let devices = try makeFleet(["a", "b"], in: base, clock: clock)
        let engines = devices.enumerated().map { index, device in
            device.makeEngine(relay: relay, clock: clock, random: SeededRandom(seed: UInt64(index) + 3), withStatus: true)
        }
        for engine in engines { try engine.attach() }
        func tick(_ count: Int, ms: UInt64 = 500) {
            for _ in 0..<count {
                _ = relay.inner.deliverAll()
                for engine in engines { engine.step() }
                clock.advance(ms: ms)
            }
        }
        tick(40)
        XCTAssertTrue(engines.allSatisfy { $0.isConverged() })
        XCTAssertNil(engines[1].status().relayUnreachableSince)

        relay.isDown.withLock { $0 = true }
        try devices[0].store.put(note("outage", "written while the relay is down"))
        tick(80)   // 40 s: heartbeats from both sides fail
        for engine in engines {
            let status = engine.status()
            XCTAssertNotNil(status.relayUnreachableSince, "a listener learns of the outage from its heartbeats too")
            XCTAssertEqual(status.events.filter { $0.contains("the relay is unreachable") }.count, 1, "\(status.events)")
        }
        XCTAssertNil(try devices[1].store.find(.notebook, name: "outage").first)

        relay.isDown.withLock { $0 = false }
        tick(80)
        XCTAssertNotNil(try devices[1].store.find(.notebook, name: "outage").first, "sync goes on by itself")
        for engine in engines {
            let status = engine.status()
            XCTAssertNil(status.relayUnreachableSince)
            XCTAssertEqual(status.events.filter { $0.contains("the relay answers again") }.count, 1, "\(status.events)")
        }
        // A second outage is said again.
        relay.isDown.withLock { $0 = true }
        tick(80)
        XCTAssertEqual(engines[0].status().events.filter { $0.contains("the relay is unreachable") }.count, 2)
    }

    /// A catch-up ends a while after its last pull, even with a device away
    /// (heard from once, out of sync since): it is not shown for ever.
    func testACatchUpEndsWithADeviceAway() throws {
        let base = makeShortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let fleet = try SimFleet(["a", "b", "away"], base: base)
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        fleet.engines[2].stop()
        for i in 0..<200 { try fleet.devices[1].store.put(note("new \(i)", "from b \(i)")) }
        var sawCatchUp = false
        for _ in 0..<400 {
            fleet.tick(ms: 100)
            if fleet.engines[0].catchUp() != nil { sawCatchUp = true }
            if try fleet.devices[0].store.counts(.notebook).live == 200 { break }
        }
        XCTAssertTrue(sawCatchUp, "the pull showed as a catch-up")
        XCTAssertEqual(try fleet.devices[0].store.counts(.notebook).live, 200)
        for _ in 0..<60 { fleet.tick(ms: 100) }
        XCTAssertFalse(fleet.engines[0].status().siblings.first { $0.name == "away" }?.inSync ?? true, "the device away is out of sync")
        XCTAssertNil(fleet.engines[0].catchUp(), "the catch-up ended")
    }
}
