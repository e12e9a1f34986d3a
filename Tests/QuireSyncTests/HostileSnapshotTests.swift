import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// A sibling's snapshot is no way around what a reconcile refuses: a
/// device behind the fleet that catches up from a hostile (or broken)
/// sibling's snapshot refuses a tombstone in `devices`, a roster row that
/// is no verified statement, and rows over the size limit, and a refused
/// row never reads as one the fleet deleted.
final class HostileSnapshotTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func key(_ n: UInt8) -> RowKey { RowKey(bytes: [UInt8](repeating: 0, count: 15) + [n])! }

    func testASnapshotCannotInjectWhatAReconcileWouldRefuse() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let engine = fleet.engines[1]
        // A note b got from a earlier (so not b's own unshared write): a
        // snapshot lacking it would have it removed as deleted by the fleet.
        let shared = try a.store.put(note("shared", "held by both"), key: key(1))
        try b.store.apply([shared])
        try engine.attach()
        for _ in 0..<3 { fleet.tick() }

        var sealer = FrameSealer(identity: FrameIdentity(deviceID: a.id, userIDHash: a.identity.userIDHash, box: a.identity.deviceBox),
                                 session: Array(repeating: 1, count: 8), sessionStart: 1, maxFrameSize: 64 << 10)
        func send(_ kind: SubKind, _ payload: [UInt8]) throws {
            for frame in sealer.seal(SyncMessage(subKind: kind, payload: payload), to: b.id, boxKey: b.identity.deviceBox.publicKey,
                                     messageID: fleet.random.bytes(8)) {
                try fleet.relay.publish(frame, to: engine.channel)
            }
        }
        // a says it is at generation 1: b, with no cloud folder, asks it for a snapshot.
        try send(.stateDigest, DigestMessage(digest: try a.store.digest(generation: 1).encoded()).encoded())
        for _ in 0..<3 { fleet.tick() }

        let aRow = try XCTUnwrap(try a.store.row(.devices, a.id))
        let deletedStatement = Row.tombstone(.devices, a.id, context: aRow.context)
        try a.store.putRosterEntry(DeviceRecord(name: "mallory", certificate: [UInt8](repeating: 5, count: 90)), key: key(2))
        let bogus = try XCTUnwrap(try a.store.row(.devices, key(2)))
        let huge = try a.store.put(.note(Note(title: "huge", body: [UInt8](repeating: 0x61, count: RowLimits.maxBodyBytes + 1),
                                              createdAt: .init(seconds: 0), updatedAt: .init(seconds: 0))), key: key(1))
        let hugeNew = try a.store.put(.note(Note(title: "huge too", body: [UInt8](repeating: 0x62, count: RowLimits.maxBodyBytes + 1),
                                                 createdAt: .init(seconds: 0), updatedAt: .init(seconds: 0))), key: key(3))
        let fine = try a.store.put(note("fine", "a few words"), key: key(4))
        try send(.snapshotResponse, SnapshotResponse(generation: 1, namespace: .devices, part: 0, parts: 2,
                                                     rows: [deletedStatement, bogus, try b.store.row(.devices, b.id)!]).encoded())
        try send(.snapshotResponse, SnapshotResponse(generation: 1, namespace: .notebook, part: 1, parts: 2,
                                                     rows: [huge, hugeNew, fine]).encoded())
        for _ in 0..<20 { fleet.tick() }

        let status = engine.status()
        XCTAssertEqual(status.generation, 0, "b's generation is the closure's (the test does not record it)")
        XCTAssertTrue(status.barrier?.contains("caught up from 'a''s snapshot") ?? false, "\(status.barrier ?? "-") \(status.events)")
        XCTAssertTrue(status.events.contains { $0.contains("refused 4 rows of 'a''s snapshot, as a reconcile would") }, "\(status.events)")
        XCTAssertEqual(try Roster.load(from: b.store, accountKey: b.identity.account.publicKey).roster[a.id]?.trust, .trusted,
                       "the tombstone in devices was refused: a is still on the roster")
        XCTAssertNil(try b.store.row(.devices, key(2)), "a roster row that is no statement never lands")
        XCTAssertGreaterThanOrEqual(status.dropped[FrameDrop.uncertifiedRoster.rawValue] ?? 0, 2)
        XCTAssertEqual(status.dropped[FrameDrop.rowOverLimit.rawValue], 2)
        let kept = try XCTUnwrap(try b.store.row(.notebook, key(1)))
        XCTAssertEqual(kept.content?.displayName, "shared", "a refused row is not taken for a deleted one: b's own copy stands")
        XCTAssertNil(try b.store.row(.notebook, key(3)))
        XCTAssertEqual(try b.store.row(.notebook, key(4))?.content?.displayName, "fine", "the rest of the snapshot is taken")
    }
}
