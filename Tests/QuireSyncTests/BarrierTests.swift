import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import XCTest
@testable import QuireStore
@testable import QuireSync

/// The tombstone barrier on a simulated fleet: real stores and engines, a
/// memory relay, a shared cloud folder, a clock moved by hand.
final class BarrierTests: XCTestCase {
    typealias Generation = TestGeneration
    final class Switch: @unchecked Sendable { var isOn = true }

    var base = ""
    var cloud = ""
    var devices: [TestDevice] = []
    var engines: [SyncEngine] = []
    var generations: [Generation] = []
    var anchorSwitches: [Switch] = []
    let relay = MemoryRelay(maxFrameSize: 64 << 10)
    let clock = SimClock()

    override func setUp() {
        base = makeShortTemporaryDirectory()
        cloud = base + "/cloud"
        try? FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func makeFleet3(cloudPath: String? = nil) throws {
        devices = try makeFleet(["a", "b", "c"], in: base, clock: clock)
        var config = SyncConfiguration()
        config.barrierMinimumTombstones = 1
        config.quietWindowMilliseconds = 1_000
        for (i, d) in devices.enumerated() {
            let generation = Generation(), anchor = Switch()
            var deps = SyncEngine.Dependencies(store: d.store, identity: d.identity, relay: relay, clock: clock,
                                               random: SeededRandom(seed: UInt64(i + 1) * 977), generation: { generation.get() })
            deps.cloud = CloudFolder(path: cloudPath ?? cloud, accountID: d.identity.userIDHash)
            deps.isAnchorEnabled = { anchor.isOn }
            deps.setGeneration = { try generation.set($0) }
            engines.append(SyncEngine(deps, configuration: config))
            generations.append(generation)
            anchorSwitches.append(anchor)
        }
    }

    /// Index of the roster's leader (lowest signing key).
    var leader: Int {
        devices.indices.min { devices[$0].identity.deviceSigning.publicKey.bytes.lexicographicallyPrecedes(devices[$1].identity.deviceSigning.publicKey.bytes) }!
    }

    func tick(_ n: Int, skipping offline: Set<Int> = []) {
        for _ in 0..<n {
            relay.deliverAll(limit: 100_000)
            for (i, e) in engines.enumerated() where !offline.contains(i) { e.step() }
            clock.advance(ms: 100)
        }
    }

    /// Notes written on the leader, two of them deleted there.
    func deleteSome() throws -> [RowKey] {
        let a = devices[leader].store
        var keys: [RowKey] = []
        for i in 0..<5 { keys.append(try a.put(.note(Note(title: "n\(i)", body: Array("words \(i)\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))).key) }
        try a.delete(.notebook, keys[0])
        try a.delete(.notebook, keys[1])
        return keys
    }

    func testABarrierCollectsEveryTombstoneOnceTheAnchorLanded() throws {
        try makeFleet3()
        let store = devices[leader].store
        var keys: [RowKey] = []
        for i in 0..<5 { keys.append(try store.put(.note(Note(title: "n\(i)", body: Array("words \(i)\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))).key) }
        for e in engines { try e.attach() }
        tick(30)
        XCTAssertEqual(try devices.map { try $0.store.counts(.notebook).live }, [5, 5, 5])
        try store.delete(.notebook, keys[0])
        try store.delete(.notebook, keys[1])
        tick(20)
        XCTAssertEqual(try devices.map { try $0.store.counts(.notebook).tombstones }, [2, 2, 2], "the deletes reached every device")
        tick(400)
        for (i, d) in devices.enumerated() {
            XCTAssertEqual(generations[i].get(), 1, "device \(d.name) moved to generation 1")
            XCTAssertEqual(try d.store.counts(.notebook).tombstones, 0, "tombstones collected on \(d.name)")
            XCTAssertEqual(try d.store.counts(.notebook).live, 3)
            XCTAssertNil(try d.store.row(.notebook, keys[0]))
        }
        let folder = CloudFolder(path: cloud, accountID: devices[0].identity.userIDHash)
        let newest = try XCTUnwrap(try folder.newest(keys: try AnchorKeys.original(devices[0].identity.backupKey, accountKey: devices[0].identity.account.publicKey)))
        XCTAssertEqual(newest.0.generation, 1)
        XCTAssertEqual(newest.1.rows.filter { $0.namespace == .notebook }.count, 3, "the anchor holds the live notes")
        XCTAssertTrue(engines[leader].status().barrier?.contains("generation 1") ?? false)
        // Digests agree at the new generation, and sync goes on.
        XCTAssertEqual(Set(try devices.map { try $0.store.digest(generation: 1).encoded() }).count, 1)
        try devices[1].store.put(.plan(Plan(title: "after", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        tick(100)
        XCTAssertEqual(try devices[2].store.counts(.plans).live, 1)
    }

    /// The commit record says generation 5, and no device and no anchor is
    /// at it (the fleet lost it: every device put back from before it, the
    /// folder too). Every device says it waits behind the fleet; the next
    /// round the whole roster commits clears that, and collection goes on.
    func testAFleetThatLostItsCommittedGenerationSaysSoAndCollectsAgain() throws {
        try makeFleet3()
        let folder = CloudFolder(path: cloud, accountID: devices[0].identity.userIDHash)
        let keys0 = try AnchorKeys.original(devices[0].identity.backupKey, accountKey: devices[0].identity.account.publicKey)
        try folder.recordCommit(5, keys: keys0)
        let store = devices[leader].store
        var keys: [RowKey] = []
        for i in 0..<3 { keys.append(try store.put(.note(Note(title: "n\(i)", body: Array("words \(i)\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))).key) }
        for e in engines { try e.attach() }
        tick(30)
        for e in engines {
            let said = e.status().anchor ?? ""
            XCTAssertTrue(said.contains("behind the fleet: it committed generation 5") && said.contains("holds no anchor it can use"), said)
        }
        try store.delete(.notebook, keys[0])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1], "the roster committed a round")
        for (i, e) in engines.enumerated() {
            XCTAssertNil(e.status().anchor, "device \(devices[i].name) no longer says it waits")
            XCTAssertNil(try devices[i].store.row(.notebook, keys[0]))
        }
    }

    /// The leader holds no tombstone (the rows were deleted where they were
    /// written, before anyone else held them): the holder's digest says so,
    /// and the leader calls the round anyway. The holder's ack names its
    /// tombstone, so the anchor's graveyard does too: a copy of the holder
    /// put back from before the delete must not bring the row back
    /// (simulator seed 234 with --restore-by-copy).
    func testTheLeaderCallsARoundForTombstonesOnlyASiblingHolds() throws {
        try makeFleet3()
        let holder = (leader + 1) % 3
        let store = devices[holder].store
        let keys = try (0..<3).map { i in
            try store.put(.note(Note(title: "n\(i)", body: Array("words\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))).key
        }
        try store.delete(.notebook, keys[0])
        for e in engines { try e.attach() }
        tick(30)
        XCTAssertEqual(try devices[leader].store.counts(.notebook).tombstones, 0, "the leader never held that row")
        tick(400)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1])
        XCTAssertEqual(try store.counts(.notebook).tombstones, 0, "collected on the device that held it")
        XCTAssertTrue(engines[leader].status().events.contains { $0.contains("'\(devices[holder].name)' holds tombstones worth it") },
                      "\(engines[leader].status().events)")
        let folder = CloudFolder(path: cloud, accountID: devices[0].identity.userIDHash)
        let anchor = try XCTUnwrap(try folder.newest(keys: try AnchorKeys.original(devices[0].identity.backupKey, accountKey: devices[0].identity.account.publicKey)))
        XCTAssertEqual(anchor.1.graveyard.map(\.key), [keys[0]], "the anchor names the tombstone only the holder had")
        XCTAssertEqual(try devices[leader].store.graveyard().map(\.key), [keys[0]], "and so does the leader's graveyard")
        XCTAssertEqual(anchor.1.graveyard.first?.context, try store.graveyard().first?.context)
    }

    func testAnAckCarriesItsTombstonesAndAnOlderAckNamesNone() throws {
        let key = RowKey(bytes: [UInt8](repeating: 9, count: 16))!
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 3)
        let grave = CollectedTombstone(namespace: .notebook, key: key, context: VersionVector().adding(Dot(actor: actor, counter: 2), tag: 77))
        let ack = BarrierAck(nonce: [UInt8](repeating: 5, count: 16), digest: [1, 2, 3], declined: false, tombstones: [grave])
        XCTAssertEqual(try BarrierAck.decode(ack.encoded()), ack)
        // As a device before the field wrote it: three fields.
        let older = CBORWriter.encode(.map([(.unsigned(1), .bytes(ack.nonce)), (.unsigned(2), .bytes(ack.digest)), (.unsigned(3), .bool(false))]))
        XCTAssertEqual(try BarrierAck.decode(older).tombstones, [])
        XCTAssertEqual(BarrierAck(nonce: ack.nonce, digest: ack.digest, declined: false).encoded(), older, "no tombstones: the old encoding")
        // A malformed list is refused, not read as none.
        let bad = CBORWriter.encode(.map([(.unsigned(1), .bytes(ack.nonce)), (.unsigned(2), .bytes(ack.digest)), (.unsigned(3), .bool(false)),
                                          (.unsigned(4), .array([.array([.unsigned(99), .array([])])]))]))
        XCTAssertThrowsError(try BarrierAck.decode(bad))
    }

    func testAnOfflineRosterDeviceStopsCollection() throws {
        try makeFleet3()
        _ = try deleteSome()
        let offline = (leader + 1) % 3
        for (i, e) in engines.enumerated() where i != offline { try e.attach() }
        tick(400, skipping: [offline])
        XCTAssertEqual(try devices[leader].store.counts(.notebook).tombstones, 2, "nobody collects while a roster device is away")
        XCTAssertEqual(generations[leader].get(), 0)
        XCTAssertTrue(engines[leader].status().barrier?.contains("no answer from") ?? false, "\(engines[leader].status().barrier ?? "-")")
    }

    func testAFailedAnchorWriteAbortsTheRoundAndAKeptTombstoneWaitsForTheNextRound() throws {
        let missing = base + "/not-yet"
        try makeFleet3(cloudPath: missing)
        _ = try deleteSome()
        for e in engines { try e.attach() }
        tick(200)
        // Tombstones live where the rows were deleted (the others never held them).
        XCTAssertEqual(try devices[leader].store.counts(.notebook).tombstones, 2, "anchor first: no anchor, no collection")
        for g in generations { XCTAssertEqual(g.get(), 0) }
        XCTAssertTrue(engines[leader].status().barrier?.contains("anchor could not be written") ?? false)
        XCTAssertNil(engines[leader].status().wedgedReason, "one failure is not wedged")
        clock.advance(ms: 11 * 60 * 1000)      // errors persist, nothing succeeds: wedged, in words
        tick(200)
        XCTAssertTrue(engines[leader].status().wedgedReason?.contains("cloud folder cannot be written") ?? false,
                      engines[leader].status().wedgedReason ?? "-")
        try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
        tick(400)    // the next match (a heartbeat) schedules another round
        for (i, d) in devices.enumerated() {
            XCTAssertEqual(try d.store.counts(.notebook).tombstones, 0)
            XCTAssertEqual(generations[i].get(), 1)
        }
        XCTAssertNil(engines[leader].status().wedgedReason, "a success ends it")
    }

    func testACommitForARoundNotAckedOrAlreadyCommittedIsRefused() throws {
        try makeFleet3()
        _ = try deleteSome()
        for e in engines { try e.attach() }
        tick(400)
        let follower = (leader + 1) % 3
        XCTAssertEqual(generations[follower].get(), 1)
        // New tombstones, then a commit replayed with the nonce of the round already committed.
        let key = try devices[follower].store.put(.plan(Plan(title: "p", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))).key
        try devices[follower].store.delete(.plans, key)
        let nonce = try XCTUnwrap(engines[follower].barrier.committed.first)
        engines[follower].lock.lock()
        engines[follower].invalidateDigest()
        let digest = try engines[follower].currentDigest().bytes
        try engines[follower].handleCommit(BarrierCommit(nonce: nonce, digest: digest, generation: 2), from: devices[leader].id, nowMs: 0)
        try engines[follower].handleCommit(BarrierCommit(nonce: [UInt8](repeating: 7, count: 16), digest: digest, generation: 2),
                                           from: devices[leader].id, nowMs: 0)
        engines[follower].lock.unlock()
        XCTAssertEqual(try devices[follower].store.counts(.plans).tombstones, 1, "a replayed commit collects nothing")
        XCTAssertEqual(generations[follower].get(), 1)
        XCTAssertEqual(engines[follower].metricsSnapshot().dropped[.barrierRefused], 2)
    }

    /// A reconcile response carries its generation; rows from across a
    /// barrier are refused by the receiver, as requests are by the responder.
    func testAResponseFromAnotherGenerationIsRefused() throws {
        try makeFleet3()
        let row = Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: 5, count: 16))!, context: VersionVector())
            .edited(by: Actor(device: devices[1].id, incarnation: 3), to: .plan(Plan(title: "from the future", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        var response = ReconcileResponse(namespace: .plans, session: [UInt8](repeating: 1, count: 8), step: 1, rows: [row], items: [], isTruncated: false)
        response.generation = 1
        let (decoded, rowBytes) = try ReconcileResponse.decodeCountingRows(response.encoded())
        XCTAssertEqual(decoded.generation, 1)
        try engines[0].attach()
        engines[0].lock.lock()
        try engines[0].handleResponse(decoded, rowBytes: rowBytes, from: devices[1].id, nowMs: 0)
        response.generation = 0
        let other = try ReconcileResponse.decodeCountingRows(response.encoded())
        try engines[0].handleResponse(other.response, rowBytes: other.rowBytes, from: devices[1].id, nowMs: 0)
        engines[0].lock.unlock()
        XCTAssertEqual(engines[0].metricsSnapshot().dropped[.generationGap], 1)
        XCTAssertEqual(try devices[0].store.counts(.plans).live, 1, "only the response at this device's generation was applied")
    }

    /// The roster a round must hear from is fixed when it opens: a device
    /// added (or revoked) meanwhile aborts it.
    func testARosterChangeWhileARoundIsOpenAbortsIt() throws {
        try makeFleet3()
        _ = try deleteSome()
        let follower = (leader + 1) % 3
        for (i, e) in engines.enumerated() where i != follower { try e.attach() }
        // The follower never answers: the round stays open until its timer.
        var opened = false
        for _ in 0..<200 where !opened {
            tick(1, skipping: [follower])
            engines[leader].lock.lock()
            opened = engines[leader].barrier.round != nil
            engines[leader].lock.unlock()
        }
        XCTAssertTrue(opened, "a round opened")
        let newcomer = Identity(account: devices[0].identity.account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(),
                                backupKey: devices[0].identity.backupKey)
        try devices[leader].store.putRosterEntry(DeviceRecord(name: "newcomer", certificate: certificate(for: newcomer, name: "newcomer", at: clock.now())),
                                                 key: newcomer.deviceID)
        tick(5, skipping: [follower])
        engines[leader].lock.lock()
        let stillOpen = engines[leader].barrier.round != nil
        engines[leader].lock.unlock()
        XCTAssertFalse(stillOpen)
        XCTAssertTrue(engines[leader].status().barrier?.contains("added or revoked") ?? false, engines[leader].status().barrier ?? "-")
        XCTAssertEqual(try devices[leader].store.counts(.notebook).tombstones, 2)
    }

    func testADeviceWithTheCloudAnchorOffNeverAcksAndSaysWhy() throws {
        try makeFleet3()
        _ = try deleteSome()
        let opted = (leader + 2) % 3
        anchorSwitches[opted].isOn = false
        for e in engines { try e.attach() }
        tick(300)
        XCTAssertEqual(try devices[leader].store.counts(.notebook).tombstones, 2)
        XCTAssertTrue(engines[opted].status().barrier?.contains("cloud anchor off") ?? false)
        XCTAssertTrue(engines[leader].status().barrier?.contains("cloud anchor off") ?? false, "\(engines[leader].status().barrier ?? "-")")
    }

    /// A device put back from a backup older than the barrier notices at
    /// start-up (no sibling needed), recovers from the anchor's snapshot,
    /// never brings a collected row back, and keeps what it wrote offline.
    func testARestoredDeviceRecoversFromTheAnchorAtStartUp() throws {
        try restoreVictim(withCloud: true)
    }

    /// Without a cloud folder the anchor cannot be read: the device behind
    /// the fleet catches up from a sibling's snapshot instead of staying stuck.
    func testARestoredDeviceWithoutTheCloudFolderCatchesUpFromASiblingsSnapshot() throws {
        try restoreVictim(withCloud: false)
    }

    /// The fleet committed generation 2, but the cloud folder was put back
    /// to the anchor of generation 1 and a device comes back from a backup
    /// from before both, with no sibling online: it does not recover from
    /// an anchor older than what the fleet committed, and says it waits;
    /// once a sibling at generation 2 is heard, it catches up from it.
    func testARestoredDeviceWaitsForTheCommittedGenerationWhenTheAnchorIsOlder() throws {
        try restoredDeviceWaits(anchorKept: true)
    }

    /// The same with the anchor gone from the folder (the commit record stays).
    func testARestoredDeviceWaitsForTheCommittedGenerationWhenTheAnchorIsGone() throws {
        try restoredDeviceWaits(anchorKept: false)
    }

    /// Five notes written on the leader and synced to every device, then
    /// a copy of another device's replica (its backup).
    func notesSyncedAndAVictimBackedUp() throws -> (victim: Int, store: ReplicaStore, keys: [RowKey], backup: String) {
        try makeFleet3()
        let victim = (leader + 1) % 3
        let store = devices[leader].store
        var keys: [RowKey] = []
        for i in 0..<5 { keys.append(try store.put(.note(Note(title: "n\(i)", body: Array("words \(i)\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))).key) }
        for e in engines { try e.attach() }
        tick(30)
        let backup = base + "/victim-backup.sqlite"
        try devices[victim].store.compact()
        try FileManager.default.copyItem(atPath: devices[victim].dir + "/replica.sqlite", toPath: backup)
        return (victim, store, keys, backup)
    }

    /// The victim's engine stopped and its replica put back from `backup`.
    func restoredReplica(of victim: Int, from backup: String, seed: UInt64) throws -> ReplicaStore {
        engines[victim].stop()
        let restoredDir = base + "/restored"
        try FileManager.default.createDirectory(atPath: restoredDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: backup, toPath: restoredDir + "/replica.sqlite")
        return try ReplicaStore(path: restoredDir + "/replica.sqlite", deviceID: devices[victim].id, clock: clock, random: SeededRandom(seed: seed))
    }

    /// The victim's engine started again on `store` (the anchor check runs
    /// as it attaches, before any sibling is heard).
    func restartedEngine(of victim: Int, on store: ReplicaStore, cloud folder: CloudFolder?, seed: UInt64) throws -> Generation {
        let generation = Generation()
        var deps = SyncEngine.Dependencies(store: store, identity: devices[victim].identity, relay: relay, clock: clock,
                                           random: SeededRandom(seed: seed), generation: { generation.get() })
        deps.cloud = folder
        deps.setGeneration = { try generation.set($0) }
        var config = SyncConfiguration()
        config.barrierMinimumTombstones = 1
        engines[victim] = SyncEngine(deps, configuration: config)
        generations[victim] = generation
        try engines[victim].attach()
        return generation
    }

    func restoredDeviceWaits(anchorKept: Bool) throws {
        let (victim, store, keys, backup) = try notesSyncedAndAVictimBackedUp()
        try store.delete(.notebook, keys[0])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1])
        let folder = CloudFolder(path: cloud, accountID: devices[victim].identity.userIDHash)
        let generationOne = try Data(contentsOf: URL(fileURLWithPath: folder.anchorPath))
        try store.delete(.notebook, keys[1])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [2, 2, 2])

        let restored = try restoredReplica(of: victim, from: backup, seed: 4243)
        if anchorKept {
            try generationOne.write(to: URL(fileURLWithPath: folder.anchorPath))     // the folder put back
        } else {
            try FileManager.default.removeItem(atPath: folder.anchorPath)
        }
        let generation = try restartedEngine(of: victim, on: restored, cloud: folder, seed: 98)
        let others = Set(devices.indices).subtracting([victim])
        tick(20, skipping: others)
        XCTAssertEqual(generation.get(), 0, "not recovered from an older anchor")
        XCTAssertNotNil(try restored.row(.notebook, keys[1])?.content, "what the generation-1 anchor would have kept is not taken from it")
        let waiting = engines[victim].status().anchor ?? ""
        XCTAssertTrue(waiting.contains("waiting to hear from a device at generation 2"), waiting)

        tick(100)
        XCTAssertEqual(generation.get(), 2, "caught up from a sibling at the committed generation")
        XCTAssertNil(engines[victim].status().anchor)
        XCTAssertNil(try restored.row(.notebook, keys[0])?.content)
        XCTAssertNil(try restored.row(.notebook, keys[1])?.content)
        XCTAssertEqual(try restored.roots(), try store.roots())
    }

    func restoreVictim(withCloud: Bool) throws {
        let (victim, store, keys, backup) = try notesSyncedAndAVictimBackedUp()
        try store.delete(.notebook, keys[0])
        try store.delete(.notebook, keys[1])
        tick(420)
        XCTAssertEqual(generations.map { $0.get() }, [1, 1, 1])

        let restored = try restoredReplica(of: victim, from: backup, seed: 4242)
        XCTAssertEqual(try restored.counts(.notebook).live, 5, "the backup still holds the deleted notes")
        let offline = try restored.put(.note(Note(title: "offline", body: Array("written after the restore\n".utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
        let generation = try restartedEngine(of: victim, on: restored, cloud: withCloud ? CloudFolder(path: cloud, accountID: devices[victim].identity.userIDHash) : nil,
                                             seed: 99)
        if !withCloud {
            XCTAssertEqual(generation.get(), 0, "nothing to check against yet")
            tick(60)                          // a sibling advertises generation 1: the gap asks for its snapshot
        }
        XCTAssertEqual(generation.get(), 1, "rolled back, then recovered to the fleet's generation")
        XCTAssertNil(try restored.row(.notebook, keys[0])?.content, "a row the fleet collected never comes back")
        XCTAssertNil(try restored.row(.notebook, keys[1])?.content)
        XCTAssertNotNil(try restored.row(.notebook, offline.key), "what it wrote offline is kept")
        // Twice: at open (the copy is another file than the replica's own),
        // then at the generation check.
        let rollbacks = try restored.rollbacks().map(\.reason)
        XCTAssertEqual(rollbacks.count, 2, "\(rollbacks)")
        XCTAssertTrue(rollbacks.last?.contains("replica file is not the one") ?? false, "\(rollbacks)")
        XCTAssertTrue(rollbacks.first?.contains(withCloud ? "cloud anchor" : "served the fleet's state") ?? false, "\(rollbacks)")
        XCTAssertTrue(engines[victim].status().barrier?.contains(withCloud ? "recovered from the cloud anchor" : "snapshot") ?? false,
                      engines[victim].status().barrier ?? "-")
        tick(100)
        for d in devices where d !== devices[victim] {
            XCTAssertNotNil(try d.store.row(.notebook, offline.key), "the offline note reached \(d.name)")
            XCTAssertNil(try d.store.row(.notebook, keys[0]))
        }
        XCTAssertEqual(try restored.roots(), try store.roots())
    }
}
