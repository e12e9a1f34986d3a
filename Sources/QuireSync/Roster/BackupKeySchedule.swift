import QuireCore
import QuireCrypto
import QuireStore

/// Which backup keys the device log calls for, as a pure function of the
/// log (like the roster): every revocation that counts and carries a fresh
/// key (a *rotation*) adds one. Anchors and commit records are sealed with
/// the key of the set of every rotation (`BackupKeyRing.key(for:)`), so
/// devices that know the same statements use the same key, whatever the
/// order they learned them in, and concurrent revocations need no winner.
///
/// Where a device gets each key: the revocation seals it to every device
/// its signer left on the roster; an admit seals to the joiner every key
/// its signer held; a device that still lacks one (admitted concurrently
/// with the revocation, or its sealed copy damaged) asks a trusted sibling
/// (`key_req`). Every key, however received, must match its rotation's
/// check value before it is kept.
public struct BackupKeySchedule: Sendable {
    public struct Rotation: Sendable {
        /// The revocation statement's id: the key's name.
        public let id: DeviceID
        public let revoked: DeviceID
        public let revokedName: String
        public let at: Timestamp
        public let check: [UInt8]
        public let sealed: [DeviceID: [UInt8]]

        /// "the revocation of 'phone' (statement 1a2b3c4d)".
        public var words: String { "the revocation of '\(revokedName)' (statement \(id.hex.prefix(8)))" }
    }

    public let rotations: [DeviceID: Rotation]
    /// Every revocation statement of the log, counting or not: a key set
    /// naming one of these is not a sign that this device's log is behind.
    public let revocations: Set<DeviceID>

    public init(rotations: [DeviceID: Rotation] = [:]) {
        self.rotations = rotations
        revocations = Set(rotations.keys)
    }

    /// The rotations of a log: counting revocations that carry a key.
    public init(log: DeviceLog, roster: Roster, verdicts: [DeviceID: DeviceLog.Verdict]? = nil) {
        let verdict = verdicts ?? log.verdicts()
        var found: [DeviceID: Rotation] = [:]
        for entry in log.entries.values where entry.statement.kind == .revoke && verdict[entry.id] == .counts {
            guard let check = entry.statement.rotationKeyCheck else { continue }
            let s = entry.statement
            found[entry.id] = Rotation(id: entry.id, revoked: s.subject, revokedName: roster[s.subject]?.name ?? s.subject.hex.prefix(12).description,
                                       at: s.at, check: check, sealed: s.sealedRotationKeys)
        }
        rotations = found
        revocations = Set(log.entries.values.filter { $0.statement.kind == .revoke }.map(\.id))
    }

    /// Every rotation's id, in order: the set a device writes under.
    public var required: [DeviceID] { rotations.keys.sorted() }

    public func words(_ id: DeviceID) -> String {
        rotations[id]?.words ?? "a revocation this device has not learned (statement \(id.hex.prefix(8)))"
    }

    /// Whether `key` is the key of rotation `id` (a rotation this log does
    /// not know cannot be checked: false).
    public func accepts(_ key: SecretBytes, for id: DeviceID) -> Bool {
        guard let rotation = rotations[id] else { return false }
        return BackupKeyRing.check(of: key) == rotation.check
    }

    /// The rotations whose key `ring` lacks, or holds a key of that does not check.
    public func missing(in ring: BackupKeyRing) -> [DeviceID] {
        required.filter { id in ring.keys[id].map { !accepts($0, for: id) } ?? true }
    }

    /// Opens what the log seals to `device` and `ring` lacks: its copy in
    /// each rotation, and the keys sealed in the admit that admitted it
    /// (`sealedRing`). A key is added only if it matches its rotation's
    /// check (keys of rotations not known yet are kept, and checked once
    /// their rotation is). Returns the ring, the ids added, and a sentence
    /// for each sealed copy that did not open or check.
    public func open(for device: DeviceID, box: BoxKeyPair, sealedRing: [UInt8]?,
                     into ring: BackupKeyRing) -> (ring: BackupKeyRing, added: [DeviceID], problems: [String]) {
        var ring = ring
        var added: [DeviceID] = []
        var problems: [String] = []
        for id in missing(in: ring) { ring.remove(id) }
        if let sealedRing {
            do {
                let given = try BackupKeyRing.open(sealedRing, with: box)
                for (id, key) in given.keys where !ring.holds(id) {
                    if rotations[id] != nil && !accepts(key, for: id) {
                        problems.append("the backup key of \(words(id)) in the statement that admitted this device does not match its check")
                        continue
                    }
                    ring.add(id, key)
                    added.append(id)
                }
            } catch {
                problems.append("the backup keys sealed to this device in the statement that admitted it do not open (\(error))")
            }
        }
        for id in required where !ring.holds(id) {
            guard let sealed = rotations[id]!.sealed[device] else { continue }
            do {
                var opened = try Box.openAnonymous(sealed, to: box)
                defer { secureZero(&opened) }
                let key = SecretBytes(copying: opened)
                guard opened.count == AEAD.keyByteCount, accepts(key, for: id) else {
                    problems.append("the backup key sealed to this device in \(words(id)) is damaged (it does not match its check)")
                    continue
                }
                ring.add(id, key)
                added.append(id)
            } catch {
                problems.append("the backup key sealed to this device in \(words(id)) does not open (damaged, or sealed to another key)")
            }
        }
        return (ring, added.sorted(), problems)
    }
}
