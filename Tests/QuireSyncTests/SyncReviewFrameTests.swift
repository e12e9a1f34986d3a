import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import XCTest
@testable import QuireSync

/// Review findings in the frame layer, each proven on a simulated fleet.
final class SyncReviewFrameTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    /// An anonymous box proves nothing about who sealed it: anyone who knows
    /// the account's userIDHash (a revoked device does) can seal one that
    /// claims to be a live sibling. Such a frame must not move that
    /// sibling's replay state, or every real frame of the sibling is refused
    /// as a replay from then on (and the poisoned floor is persisted).
    func testAnonymousFrameClaimingASiblingCannotPoisonItsReplayState() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)

        // The forger: a stranger's box key, our account's userIDHash, b's id,
        // a session that starts at the end of time.
        let forged = FrameIdentity(deviceID: b.id, userIDHash: a.identity.userIDHash, box: BoxKeyPair())
        var sealer = FrameSealer(identity: forged, session: [1, 2, 3, 4, 5, 6, 7, 8], sessionStart: UInt64.max, maxFrameSize: 64 << 10)
        let frame = sealer.sealAnonymously(SyncMessage(subKind: .introduce, payload: IntroduceMessage(row: try b.rosterRow()).encoded()),
                                           to: a.id, boxKey: a.identity.deviceBox.publicKey)
        try fleet.relay.publish(frame, to: fleet.engines[0].channel)
        fleet.tick()

        // B edits; A must still take it.
        let key = try b.store.put(note("after the forgery", "must arrive")).key
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(maxTicks: 400), 0, "a refuses b's frames after a forged introduce")
        XCTAssertNotNil(try a.store.row(.notebook, key))
        XCTAssertEqual(fleet.engines[0].status().dropped[FrameDrop.replay.rawValue] ?? 0, 0)
    }

    /// Anonymous frames with made-up sender ids must not grow the replay
    /// state (kept in memory and persisted) without bound.
    func testAnonymousFramesFromMadeUpSendersDoNotGrowReplayState() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let a = fleet.devices[0]
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        let before = fleet.engines[0].link.replay.floors.count
        let random = SeededRandom(seed: 9)
        for _ in 0..<500 {
            let id = DeviceID(bytes: random.bytes(16))!
            var sealer = FrameSealer(identity: FrameIdentity(deviceID: id, userIDHash: a.identity.userIDHash, box: BoxKeyPair()),
                                     session: random.bytes(8), sessionStart: 1, maxFrameSize: 64 << 10)
            let frame = sealer.sealAnonymously(SyncMessage(subKind: .introduce, payload: [0xA0]), to: a.id,
                                               boxKey: a.identity.deviceBox.publicKey)
            try fleet.relay.publish(frame, to: fleet.engines[0].channel)
        }
        fleet.tick()
        XCTAssertEqual(fleet.engines[0].link.replay.floors.count, before)
    }

    /// Nor may such a frame make a silent sibling look alive: it proves
    /// nothing about who sent it, so it does not move "last seen" or cancel
    /// the retries aimed at that sibling.
    func testAnonymousFrameDoesNotMakeASilentSiblingLookSeen() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        fleet.engines[1].stop()
        for _ in 0..<200 { fleet.tick(ms: 500) }   // b silent for 100 s
        func lastSeen() -> Int64? { fleet.engines[0].status().siblings.first { $0.device == b.id.hex }?.lastSeen }
        let seenBefore = try XCTUnwrap(lastSeen())
        let forged = FrameIdentity(deviceID: b.id, userIDHash: a.identity.userIDHash, box: BoxKeyPair())
        var sealer = FrameSealer(identity: forged, session: [9, 9, 9, 9, 9, 9, 9, 9], sessionStart: 1, maxFrameSize: 64 << 10)
        let frame = sealer.sealAnonymously(SyncMessage(subKind: .introduce, payload: IntroduceMessage(row: try b.rosterRow()).encoded()),
                                           to: a.id, boxKey: a.identity.deviceBox.publicKey)
        try fleet.relay.publish(frame, to: fleet.engines[0].channel)
        fleet.tick()
        XCTAssertEqual(lastSeen(), seenBefore, "a forged introduce is not a sign of life")
    }
}
