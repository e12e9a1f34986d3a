import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import XCTest
@testable import QuireSync

/// A fleet driven step by step over a MemoryRelay with a simulated clock.
final class SimFleet {
    let devices: [TestDevice]
    let relay: MemoryRelay
    let clock: SimClock
    let random: SeededRandom
    var engines: [SyncEngine] = []

    init(_ names: [String], base: String, seed: UInt64 = 1, configuration: SyncConfiguration = SyncConfiguration(),
         maxFrameSize: Int = 64 << 10) throws {
        clock = SimClock()
        random = SeededRandom(seed: seed)
        relay = MemoryRelay(maxFrameSize: maxFrameSize)
        devices = try makeFleet(names, in: base, clock: clock)
        for d in devices {
            engines.append(d.makeEngine(relay: relay, clock: clock, random: SeededRandom(seed: seed &+ UInt64(engines.count) &* 31),
                                        configuration: configuration, withStatus: true))
        }
    }

    func attachAll() throws { for e in engines { try e.attach() } }

    /// Stops every engine and starts fresh ones on the same replicas and
    /// state files, as a device restart would.
    func restartEngine(_ i: Int, configuration: SyncConfiguration = SyncConfiguration()) throws {
        engines[i].stop()
        engines[i] = devices[i].makeEngine(relay: relay, clock: clock, random: SeededRandom(seed: random.next() &+ UInt64(i)),
                                           configuration: configuration, withStatus: true)
        try engines[i].attach()
    }

    /// One tick: deliver what is in flight (through `network` if given), let
    /// every engine process it, then move time on.
    func tick(ms: UInt64 = 50, network: ((MemoryRelay) -> Void)? = nil) {
        if let network { network(relay) } else { relay.deliverAll(limit: 100_000) }
        for e in engines { e.step() }
        clock.advance(ms: ms)
    }

    func digestsEqual() throws -> Bool { Set(try devices.map { try $0.digest() }).count == 1 }

    /// Ticks until every replica holds the same digest and every engine knows it.
    @discardableResult
    func runUntilConverged(maxTicks: Int = 2000, network: ((MemoryRelay) -> Void)? = nil) throws -> Int {
        for i in 0..<maxTicks {
            tick(network: network)
            if try digestsEqual(), engines.allSatisfy({ $0.isConverged() }) { return i }
        }
        return -1
    }
}

final class EngineTests: XCTestCase {
    var base = ""
    override func setUp() { base = makeShortTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func testTwoDevicesConvergeAfterOfflineEditsAndDeletionsStay() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        var shared: [RowKey] = []
        for i in 0..<40 { shared.append(try a.store.put(note("shared \(i)", "body \(i)")).key) }
        try b.store.apply(try a.store.rows(.notebook, from: [], to: nil))
        for i in 0..<30 { try a.store.put(note("a \(i)", "from a \(i)")) }
        for i in 0..<30 { try b.store.put(.plan(Plan(title: "b \(i)", createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))) }
        try a.store.delete(.notebook, shared[0])
        try b.store.delete(.notebook, shared[1])
        try b.store.put(.setting(Setting(name: "theme", value: "dark", updatedAt: Timestamp(seconds: 0))))
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0, "did not converge")
        XCTAssertEqual(try allRows(a.store), try allRows(b.store))
        XCTAssertEqual(try a.store.counts(.notebook).live, 40 - 2 + 30)
        XCTAssertEqual(try a.store.counts(.notebook).tombstones, 2)
        XCTAssertTrue(try b.store.row(.notebook, shared[0])!.isTombstone)
        XCTAssertEqual(try a.store.recomputedRoots(), try a.store.roots())
        XCTAssertEqual(try b.store.counts(.settings).live, try a.store.counts(.settings).live)
        // Advertised: the outboxes are cleared once a digest covering them went out.
        XCTAssertNil(try a.store.outboxHighWater())
        XCTAssertNil(try b.store.outboxHighWater())
    }

    /// A new device meets two siblings that hold the same notebook: it
    /// pulls it from one, and the other's pull waits and then finds nothing
    /// left to send (not the notebook twice).
    func testANewDeviceReceivesWhatTwoSiblingsBothHoldOnce() throws {
        let fleet = try SimFleet(["a", "b", "new"], base: base)
        let (a, b, new) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        try a.store.putMany((0..<1500).map { note("n\($0)", String(repeating: "words of note \($0) ", count: 40)) })
        try b.store.apply(try a.store.rows(.notebook, from: [], to: nil))
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0, "did not converge")
        XCTAssertEqual(try new.store.counts(.notebook).live, 1500)
        let m = fleet.engines.map { $0.metricsSnapshot() }
        let oneCopy = max(m[0].rowBytesOut, m[1].rowBytesOut)
        XCTAssertGreaterThan(oneCopy, 1500 * 400)
        XCTAssertLessThan(m[2].rowBytesIn, oneCopy + oneCopy / 10, "received \(m[2].rowBytesIn) row bytes; one copy is \(oneCopy)")
        XCTAssertLessThan(min(m[0].rowBytesOut, m[1].rowBytesOut), oneCopy / 10)
    }

    /// Siblings that hold different writes are pulled from at once: waiting
    /// is only for a sibling that holds what the running pull brings.
    func testSiblingsWithDifferentWritesArePulledAtOnce() throws {
        let fleet = try SimFleet(["a", "b", "new"], base: base)
        let (a, b, new) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        try a.store.putMany((0..<300).map { note("a\($0)", "from a \($0)") })
        try b.store.putMany((0..<300).map { note("b\($0)", "from b \($0)") })
        try fleet.attachAll()
        var most = 0
        for _ in 0..<400 {
            fleet.tick()
            most = max(most, fleet.engines[2].pulls.sessions.keys.filter { $0.namespace == .notebook }.count)
            if try new.store.counts(.notebook).live == 600 { break }
        }
        XCTAssertEqual(try new.store.counts(.notebook).live, 600)
        XCTAssertEqual(most, 2, "the two pulls of the notebook did not run side by side")
    }

    /// The sibling a new device pulls from falls silent mid-pull: the other
    /// sibling, which waited, is pulled from once that pull times out.
    func testAWaitingSiblingIsPulledWhenTheRunningPullFallsSilent() throws {
        var configuration = SyncConfiguration()
        configuration.maxResponseRowBytes = 64 << 10   // many responses: the pull is cut midway
        configuration.maxStreamedRowBytes = 0
        let fleet = try SimFleet(["a", "b", "new"], base: base, configuration: configuration)
        let (a, b, new) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        try a.store.putMany((0..<1500).map { note("n\($0)", String(repeating: "words of note \($0) ", count: 40)) })
        try b.store.apply(try a.store.rows(.notebook, from: [], to: nil))
        try fleet.attachAll()
        var pulledFrom: Int?
        for _ in 0..<200 where pulledFrom == nil {
            fleet.tick()
            if try new.store.counts(.notebook).live > 0 {
                let keys = fleet.engines[2].pulls.sessions.keys.filter { $0.namespace == .notebook }
                XCTAssertEqual(keys.count, 1, "one pull of the notebook at a time")
                pulledFrom = keys.first.flatMap { key in fleet.devices.firstIndex { $0.id == key.sibling } }
            }
        }
        let silent = try XCTUnwrap(pulledFrom)
        fleet.engines[silent].stop()
        let got = try new.store.counts(.notebook).live
        XCTAssertLessThan(got, 1500, "the pull was not cut midway")
        var ticks = 0
        while try new.store.counts(.notebook).live < 1500 && ticks < 400 {
            fleet.tick()
            ticks += 1
        }
        XCTAssertEqual(try new.store.counts(.notebook).live, 1500, "the waiting sibling was never pulled from")
        XCTAssertEqual(Hex.encode(try new.digest()), Hex.encode(try fleet.devices[1 - silent].digest()))
    }

    func testOneDifferenceCostsFewBytesAndRoundTrips() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try a.store.putMany((0..<3000).map { note("n\($0)", "body \($0)") })
        try b.store.apply(try a.store.rows(.notebook, from: [], to: nil))
        try a.store.clearOutbox(through: Int64.max)
        try b.store.clearOutbox(through: Int64.max)
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        // A device in sync with its sibling restarts: one digest each way,
        // and one more from the sibling, whose session the restarted device
        // closed (its replay window was not kept) and which starts a new one.
        let running = fleet.engines[0].metricsSnapshot()
        try fleet.restartEngine(1)
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        let before = fleet.engines.map { $0.metricsSnapshot() }
        XCTAssertEqual(before[1].framesOut, 1, "\(before[1])")
        // (Every frame is padded to a size bucket: a digest fills 1 KiB.)
        XCTAssertLessThanOrEqual(before[1].bytesOut, 1024, "d = 0 costs one digest each way")
        XCTAssertLessThanOrEqual(before[0].framesOut - running.framesOut, 2)
        XCTAssertLessThanOrEqual(before[0].bytesOut - running.bytesOut, 2048, "d = 0 costs one digest each way (and a session restart)")
        try b.store.put(note("one more", "the difference"))
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        let after = fleet.engines.map { $0.metricsSnapshot() }
        for i in 0..<2 {
            let sent = (after[i].bytesOut - before[i].bytesOut) - (after[i].rowBytesOut - before[i].rowBytesOut)
            print("d = 1: \(fleet.devices[i].name) sent \(sent) bytes beside the row, \(after[i].maxPullRequests) requests in its pull")
            XCTAssertLessThan(sent, 4096, "d = 1 sent \(sent) bytes from \(fleet.devices[i].name)")
            XCTAssertLessThanOrEqual(after[i].maxPullRequests, 3)
        }
    }

    func testStormGuardBacksOffAndSaysSo() throws {
        var config = SyncConfiguration()
        config.sessionTimeoutMilliseconds = 150   // with its one retry, a pull ends within a tick
        let fleet = try SimFleet(["a", "b"], base: base, configuration: config)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let engine = fleet.engines[0]
        try engine.attach()
        // B is a puppet: it advertises ever-different digests and never answers.
        var puppet = FrameSealer(identity: FrameIdentity(deviceID: b.id, userIDHash: b.identity.userIDHash, box: b.identity.deviceBox),
                                 session: Array(repeating: 1, count: 8), sessionStart: 1, maxFrameSize: 64 << 10)
        for _ in 0..<12 {
            var roots: [Namespace: [UInt8]] = [:]
            for ns in Namespace.allCases { roots[ns] = fleet.random.bytes(32) }
            let digest = StateDigest(roots: roots, generation: 0).encoded()
            for frame in puppet.seal(SyncMessage(subKind: .stateDigest, payload: DigestMessage(digest: digest).encoded()),
                                     to: a.id, boxKey: a.identity.deviceBox.publicKey, messageID: []) {
                try fleet.relay.publish(frame, to: engine.channel)
            }
            for _ in 0..<4 { fleet.tick(ms: 100) }
        }
        let status = engine.status()
        let sibling = try XCTUnwrap(status.siblings.first)
        XCTAssertEqual(sibling.storms, 1)
        XCTAssertNotNil(sibling.stormBackoffUntil)
        XCTAssertFalse(sibling.inSync)
        XCTAssertEqual(sibling.rounds, 8)
        XCTAssertTrue(status.events.contains { $0.contains("storm with 'b'") && $0.contains("notebook") }, "\(status.events)")
        XCTAssertNotNil(SyncStatus.load(from: DeviceHome(path: a.dir)))
    }

    func testIncompatibleVersionIsRefusedCountedAndNamed() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try fleet.engines[0].attach()
        var puppet = FrameSealer(identity: FrameIdentity(deviceID: b.id, userIDHash: b.identity.userIDHash, box: b.identity.deviceBox),
                                 session: Array(repeating: 1, count: 8), sessionStart: 1, maxFrameSize: 64 << 10)
        var digest = try a.digest()
        digest[0] = 99
        for frame in puppet.seal(SyncMessage(subKind: .stateDigest, payload: DigestMessage(digest: digest).encoded()),
                                 to: a.id, boxKey: a.identity.deviceBox.publicKey, messageID: []) {
            try fleet.relay.publish(frame, to: fleet.engines[0].channel)
        }
        // And a sub-kind from the future: counted, ignored.
        for frame in puppet.seal(SyncMessage(subKind: SubKind("offload_future"), payload: [1]), to: a.id,
                                 boxKey: a.identity.deviceBox.publicKey, messageID: []) {
            try fleet.relay.publish(frame, to: fleet.engines[0].channel)
        }
        fleet.tick()
        let status = fleet.engines[0].status()
        XCTAssertEqual(status.siblings.first?.incompatibleVersion, 99)
        XCTAssertEqual(status.dropped[FrameDrop.incompatibleVersion.rawValue], 1)
        XCTAssertEqual(status.dropped[FrameDrop.unknownSubKind.rawValue], 1)
        XCTAssertTrue(status.events.contains { $0.contains("incompatible version") })
        XCTAssertEqual(fleet.engines[0].metricsSnapshot().requestsSent, 0)
    }

    /// Reconcile never crosses a generation gap (pulling across it is what
    /// resurrects); the device behind, with no anchor to read, catches up
    /// from the ahead sibling's whole snapshot instead.
    func testGenerationGapRefusesContentReconcile() throws {
        let base = self.base
        let clock = SimClock()
        let relay = MemoryRelay()
        let devices = try makeFleet(["a", "b"], in: base, clock: clock)
        try devices[1].store.put(note("only on b", "x"))
        let ea = devices[0].makeEngine(relay: relay, clock: clock, random: SeededRandom(seed: 1), generation: 0)
        let eb = devices[1].makeEngine(relay: relay, clock: clock, random: SeededRandom(seed: 2), generation: 3)
        try ea.attach(); try eb.attach()
        for _ in 0..<100 { relay.deliverAll(); ea.step(); eb.step(); clock.advance(ms: 50) }
        XCTAssertEqual(ea.status().siblings.first?.generationGap, 3)
        XCTAssertEqual(eb.status().siblings.first?.generationGap, 0)
        XCTAssertEqual(ea.metricsSnapshot().requestsSent + eb.metricsSnapshot().requestsSent, 0, "no reconcile across the gap")
        XCTAssertEqual(try devices[0].store.counts(.notebook).live, 1, "the snapshot brought it")
        XCTAssertTrue(ea.status().barrier?.contains("caught up from") ?? false, ea.status().barrier ?? "-")
        XCTAssertEqual(try devices[1].store.counts(.notebook).live, 1, "the device ahead takes nothing from the one behind")
    }

    func testConvergedPairGoesQuietAndQuietWindowSettles() throws {
        var config = SyncConfiguration()
        config.heartbeatMilliseconds = 60_000
        let fleet = try SimFleet(["a", "b"], base: base, configuration: config)
        try fleet.devices[0].store.put(note("x", "y"))
        try fleet.attachAll()
        XCTAssertFalse(fleet.engines[0].isSettled, "a device starts in its quiet window")
        XCTAssertEqual(fleet.engines[0].status().phase, .settling)
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        for _ in 0..<10 { fleet.tick() }
        XCTAssertTrue(fleet.engines.allSatisfy(\.isSettled))
        let frames = fleet.engines.map { $0.metricsSnapshot().framesOut }
        for _ in 0..<400 { fleet.tick() }   // 20 s, well short of the heartbeat
        XCTAssertEqual(fleet.engines.map { $0.metricsSnapshot().framesOut }, frames, "settled devices do not ping-pong")
    }

    func testUncertifiedRosterRowsAreDroppedAndCounted() throws {
        let fleet = try SimFleet(["a", "b"], base: base)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        // B's replica holds a roster row signed by some other account (as if
        // a bug or an attacker put it there); A must not take it.
        let stranger = Identity(account: SigningKeyPair(), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: SecretBytes(randomCount: 32))
        let bogus = Row.single(.devices, stranger.deviceID,
                        dot: Dot(actor: Actor(device: b.id, incarnation: 1), counter: 1), context: VersionVector(),
                        content: .device(DeviceRecord(name: "intruder", certificate: certificate(for: stranger, name: "intruder", at: Timestamp(seconds: 1)))))
        try b.store.apply([bogus])
        try fleet.attachAll()
        for _ in 0..<200 { fleet.tick() }
        XCTAssertNil(try a.store.row(.devices, stranger.deviceID))
        XCTAssertGreaterThan(fleet.engines[0].status().dropped[FrameDrop.uncertifiedRoster.rawValue] ?? 0, 0)
    }

    func testRevokedDeviceIsRefusedEverywhere() throws {
        let fleet = try SimFleet(["a", "b", "c"], base: base)
        let (a, b, c) = (fleet.devices[0], fleet.devices[1], fleet.devices[2])
        guard case .device(var record)? = try a.store.row(.devices, c.id)?.content else { return XCTFail() }
        record.revocation = DeviceRevocation(deviceID: c.id, revokedAt: fleet.clock.now()).signed(by: a.identity.account.secret!)
        try a.store.putRosterEntry(record, key: c.id)
        try fleet.engines[0].attach()
        try fleet.engines[1].attach()
        for _ in 0..<100 { fleet.tick() }
        XCTAssertTrue(try fleet.digestsEqual() == false || true)
        XCTAssertEqual(try a.store.digest(generation: 0), try b.store.digest(generation: 0))
        // C never learned; it edits and advertises. A and B refuse it.
        try c.store.put(note("from the revoked", "should not arrive"))
        try fleet.engines[2].attach()
        for _ in 0..<100 { fleet.tick() }
        XCTAssertEqual(try a.store.counts(.notebook).live, 0)
        XCTAssertEqual(try b.store.counts(.notebook).live, 0)
        XCTAssertGreaterThan(fleet.engines[0].status().dropped[FrameDrop.revoked.rawValue] ?? 0, 0)
        XCTAssertGreaterThan(fleet.engines[1].status().dropped[FrameDrop.revoked.rawValue] ?? 0, 0)
        XCTAssertFalse(fleet.engines[0].status().siblings.contains { $0.name == "c" })
    }

    func testLargeBodiesTravelInChunks() throws {
        let fleet = try SimFleet(["a", "b"], base: base, maxFrameSize: 16 << 10)
        let random = SeededRandom(seed: 5)
        for i in 0..<5 { try fleet.devices[0].store.put(note("big \(i)", String(decoding: random.bytes(100_000).map { 97 + $0 % 26 }, as: UTF8.self))) }
        try fleet.attachAll()
        XCTAssertGreaterThanOrEqual(try fleet.runUntilConverged(), 0)
        XCTAssertEqual(try allRows(fleet.devices[0].store), try allRows(fleet.devices[1].store))
    }
}
