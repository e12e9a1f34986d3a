import Foundation
import QuireCore
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// Which rounds a graveyard names in full (`GraveyardCoverage`), and why a
/// device catching up from a sibling's snapshot needs to know.
extension BarrierTests {
    /// The leader commits generation 1; the commit never reaches the two
    /// others (a partition). At generation 0 still, one of them edits a note
    /// and the other receives that edit. Then both catch up from the
    /// leader's snapshot (the anchor is gone from the folder): the leader's
    /// graveyard names every round since generation 0, so the edit, which no
    /// round collected, stays on every device (the simulator's seed 6270
    /// with --cloud-and-power-faults --revocations lost it: without the
    /// claim, a write of another device the snapshot does not hold was taken
    /// for a collected one).
    func testAWriteMadeAfterARoundAgreedSurvivesCatchingUpFromASiblingsSnapshot() throws {
        let (_, store, keys, _) = try notesSyncedAndAVictimBackedUp()
        let others = devices.indices.filter { $0 != leader }
        let channels = Set(others.map { SyncChannel.name(userIDHash: devices[$0].identity.userIDHash, device: devices[$0].id) })
        try store.delete(.notebook, keys[0])
        // Step by step: the leader's commit is still on the relay when it moves.
        for _ in 0..<600 where generations[leader].get() == 0 { tick(1) }
        XCTAssertEqual(generations[leader].get(), 1, "the leader committed")
        // The commit is lost on the way to both others, and the leader is cut off.
        relay.reorderPending { $0.removeAll { channels.contains($0.channel) } }
        XCTAssertEqual(try store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1))
        let folder = CloudFolder(path: cloud, accountID: devices[leader].identity.userIDHash)
        try FileManager.default.removeItem(atPath: folder.anchorPath)

        let (editor, carrier) = (others[0], others[1])
        let edited = try devices[editor].store.put(.note(Note(title: "n3", body: Array("words 3\nwritten after the round agreed\n".utf8),
                                                              createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))),
                                                   key: keys[3])
        tick(60, skipping: [leader])
        relay.reorderPending { $0.removeAll { !channels.contains($0.channel) } }
        XCTAssertEqual(try devices[carrier].store.row(.notebook, keys[3])?.heads.map(\.dot), edited.heads.map(\.dot), "the edit reached the other device at generation 0")
        XCTAssertEqual(generations.map { $0.get() }.filter { $0 == 0 }.count, 2)

        tick(200)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1], "both caught up")
        for d in devices {
            let body = try XCTUnwrap(try d.store.row(.notebook, keys[3]), "the note is on \(d.name)")
            XCTAssertFalse(body.isTombstone, "the note is live on \(d.name)")
            XCTAssertEqual(body.heads.map(\.dot), edited.heads.map(\.dot), "the edit stands on \(d.name)")
            XCTAssertNil(try d.store.row(.notebook, keys[0])?.content, "the collected note stays gone on \(d.name)")
        }
        for i in others {
            XCTAssertTrue(engines[i].status().barrier?.contains("snapshot") ?? false, engines[i].status().barrier ?? "-")
            XCTAssertEqual(try devices[i].store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1), "the claim came with the snapshot")
        }
    }

    /// A follower that committed a round whose leader sent the whole
    /// collection covers it, and a device whose graveyard misses a round
    /// claims nothing a snapshot would carry.
    func testEveryDeviceThatCommitsARoundCoversItAndAGapEndsTheClaim() throws {
        try makeFleet3()
        let keys = try deleteSome()
        for e in engines { try e.attach() }
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1])
        for d in devices {
            XCTAssertEqual(try d.store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1), d.name)
            XCTAssertEqual(Set(try d.store.graveyard().map(\.key)), Set(keys[0...1]), "every device names what the round collected: \(d.name)")
        }
        try devices[leader].store.delete(.notebook, keys[2])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [2, 2, 2])
        for d in devices { XCTAssertEqual(try d.store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 2), d.name) }

        // Round 4 committed with round 3 not named (an older leader's commit):
        // only round 4 is claimed from then on.
        let s = devices[0].store
        try s.dropTombstonesForBarrier(generation: 3)
        XCTAssertNil(try s.graveyardCoverage())
        try s.dropTombstonesForBarrier(generation: 4, round: [])
        XCTAssertEqual(try s.graveyardCoverage(), GraveyardCoverage(since: 4, through: 4))
        XCTAssertFalse(try XCTUnwrap(try s.graveyardCoverage()).covers(after: 2))
        XCTAssertTrue(try XCTUnwrap(try s.graveyardCoverage()).covers(after: 3))

        // Round 3's list, asked for again, comes after round 4: its entry is
        // buried and the claim runs from 1 again, as it did before the gap.
        let late = CollectedTombstone(namespace: .notebook, key: keys[3], context: VersionVector())
        XCTAssertEqual(try s.buryLateCollection([late], generation: 3, previousSince: 1, currentGeneration: 4),
                       GraveyardCoverage(since: 1, through: 4))
        XCTAssertTrue(try s.graveyard().contains { $0.key == keys[3] })
        // A late list that does not touch where the claim starts mends nothing.
        try s.dropTombstonesForBarrier(generation: 5)
        try s.dropTombstonesForBarrier(generation: 6, round: [])
        XCTAssertEqual(try s.buryLateCollection([], generation: 4, previousSince: 1, currentGeneration: 6),
                       GraveyardCoverage(since: 6, through: 6))
        XCTAssertEqual(try s.buryLateCollection([], generation: 5, previousSince: nil, currentGeneration: 6),
                       GraveyardCoverage(since: 5, through: 6), "a claim that did not reach the round before starts at the round")
    }

    /// `gc_collected` round-trips; a device keeps it only for a round it
    /// acked, from that round's leader; and a snapshot's field 8 too, read
    /// as no claim where an older sender left it out.
    func testTheLeaderSaysWhatTheRoundCollectsAndTheSnapshotItsCoverage() throws {
        let entry = CollectedTombstone(namespace: .notebook, key: RowKey(bytes: Array(repeating: 7, count: 16))!, context: VersionVector())
        let nonce = Array(repeating: UInt8(1), count: 16)
        let collected = BarrierCollected(nonce: nonce, tombstones: [entry])
        XCTAssertEqual(try BarrierCollected.decode(collected.encoded()), collected)
        XCTAssertEqual(try BarrierCollected.decode(BarrierCollected(nonce: nonce, tombstones: []).encoded()).tombstones, [])
        XCTAssertThrowsError(try BarrierCollected.decode(BarrierCollected(nonce: [1, 2], tombstones: []).encoded()))
        let part = SnapshotResponse(generation: 4, namespace: .notebook, part: 0, parts: 1, rows: [], graveyardSince: 2)
        XCTAssertEqual(try SnapshotResponse.decode(part.encoded()).graveyardSince, 2)
        XCTAssertNil(try SnapshotResponse.decode(SnapshotResponse(generation: 4, namespace: .notebook, part: 0, parts: 1, rows: []).encoded()).graveyardSince)

        try makeFleet3()
        let follower = (leader + 1) % 3, other = (leader + 2) % 3
        engines[follower].barrier.acked[nonce] = (leader: devices[leader].id, digest: [], tombstones: [], atMs: 0)
        try engines[follower].handleCollected(collected, from: devices[other].id)
        XCTAssertNil(engines[follower].barrier.collections[nonce], "only the round's leader says what it collects")
        try engines[follower].handleCollected(BarrierCollected(nonce: Array(repeating: 9, count: 16), tombstones: [entry]), from: devices[leader].id)
        XCTAssertTrue(engines[follower].barrier.collections.isEmpty, "only for a round this device acked")
        try engines[follower].handleCollected(collected, from: devices[leader].id)
        XCTAssertEqual(engines[follower].barrier.collections[nonce], [entry])
    }

    /// The leader's list is lost on the way to one follower: it covers the
    /// round from the round's anchor instead (simulator seed 543 with
    /// --copy-back-as-new-files --revocations lost two writes where the list
    /// never reached the device that later served a snapshot).
    func testAFollowerThatMissedTheListCoversTheRoundFromItsAnchor() throws {
        let (store, keys) = try followerMissingTheList(anchorKept: true)
        XCTAssertEqual(try store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1))
        XCTAssertEqual(Set(try store.graveyard().map(\.key)), Set(keys[0...1]))
    }

    /// Without the list and without the anchor, it commits claiming
    /// nothing and asks the leader for the list again: when it comes, the
    /// graveyard names the round and the claim covers it.
    func testAFollowerWithNeitherTheListNorTheAnchorAsksTheLeaderForItAgain() throws {
        let (store, keys) = try followerMissingTheList(anchorKept: false)
        XCTAssertEqual(try store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1))
        XCTAssertEqual(Set(try store.graveyard().map(\.key)), Set(keys[0...1]))
        XCTAssertNil(engines[(leader + 1) % 3].barrier.awaitedList)
    }

    /// A leader that never answers (older, or off): the follower asks a few
    /// times, gives up, and the round stays unclaimed, even when the answer
    /// comes after it gave up.
    func testAFollowerWhoseLeaderNeverAnswersClaimsNothing() throws {
        let (store, _) = try followerMissingTheList(anchorKept: false, leaderAnswers: false)
        let follower = (leader + 1) % 3
        XCTAssertNotNil(engines[follower].barrier.awaitedList, "it is still asking")
        tick(10 * Int(BarrierState.AwaitedList.retryMs / 100) * BarrierState.AwaitedList.maxAsks / 10, skipping: [leader])
        XCTAssertNil(engines[follower].barrier.awaitedList, "it gave up")
        XCTAssertNil(try store.graveyardCoverage())
        tick(20)
        XCTAssertNil(try store.graveyardCoverage(), "an answer after it gave up is not taken")
    }

    /// The folder still shows another round's anchor at that generation (a
    /// round abandoned after its anchor landed, and a sync service behind on
    /// this device): the follower does not cover the round from it, whose
    /// graveyard may lack what this round collected, and asks the leader.
    func testAFollowerDoesNotCoverTheRoundFromAnotherRoundsAnchor() throws {
        let (store, keys) = try followerMissingTheList(anchorKept: true, leaderAnswers: false, anchorOfAnotherRound: true)
        let follower = (leader + 1) % 3
        XCTAssertNil(try store.graveyardCoverage(), "not from another round's anchor")
        XCTAssertNotNil(engines[follower].barrier.awaitedList)
        tick(60)
        XCTAssertEqual(try store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1), "from the list, asked for again")
        XCTAssertEqual(Set(try store.graveyard().map(\.key)), Set(keys[0...1]))
    }

    /// Both ends of a lost list restart before it is asked for again: the
    /// leader keeps its lists in the replica and the follower the round it
    /// asks for, so the list still comes and the claim covers the round.
    func testALostListIsAskedForAndSentAgainAfterBothRestart() throws {
        let (store, keys) = try followerMissingTheList(anchorKept: false, leaderAnswers: false)
        let follower = (leader + 1) % 3
        XCTAssertNotNil(try store.awaitedList(), "the round asked for is in the replica")
        for i in [leader, follower] {
            engines[i].stop()
            var deps = SyncEngine.Dependencies(store: devices[i].store, identity: devices[i].identity, relay: relay, clock: clock,
                                               random: SeededRandom(seed: UInt64(i + 50)), generation: { [g = generations[i]] in g.get() })
            deps.cloud = CloudFolder(path: cloud, accountID: devices[i].identity.userIDHash)
            deps.setGeneration = { [g = generations[i]] in try g.set($0) }
            var config = SyncConfiguration()
            config.barrierMinimumTombstones = 1
            engines[i] = SyncEngine(deps, configuration: config)
            XCTAssertNil(engines[i].barrier.awaitedList)
            try engines[i].attach()
        }
        XCTAssertNotNil(engines[follower].barrier.awaitedList, "asked for again after the restart")
        tick(60)
        XCTAssertEqual(try store.graveyardCoverage(), GraveyardCoverage(since: 1, through: 1), "from the list the restarted leader kept")
        XCTAssertEqual(Set(try store.graveyard().map(\.key)), Set(keys[0...1]))
        XCTAssertNil(try store.awaitedList(), "no longer asked for")
    }

    /// A round committed by the leader whose `gc_collected` to one follower is lost.
    func followerMissingTheList(anchorKept: Bool, leaderAnswers: Bool = true, anchorOfAnotherRound: Bool = false) throws -> (ReplicaStore, [RowKey]) {
        try makeFleet3()
        let keys = try deleteSome()
        for e in engines { try e.attach() }
        for _ in 0..<600 where generations[leader].get() == 0 { tick(1) }
        XCTAssertEqual(generations[leader].get(), 1)
        let follower = (leader + 1) % 3
        let channel = SyncChannel.name(userIDHash: devices[follower].identity.userIDHash, device: devices[follower].id)
        let toFollower = relay.pending.enumerated().filter { $0.element.channel == channel }.map(\.offset)
        XCTAssertGreaterThanOrEqual(toFollower.count, 2, "the list, then the commit")
        relay.drop(at: toFollower[0])
        let folder = CloudFolder(path: cloud, accountID: devices[0].identity.userIDHash)
        if !anchorKept { try FileManager.default.removeItem(atPath: folder.anchorPath) }
        if anchorOfAnotherRound {
            let keys = engines[leader].anchorKeys
            var other = try XCTUnwrap(try folder.newest(keys: keys)).1
            XCTAssertNotNil(other.round, "the leader names its round")
            other.round = [UInt8](repeating: 0xAB, count: 16)
            try folder.write(try AnchorFile.seal(other, accountID: devices[0].identity.userIDHash, keys: keys, at: clock.now()))
        }
        tick(5, skipping: leaderAnswers ? [] : [leader])
        XCTAssertEqual(generations[follower].get(), 1, "it committed")
        return (devices[follower].store, keys)
    }
}
