import Foundation
import QuireCore
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// Which round committed a generation (`GenerationRound`), and why a device
/// behind the fleet needs to know: a folder kept by a file-sync service may
/// still show, at the committed generation, the anchor of a round abandoned
/// after its upload.
extension BarrierTests {
    /// Every device records the round that committed its generation, the
    /// one the anchor names; a device behind whose folder shows another
    /// round's anchor at that generation (one that claims nothing and lacks
    /// a note written before the commit) does not recover from it: a
    /// sibling names the committed round, so it catches up from that
    /// sibling's snapshot, and the note stays (the simulator's seed 629
    /// with --lagging-cloud --revocations lost four rows on every device).
    func testADeviceBehindRecoversOnlyFromTheAnchorOfTheRoundTheFleetCommitted() throws {
        let (victim, store, keys, backup) = try notesSyncedAndAVictimBackedUp()
        try store.delete(.notebook, keys[0])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1])
        let folder = CloudFolder(path: cloud, accountID: devices[victim].identity.userIDHash)
        let keysNow = engines[leader].anchorKeys
        var anchor = try XCTUnwrap(try folder.newest(keys: keysNow)).1
        let round = try XCTUnwrap(anchor.round)
        for d in devices { XCTAssertEqual(try d.store.generationRound(at: 1), round, "\(d.name) records the committed round") }
        XCTAssertNil(try devices[0].store.generationRound(at: 2), "a record says nothing of another generation")

        // The folder as a lagging sync service shows it: another round's
        // anchor at generation 1, without the note keys[4], claiming nothing,
        // and no commit record yet.
        anchor.round = [UInt8](repeating: 0x5A, count: 16)
        anchor.rows.removeAll { $0.key == keys[4] }
        anchor.graveyardSince = nil
        anchor.graveyard = []
        try folder.write(try AnchorFile.seal(anchor, accountID: devices[victim].identity.userIDHash, keys: keysNow, at: clock.now()))
        try FileManager.default.removeItem(atPath: folder.commitRecordPath)

        let restored = try restoredReplica(of: victim, from: backup, seed: 4244)
        XCTAssertNotNil(try restored.row(.notebook, keys[4])?.content)
        let generation = try restartedEngine(of: victim, on: restored, cloud: folder, seed: 97)
        XCTAssertEqual(generation.get(), 0, "no device is known to have committed generation 1 yet")
        tick(100)
        XCTAssertEqual(generation.get(), 1, "caught up")
        XCTAssertTrue(engines[victim].status().barrier?.contains("snapshot") ?? false, engines[victim].status().barrier ?? "-")
        XCTAssertEqual(try restored.generationRound(at: 1), round, "the snapshot names the round too")
        XCTAssertNotNil(try restored.row(.notebook, keys[4])?.content, "the note the other round's anchor lacks stays")
        XCTAssertNil(try restored.row(.notebook, keys[0])?.content, "the collected one stays gone")
        for d in devices { XCTAssertNotNil(try d.store.row(.notebook, keys[4])?.content, "\(d.name) keeps it") }
        XCTAssertEqual(try restored.roots(), try store.roots())
    }

    /// At start-up, with no sibling heard: the folder shows another round's
    /// anchor at the committed generation, and the committed round's anchor
    /// only as a sync service's conflict copy beside it. The commit record
    /// names the round, so the device recovers from the copy (the
    /// simulator's seed 853 with --lagging-cloud --revocations recovered
    /// from the other one and brought a collected row back).
    func testAtStartUpTheCommitRecordsRoundPicksTheCommittedAnchor() throws {
        let (restored, generation, keys, _) = try startingBehindBesideAnotherRoundsAnchor(copyKept: true)
        XCTAssertEqual(generation.get(), 1, "recovered at start-up, from the committed round's copy")
        XCTAssertTrue(engines[(leader + 1) % 3].status().barrier?.contains("recovered from the cloud anchor") ?? false)
        XCTAssertNil(try restored.row(.notebook, keys[0])?.content, "the row the committed round collected does not come back")
    }

    /// The same with the copy gone too: it waits, and says why. When the
    /// sync service brings the committed anchor (as a conflict copy), the
    /// device, still hearing no sibling, finds it on its own within the
    /// recheck interval and recovers from it.
    func testAtStartUpWithoutTheCommittedRoundsAnchorTheDeviceWaits() throws {
        let (restored, generation, keys, committed) = try startingBehindBesideAnotherRoundsAnchor(copyKept: false)
        let victim = (leader + 1) % 3
        XCTAssertEqual(generation.get(), 0, "it waits")
        let words = engines[victim].status().anchor ?? ""
        XCTAssertTrue(words.contains("is not of the round that committed it"), words)
        XCTAssertNotNil(try restored.row(.notebook, keys[0])?.content, "nothing was recovered: the backup's rows as they were")

        let folder = CloudFolder(path: cloud, accountID: devices[victim].identity.userIDHash)
        try committed.write(to: URL(fileURLWithPath: folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (conflicted copy).qanchor")))
        let others = Set(engines.indices).subtracting([victim])
        tick(Int(SyncEngine.anchorRecheckMilliseconds / 100) + 20, skipping: others)
        XCTAssertEqual(generation.get(), 1, "recovered once the committed anchor landed, with no sibling heard")
        XCTAssertNil(try restored.row(.notebook, keys[0])?.content, "the row the committed round collected is gone")
        XCTAssertNil(engines[victim].status().anchor)
    }

    /// Generation 1 committed (keys[0] collected); the folder's canonical
    /// anchor replaced by another round's at generation 1 (keys[0] live in
    /// it, no claim), the committed one kept beside it as a conflict copy or
    /// not; a device put back from before starts with no sibling heard.
    func startingBehindBesideAnotherRoundsAnchor(copyKept: Bool) throws -> (ReplicaStore, Generation, [RowKey], committed: Data) {
        let (victim, store, keys, backup) = try notesSyncedAndAVictimBackedUp()
        let before = try store.rows(.notebook, from: [], to: nil)
        try store.delete(.notebook, keys[0])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1])
        let folder = CloudFolder(path: cloud, accountID: devices[victim].identity.userIDHash)
        let keysNow = engines[leader].anchorKeys
        XCTAssertNotNil(folder.committedRound(keys: keysNow)?.round, "the record names the round")
        let committedBytes = try Data(contentsOf: URL(fileURLWithPath: folder.anchorPath))
        var other = try XCTUnwrap(try folder.newest(keys: keysNow)).1
        other.round = [UInt8](repeating: 0x5B, count: 16)
        other.rows = other.rows.filter { $0.namespace != .notebook } + before
        other.graveyard = []
        other.graveyardSince = nil
        try folder.write(try AnchorFile.seal(other, accountID: devices[victim].identity.userIDHash, keys: keysNow, at: clock.now()))
        if copyKept {
            try committedBytes.write(to: URL(fileURLWithPath: folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (conflicted copy).qanchor")))
        }
        let restored = try restoredReplica(of: victim, from: backup, seed: 4245)
        let generation = try restartedEngine(of: victim, on: restored, cloud: folder, seed: 96)
        return (restored, generation, keys, committedBytes)
    }

    /// The round rides the digest (field 7) and the snapshot (field 9);
    /// messages from before read as not known, and a nonce of another
    /// length is refused.
    func testTheRoundOfAGenerationTravelsInDigestsAndSnapshots() throws {
        let nonce = [UInt8](repeating: 3, count: 16)
        XCTAssertEqual(try DigestMessage.decode(DigestMessage(digest: [1, 2], round: nonce).encoded()).round, nonce)
        XCTAssertNil(try DigestMessage.decode(DigestMessage(digest: [1, 2]).encoded()).round)
        let bad = CBORWriter.encode(.map([(.unsigned(1), .bytes([1])), (.unsigned(7), .bytes([1, 2, 3]))]))
        XCTAssertThrowsError(try DigestMessage.decode(bad))
        let part = SnapshotResponse(generation: 2, namespace: .notebook, part: 0, parts: 1, rows: [], round: nonce)
        XCTAssertEqual(try SnapshotResponse.decode(part.encoded()).round, nonce)
        XCTAssertNil(try SnapshotResponse.decode(SnapshotResponse(generation: 2, namespace: .notebook, part: 0, parts: 1, rows: []).encoded()).round)
    }
}
