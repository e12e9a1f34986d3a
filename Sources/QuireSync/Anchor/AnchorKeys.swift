import QuireCore
import QuireCrypto
import QuireStore

/// The backup keys one device reads and writes the cloud folder with: the
/// account's original key, the rotation keys it holds, and the rotations
/// its device log makes count.
///
/// The rule (SECURITY.md): a device writes under the set of every rotation
/// it knows, and reads only what was written under a set that holds them
/// all. A revoked device still holds every key from before its revocation,
/// so an anchor under an older set may be its forgery, and is refused
/// for recovery, never opened; a device that knows a rotation but lacks its
/// key writes nothing until a sibling gives it the key.
public struct AnchorKeys: Sendable {
    public let original: SecretBytes
    public let ring: BackupKeyRing
    public let schedule: BackupKeySchedule
    /// The account key's X25519 form: an anchor seals its keys to it, for
    /// `quire init --from-cloud`.
    public let accountSealingKey: BoxPublicKey

    public init(original: SecretBytes, ring: BackupKeyRing, schedule: BackupKeySchedule, accountKey: SigningPublicKey) throws {
        self.init(original: original, ring: ring, schedule: schedule, accountSealingKey: try BoxPublicKey(convertingSigningKey: accountKey))
    }

    public init(original: SecretBytes, ring: BackupKeyRing, schedule: BackupKeySchedule, accountSealingKey: BoxPublicKey) {
        self.original = original
        self.ring = ring
        self.schedule = schedule
        self.accountSealingKey = accountSealingKey
    }

    /// Keys of a device with no rotation: the original key only (before
    /// any revocation, and in tests).
    public static func original(_ key: SecretBytes, accountKey: SigningPublicKey) throws -> AnchorKeys {
        try AnchorKeys(original: key, ring: BackupKeyRing(), schedule: BackupKeySchedule(), accountKey: accountKey)
    }

    public var required: [DeviceID] { schedule.required }

    /// The set and key this device writes with: every rotation it knows;
    /// nil while it lacks the key of one of them.
    public var writing: (set: [DeviceID], key: SecretBytes)? {
        guard schedule.missing(in: ring).isEmpty, let key = ring.key(for: required, original: original) else { return nil }
        return (required, key)
    }

    /// What keeps this device from writing, in words (empty when nothing does).
    public var missingWords: String {
        let missing = schedule.missing(in: ring)
        guard !missing.isEmpty else { return "" }
        return "this device does not hold the backup key of " + missing.map(schedule.words).joined(separator: " and ")
            + " (it asks its siblings for it)"
    }

    public enum Verdict {
        case acceptable(SecretBytes)
        /// Written under a set that misses these rotations this device knows.
        case stale(missing: [DeviceID])
        /// Written under rotations whose key this device does not hold.
        case notHeld([DeviceID])
    }

    /// Whether something sealed under `set` may be opened and trusted here.
    public func judge(_ set: [DeviceID]) -> Verdict {
        let missing = required.filter { !set.contains($0) }
        if !missing.isEmpty { return .stale(missing: missing) }
        let lacking = set.filter { id in !ring.holds(id) || (schedule.rotations[id] != nil && !schedule.accepts(ring.keys[id]!, for: id)) }
        if !lacking.isEmpty { return .notHeld(lacking) }
        guard let key = ring.key(for: set, original: original) else { return .notHeld(set) }
        return .acceptable(key)
    }

    /// Rotations named in `set` that this device's log does not know: a
    /// sign that its log is behind (it was put back from an older backup).
    public func unknownRotations(in set: [DeviceID]) -> [DeviceID] {
        set.filter { !schedule.revocations.contains($0) }
    }
}

/// Anchors sealed and opened with a device's keys (the format itself, and
/// opening with one given key, are `AnchorFile`'s: pure, fuzzed).
extension AnchorFile {
    /// Format 2: sealed with the key of every rotation `keys` knows (the
    /// set and key it writes with), the keys of that set sealed to the account.
    public static func seal(_ snapshot: AnchorSnapshot, accountID: [UInt8], keys: AnchorKeys, at: Timestamp) throws -> [UInt8] {
        guard let writing = keys.writing else { throw AnchorError.keyNotHeld(keys.missingWords) }
        let header = AnchorHeader(generation: snapshot.generation, accountID: accountID, writtenAt: at, keySet: writing.set,
                                  sealedForAccount: keys.ring.sealed(to: keys.accountSealingKey, only: writing.set)).encoded()
        return header + (try AEAD.seal(snapshot.encoded(), associatedData: header, with: writing.key))
    }

    /// Opens with a device's keys: an anchor whose key set misses a
    /// rotation this device knows is refused (a revoked device holds the
    /// older keys), never opened; one whose key this device lacks says so.
    public static func open(_ bytes: [UInt8], accountID: [UInt8], keys: AnchorKeys) throws(AnchorError) -> (AnchorHeader, AnchorSnapshot) {
        let header = try self.header(of: bytes, accountID: accountID)
        switch keys.judge(header.keySet) {
        case .acceptable(let key): return try open(bytes, accountID: accountID, key: key)
        case .stale(let missing): throw .staleKey("generation \(header.generation) is sealed with a backup key from before "
                                                   + missing.map(keys.schedule.words).joined(separator: " and "))
        case .notHeld(let ids): throw .keyNotHeld("generation \(header.generation) is sealed with the backup key of "
                                                 + ids.map(keys.schedule.words).joined(separator: " and ") + ", which this device does not hold")
        }
    }
}
