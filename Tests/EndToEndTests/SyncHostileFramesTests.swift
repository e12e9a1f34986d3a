import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import QuireSync
import QuireTestSupport
import XCTest

/// Frames that are random bytes, truncated, from another account, from a
/// revoked device, replayed or reordered, thrown at running `quire sync`
/// processes through the real relay: nothing in the replicas changes, and
/// each is counted by reason in `quire status`.
class SyncHostileFramesBase: SyncEndToEndBase {
    func runHostileScenario() throws {
        try makeThreeDevices()
        try startAll()
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b"), home("c")], timeout: 30), daemons.map(\.output).joined())
        // c leaves the fleet and is revoked from a; the revocation spreads to b.
        daemons[2].stop()
        daemons.removeLast()
        try quireOK(["devices", "revoke", "c"], home: home("a"))
        XCTAssertTrue(waitUntilTrue(timeout: 20) {
            guard let r = try? quire(["devices", "--json"], home: self.home("b")),
                  let list = (try? jsonObject(r.stdout) as? [String: Any])?["devices"] as? [[String: Any]] else { return false }
            return list.contains { $0["name"] as? String == "c" && $0["revoked"] as? Bool == true }
        }, "b never learned that c was revoked")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 20))

        // An eavesdropper on a's channel records b's frames to a.
        let tap = try Eavesdropper(relay: relay, home: home("a"))
        defer { withExtendedLifetime(tap) {} }
        let (aIdentity, relayObject, channel) = (tap.identity, tap.relay, tap.channel)
        try put(home("b"), ["notebook", "Legit"], body: "from b")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 20))
        let frames = tap.stop()
        XCTAssertGreaterThan(frames.count, 0, "nothing captured on a's channel")
        let before = try digestRoots(home("a"))

        // Random bytes, a real frame cut short, and the captured frames
        // replayed, then replayed again in reverse order.
        var generator = SystemRandomNumberGenerator()
        for n in [1, 40, 41, 300, 5000] { try relayObject.publish((0..<n).map { _ in UInt8.random(in: 0...255, using: &generator) }, to: channel) }
        try relayObject.publish(Array(frames[0].prefix(frames[0].count - 7)), to: channel)
        for f in frames { try relayObject.publish(f, to: channel) }
        for f in frames.reversed() { try relayObject.publish(f, to: channel) }

        // Another account: an ordinary frame (unknown sender) and an introduce (other account).
        let stranger = Identity(account: SigningKeyPair(), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: SecretBytes(randomCount: 32))
        var sealer = FrameSealer(identity: FrameIdentity(deviceID: stranger.deviceID, userIDHash: stranger.userIDHash, box: stranger.deviceBox),
                                 session: Array(repeating: 9, count: 8), sessionStart: 1, maxFrameSize: relayObject.maxFrameSize)
        var roots: [Namespace: [UInt8]] = [:]
        for ns in Namespace.allCases { roots[ns] = Array(repeating: 0xEE, count: 32) }
        let fakeDigest = DigestMessage(digest: StateDigest(roots: roots, generation: 0).encoded()).encoded()
        for f in sealer.seal(SyncMessage(subKind: .stateDigest, payload: fakeDigest), to: aIdentity.deviceID,
                             boxKey: aIdentity.deviceBox.publicKey, messageID: Array(repeating: 1, count: 8)) {
            try relayObject.publish(f, to: channel)
        }
        let strangerRow = Row.single(.devices, stranger.deviceID,
                              dot: Dot(actor: Actor(device: stranger.deviceID, incarnation: 1), counter: 1), context: VersionVector(),
                              content: .device(DeviceRecord(name: "intruder", certificate: stranger.signedCertificate(name: "intruder", issuedAt: Timestamp(seconds: 1)))))
        try relayObject.publish(sealer.sealAnonymously(SyncMessage(subKind: .introduce, payload: IntroduceMessage(row: strangerRow).encoded()),
                                                       to: aIdentity.deviceID, boxKey: aIdentity.deviceBox.publicKey), to: channel)

        // The revoked device wakes up, edits and syncs: refused everywhere.
        try put(home("c"), ["notebook", "From the revoked"], body: "must not arrive")
        daemons.append(try SyncDaemon(home: home("c"), relay: relay))

        var dropped: [String: Int] = [:]
        let counted = waitUntilTrue(timeout: 20) {
            dropped = ((try? syncStatus(self.home("a")))?["dropped"] as? [String: Int]) ?? [:]
            // (A real frame cut short opens with no key: format 2 counts it
            // with the unknown senders, as it names no sender to blame.)
            return (dropped["malformed"] ?? 0) >= 4 && (dropped["replay"] ?? 0) >= 2 * frames.count
                && (dropped["unknownSender"] ?? 0) >= 2 && (dropped["otherAccount"] ?? 0) >= 1 && (dropped["revoked"] ?? 0) >= 1
        }
        XCTAssertTrue(counted, "a's counters: \(dropped)")
        XCTAssertEqual(try digestRoots(home("a")), before, "hostile frames changed a's replica")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 10))
        for n in ["a", "b"] {
            let list = try quire(["ls", "notebook"], home: home(n)).stdout
            XCTAssertTrue(list.contains("Legit"), "\(n): \(list)")
            XCTAssertFalse(list.contains("From the revoked"), "\(n) took a revoked device's edit")
            XCTAssertFalse(try quire(["devices"], home: home(n)).stdout.contains("intruder"))
        }
        let words = try quire(["status"], home: home("a")).stdout
        XCTAssertTrue(words.contains("dropped frames:") && words.contains("replayed") && words.contains("from a revoked device"), words)
    }
}

final class SyncHostileFramesLocalRelayTests: SyncHostileFramesBase {
    func testHostileFramesChangeNothingAndAreCounted() throws {
        try runHostileScenario()
    }
}

final class SyncHostileFramesRedisTests: SyncHostileFramesBase {
    override var relay: String { (try? SharedTestRedis.url()) ?? "redis://127.0.0.1:1" }

    func testHostileFramesOverRedisChangeNothingAndAreCounted() throws {
        _ = try SharedTestRedis.url()   // fails the test with the reason when Redis is missing
        try runHostileScenario()
    }
}
