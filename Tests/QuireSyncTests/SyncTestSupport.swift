import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireTestSupport
@testable import QuireStore
@testable import QuireSync

/// A seeded, repeatable generator (SplitMix64). Failing tests print the seed.
final class SeededRandom: RandomSource, @unchecked Sendable {
    private let lock = NSLock()
    private var generator: SplitMix64
    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    func next() -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        return generator.next()
    }

    func int(_ range: Range<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
    func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) / 1_000_000 < p }
    func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    func word() -> String { String((0..<int(3..<9)).map { _ in Character(UnicodeScalar(UInt8(97 + int(0..<26)))) }) }
}

/// A clock the test moves by hand, in milliseconds.
final class SimClock: Clock, @unchecked Sendable {
    private let lock = NSLock()
    private var ms: UInt64
    init(startSeconds: UInt64 = 1_800_000_000) { ms = startSeconds * 1000 }
    func now() -> Timestamp { lock.lock(); defer { lock.unlock() }; return Timestamp(seconds: Int64(ms / 1000)) }
    func monotonicMilliseconds() -> UInt64 { lock.lock(); defer { lock.unlock() }; return ms }
    func advance(ms delta: UInt64) { lock.lock(); ms += delta; lock.unlock() }
}

/// A private temporary directory, short enough for AF_UNIX socket paths.
func makeShortTemporaryDirectory() -> String {
    var template = Array("/tmp/qs-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!
    return String(cString: made)
}

/// One device of a test fleet: keys, replica, and (once made) an engine.
final class TestDevice: @unchecked Sendable {
    let name: String
    let identity: Identity
    let store: ReplicaStore
    let dir: String
    var engine: SyncEngine?

    init(name: String, identity: Identity, store: ReplicaStore, dir: String) {
        self.name = name; self.identity = identity; self.store = store; self.dir = dir
    }

    var id: DeviceID { identity.deviceID }

    func rosterRow() throws -> Row { try store.row(.devices, id)! }

    func digest() throws -> [UInt8] { try store.digest(generation: 0).encoded() }

    func makeEngine(relay: any Relay, clock: any Clock, random: any RandomSource, configuration: SyncConfiguration = SyncConfiguration(),
                    generation: UInt64 = 0, withStatus: Bool = false) -> SyncEngine {
        let deps = SyncEngine.Dependencies(store: store, identity: identity, relay: relay, clock: clock, random: random,
                                           generation: { generation }, log: { _ in },
                                           statusPath: withStatus ? dir + "/sync-status.json" : nil,
                                           statePath: withStatus ? dir + "/sync-state.json" : nil, relayDescription: "test")
        let engine = SyncEngine(deps, configuration: configuration)
        self.engine = engine
        return engine
    }
}

/// Devices of one account (or of `account` if given), each knowing every
/// other's certificate, as if paired long ago.
func makeFleet(_ names: [String], in base: String, clock: any Clock = SystemClock(), random: SeededRandom? = nil,
               account: SigningKeyPair = SigningKeyPair(), introduce: Bool = true) throws -> [TestDevice] {
    let backup = SecretBytes(randomCount: 32)
    var devices: [TestDevice] = []
    for name in names {
        let identity = Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: backup)
        let dir = base + "/" + name
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ReplicaStore(path: dir + "/replica.sqlite", deviceID: identity.deviceID, create: true, clock: clock,
                                     random: random ?? SeededRandom(seed: UInt64(devices.count + 1) &* 7919))
        try store.putRosterEntry(DeviceRecord(name: name, certificate: certificate(for: identity, name: name, at: clock.now())),
                                 key: identity.deviceID)
        devices.append(TestDevice(name: name, identity: identity, store: store, dir: dir))
    }
    if introduce {
        for d in devices { for other in devices where other !== d { try d.store.apply([try other.rosterRow()]) } }
    }
    return devices
}

func certificate(for identity: Identity, name: String, at time: Timestamp) -> [UInt8] {
    DeviceCertificate(accountKey: identity.account.publicKey.bytes, deviceID: identity.deviceID, name: name,
                      signingKey: identity.deviceSigning.publicKey.bytes, boxKey: identity.deviceBox.publicKey.bytes,
                      role: "device", issuedAt: time).signed(by: identity.account.secret!)
}

func note(_ title: String, _ body: String) -> RowContent {
    .note(Note(title: title, body: Array(body.utf8), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0)))
}

/// Every live row of a store, for comparing replicas. (Tombstones are not
/// compared: the digest covers live content, so a tombstone for a row a
/// device never held has nothing to bury there and need not travel.)
func allRows(_ store: ReplicaStore) throws -> [String] {
    var out: [String] = []
    for ns in Namespace.allCases {
        for row in try store.rows(ns, from: [], to: nil) {
            out.append("\(ns)/\(row.key.hex) \(row.context) \(Hex.encode(SHA256.hash(CBORWriter.encode(row.content!.fields())).prefix(8)))")
        }
    }
    return out.sorted()
}

/// Keys tombstoned on any of the stores that some store still holds live.
func resurrectedKeys(_ stores: [ReplicaStore]) throws -> [String] {
    var dead = Set<String>(), live = Set<String>()
    for store in stores {
        for ns in Namespace.allCases {
            for t in try store.tombstones(ns) { dead.insert("\(ns)/\(t.key.hex)") }
            for r in try store.rows(ns, from: [], to: nil) { live.insert("\(ns)/\(r.key.hex)") }
        }
    }
    return dead.intersection(live).sorted()
}

/// Waits (real time) until `predicate` holds.
@discardableResult
func waitUntil(timeout: TimeInterval, _ predicate: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try predicate() { return true }
        usleep(20_000)
    }
    return try predicate()
}

typealias TestRedis = TestRedisServer
