import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

/// One simulated device: keys derived from the run's seed, a device
/// directory on the simulated disk, and (while powered) its real replica
/// and (while online) its real sync engine.
public final class SimDevice: @unchecked Sendable {
    public let slot: Int
    public let name: String
    public let identity: Identity
    public let home: DeviceHome
    /// Open while the device is powered on.
    public internal(set) var store: ReplicaStore?
    /// Running while the device is online.
    public internal(set) var engine: SyncEngine?
    /// Copies of the device directory taken so far (oldest first).
    public internal(set) var backups: [String] = []
    /// Restores so far (names the directory each one moved aside).
    var restores = 0
    /// Lost and revoked: no longer one of the fleet the invariants speak of.
    public internal(set) var isRevoked = false
    /// For each copy: this device's own counter in every row it held then
    /// (what a restore would roll back to).
    var backupCounters: [[RowRef: UInt64]] = []
    /// The disk under its replica (power loss loses what it did not sync);
    /// a fresh one at each opening, since files at rest are durable.
    var disk: PowerLossDisk?
    /// Its generation as its engine reads it (prefs, cached like the real service's).
    let generation = GenerationCell()
    /// Simulated milliseconds at which it joined the fleet.
    public let joinedAtMs: UInt64
    /// Its own wall clock (skewed from the fleet's).
    public let clock: DeviceClock
    /// How many times the replica was opened and an engine started: each
    /// opening and start draws from a stream of its own (a reopened store
    /// must not draw the row keys it drew before).
    var openings = 0
    var engineStarts = 0
    /// Armed: the next body this homebase receives cuts its power before it
    /// is committed (the engine's test hook, set again at every start).
    var cutsPowerOnNextHold = false
    /// The cut happened inside a step: the fleet restarts the device after it.
    var powerCutPending = false

    init(slot: Int, name: String, identity: Identity, home: DeviceHome, joinedAtMs: UInt64, clock: DeviceClock) {
        self.slot = slot
        self.name = name
        self.identity = identity
        self.home = home
        self.joinedAtMs = joinedAtMs
        self.clock = clock
    }

    public var id: DeviceID { identity.deviceID }
    public var isPowered: Bool { store != nil }
    public var isOnline: Bool { engine != nil }

    /// The files a device backup captures (and a restore puts back): the
    /// replica with its WAL, the prefs, the engine's persistent state.
    static let directoryFiles = ["replica.sqlite", "replica.sqlite-wal", "replica.sqlite-shm", "prefs.json",
                                 "sync-state.json", "sync-status.json", BackupKeyRing.fileName]

    /// Its rotation keys, as its directory holds them (a restore puts older ones back).
    func rotationKeys() throws -> BackupKeyRing { try BackupKeyRing.load(keysPath: home.path) }

    /// Keys for slot `slot` of the fleet seeded with `seed`: the same seed
    /// always makes the same devices (their ids order vectors and break ties).
    static func makeIdentity(seed: UInt64, slot: Int, account: SigningKeyPair, backupKey: SecretBytes) -> Identity {
        let signing = try! SigningKeyPair(seed: SecretBytes(copying: SeedMix.keyMaterial(seed, "device-signing", slot)))
        let box = try! BoxKeyPair(seed: SecretBytes(copying: SeedMix.keyMaterial(seed, "device-box", slot)))
        return Identity(account: account, deviceSigning: signing, deviceBox: box, backupKey: backupKey)
    }
}

/// A device's generation: read by its engine at every digest, written only
/// through the prefs (which refuse to move it backward), reloaded from them
/// whenever an engine starts (a restore puts older prefs back).
final class GenerationCell: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: UInt64 = 0

    var value: UInt64 { lock.lock(); defer { lock.unlock() }; return stored }

    func set(_ value: UInt64) { lock.lock(); stored = value; lock.unlock() }
}
