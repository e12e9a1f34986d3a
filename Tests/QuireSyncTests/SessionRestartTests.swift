import Foundation
import QuireCore
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// A device whose directory was put back from a copy carries an older
/// session stamp in `sync-state.json`; under a clock not past the session it
/// started since, its siblings refused every frame of it as a replay,
/// silently (the simulator's seeds 986 and 21696, and main's 31615). A
/// sibling's digest now says which session of ours it accepted last.
final class SessionRestartTests: XCTestCase {
    /// A device's own wall clock, set back by hand.
    final class SteppedClock: Clock, @unchecked Sendable {
        let base: SimClock
        var offsetSeconds: Int64 = 0
        init(_ base: SimClock) { self.base = base }
        func now() -> Timestamp { Timestamp(seconds: base.now().seconds + offsetSeconds) }
        func monotonicMilliseconds() -> UInt64 { base.monotonicMilliseconds() }
    }

    func testTheRecipientsSessionTravelsInTheDigestAndOldMessagesStillRead() throws {
        let seen = SessionSeen(start: 1_700_000_000_123, id: [1, 2, 3, 4, 5, 6, 7, 8])
        let message = DigestMessage(digest: [9, 9], echo: [], recipientSession: seen)
        XCTAssertEqual(try DigestMessage.decode(message.encoded()), message)
        XCTAssertNil(try DigestMessage.decode(DigestMessage(digest: [9]).encoded()).recipientSession)
        XCTAssertTrue(seen.isAhead(ofStart: seen.start - 1, id: seen.id!))
        XCTAssertTrue(seen.isAhead(ofStart: seen.start, id: [8, 7, 6, 5, 4, 3, 2, 1]), "same stamp, another session: the guard flips a coin")
        XCTAssertFalse(seen.isAhead(ofStart: seen.start, id: seen.id!))
        XCTAssertFalse(seen.isAhead(ofStart: seen.start + 1, id: seen.id!))
        XCTAssertTrue(SessionSeen(start: 5, id: nil).isAhead(ofStart: 5, id: [0, 0, 0, 0, 0, 0, 0, 1]),
                      "a receiver that restarted closed our session: start a new one")
        XCTAssertFalse(SessionSeen(start: 5, id: nil).isAhead(ofStart: 6, id: [0, 0, 0, 0, 0, 0, 0, 1]))
    }

    func testADeviceCopiedBackUnderAClockBehindItsLastSessionIsHeardAgain() throws {
        let base = makeShortTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let clock = SimClock()
        clock.advance(ms: 1_000_000_000)
        let devices = try makeFleet(["a", "b"], in: base, clock: clock)
        let relay = MemoryRelay(maxFrameSize: 64 << 10)
        let aClock = SteppedClock(clock)
        var starts = 0
        func engine(_ i: Int, _ deviceClock: any Clock) -> SyncEngine {
            starts += 1
            let d = devices[i]
            return SyncEngine(SyncEngine.Dependencies(store: d.store, identity: d.identity, relay: relay, clock: deviceClock,
                                                      random: SeededRandom(seed: UInt64(starts) * 131), statePath: d.dir + "/sync-state.json"))
        }
        var a = engine(0, aClock)
        let b = engine(1, clock)
        func tick(_ n: Int) {
            for _ in 0..<n {
                relay.deliverAll()
                a.step()
                b.step()
                clock.advance(ms: 100)
            }
        }
        try a.attach()
        try b.attach()
        tick(50)
        let statePath = devices[0].dir + "/sync-state.json"
        let copy = try XCTUnwrap(FileManager.default.contents(atPath: statePath))
        // A later session, which b accepts.
        a.stop()
        clock.advance(ms: 60_000)
        a = engine(0, aClock)
        try a.attach()
        tick(50)
        // The copy goes back, under a clock set back two minutes.
        a.stop()
        try copy.write(to: URL(fileURLWithPath: statePath))
        aClock.offsetSeconds = -120
        a = engine(0, aClock)
        try a.attach()
        try devices[0].store.put(.plan(Plan(title: "after the copy", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        tick(400)    // past b's heartbeat, whose digest names a's last session
        XCTAssertEqual(try devices[1].store.counts(.plans).live, 1, "b hears a again")
        XCTAssertTrue(a.status().events.contains { $0.contains("started a new session after it") }, a.status().events.joined(separator: "\n"))
    }
}
