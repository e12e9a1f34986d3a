import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// Backup-key rotation, as the engine lives it: which keys the log calls
/// for (`BackupKeySchedule`), opening the ones sealed to this device,
/// keeping them durably before anything uses them, and asking siblings for
/// the ones it lacks.
extension SyncEngine {
    /// The keys the cloud folder is read and written with, now.
    var anchorKeys: AnchorKeys {
        AnchorKeys(original: backupKey, ring: rotationKeys, schedule: keySchedule, accountSealingKey: accountSealingKey)
    }

    /// After the roster changed: opens what is sealed to this device and
    /// not held yet, stores it, and asks for what is still missing.
    func refreshBackupKeys(nowMs: UInt64) {
        guard backupKeyIsReal, let mine = roster[me.deviceID], mine.trust == .trusted else { return }
        let (ring, added, problems) = keySchedule.open(for: me.deviceID, box: deps.identity.deviceBox, sealedRing: mine.sealedKeyRing,
                                                       into: rotationKeys)
        keyProblems = problems
        for problem in problems { noteOnce("backup keys: " + problem) }
        // Added, or removed for failing its check (a key replaced keeps the ids).
        if ring.ids != rotationKeys.ids || !added.isEmpty {
            guard keep(ring) else { return }
            if !added.isEmpty { note("backup keys: now holds the key of " + added.map(keySchedule.words).joined(separator: " and ")) }
        }
        requestMissingKeys(nowMs: nowMs)
    }

    /// Stores the ring (keys/backup-keys, fsync) and only then uses it.
    func keep(_ ring: BackupKeyRing) -> Bool {
        do {
            try deps.keepRotationKeys?(ring)
            rotationKeys = ring
            return true
        } catch {
            keyProblems.append("the backup keys cannot be stored (\(error)); they are not used until they can be")
            report("storing the backup keys", error)
            return false
        }
    }

    /// Asks every trusted sibling for the keys still missing, at most once a heartbeat.
    func requestMissingKeys(nowMs: UInt64) {
        guard phase != .revoked, backupKeyIsReal else { return }
        let missing = keySchedule.missing(in: rotationKeys)
        guard !missing.isEmpty else { return }
        if let last = keyRequestAtMs, nowMs &- last < configuration.heartbeatMilliseconds { return }
        keyRequestAtMs = nowMs
        let payload = KeyRequest(ids: missing).encoded()
        for sibling in roster.siblings(of: me.deviceID) { send(.keyRequest, payload, to: sibling.deviceID) }
    }

    /// A trusted sibling asks for keys: it gets those of rotations this
    /// log makes count and this device holds (checked), sealed to it alone.
    func handleKeyRequest(_ request: KeyRequest, from sender: DeviceID) {
        guard roster[sender]?.trust == .trusted, phase != .revoked else { return }
        var give = BackupKeyRing()
        for id in request.ids where keySchedule.rotations[id] != nil {
            if let key = rotationKeys.keys[id], keySchedule.accepts(key, for: id) { give.add(id, key) }
        }
        guard !give.isEmpty else { return }
        var payload = give.encodedSecret()
        defer { secureZero(&payload) }
        if send(.keyResponse, payload, to: sender) {
            note("backup keys: gave \(name(of: sender)) the key of " + give.ids.map(keySchedule.words).joined(separator: " and "))
        }
    }

    /// Keys a sibling sent: each is kept only if this device asked for it
    /// (it is missing here) and it matches its rotation's check value.
    func handleKeyResponse(_ payload: [UInt8], from sender: DeviceID) throws {
        guard roster[sender]?.trust == .trusted else { return }
        let given: BackupKeyRing
        do { given = try BackupKeyRing.decodeSecret(payload) } catch { throw CBORError.invalidValue("backup keys: \(error)") }
        var ring = rotationKeys
        var added: [DeviceID] = []
        let missing = Set(keySchedule.missing(in: ring))
        for (id, key) in given.keys where missing.contains(id) {
            guard keySchedule.accepts(key, for: id) else {
                count(.badPayload)
                note("backup keys: refused the key \(name(of: sender)) sent for \(keySchedule.words(id)): it does not match its check")
                continue
            }
            ring.add(id, key)
            added.append(id)
        }
        guard !added.isEmpty, keep(ring) else { return }
        keyProblems = []
        note("backup keys: \(name(of: sender)) gave this device the key of " + added.sorted().map(keySchedule.words).joined(separator: " and "))
    }

    /// After a revocation, no anchor in the folder may be sealed under the
    /// current key set yet: the leader runs a round for it even with no
    /// tombstones, so the fleet's anchor is soon one a revoked device can
    /// neither read nor have forged. Headers only: no key, no body read.
    func anchorNeedsRotation() -> Bool {
        guard let cloud = deps.cloud, let writing = anchorKeys.writing, !writing.set.isEmpty,
              let candidates = try? cloud.candidates() else { return false }
        return !candidates.contains { Set($0.header.keySet).isSuperset(of: writing.set) }
    }

    /// What the cloud folder or the keys say that a person should know, in words.
    func cloudWarnings(survey: CloudFolder.Survey, local: UInt64) -> [String] {
        var out: [String] = []
        if !survey.unknownRotations.isEmpty {
            out.append("the cloud folder holds an anchor sealed after a revocation this device has not learned ("
                       + survey.unknownRotations.map { "statement \($0.hex.prefix(8))" }.joined(separator: ", ")
                       + "; it was put back from an older backup?): no anchor is trusted here until a sibling brings its device log up to date")
        }
        for file in survey.unreadable {
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            out.append("the anchor file \(file) is empty, cut short or damaged (\(size) bytes): a sync service's placeholder "
                       + "or an interrupted download? It is not used; until the next barrier writes a new one, a device put back "
                       + "from a backup is guarded only by the anchors that remain" + (survey.newest == nil ? " (none here)" : ""))
        }
        for file in survey.otherAccount {
            out.append("the anchor file \(file) belongs to ANOTHER ACCOUNT (whole, but its header names another account id): it is "
                       + "never used here. Was it copied in, or does another account share this cloud folder? Move it to that account's "
                       + "folder; until the next barrier writes this account's anchor, a device put back from a backup is guarded only by "
                       + "the anchors that remain" + (survey.newest == nil ? " (none here)" : ""))
        }
        for refusal in survey.refused {
            switch refusal.error {
            case .staleKey(let why) where refusal.generation > local:
                out.append("REFUSED an anchor above this device's generation \(local): \(why); if no device of the account wrote it since, "
                           + "a revoked device did. It is never used; delete \(refusal.path) and take the revoked device's access to the cloud folder away")
            case .staleKey(let why):
                out.append("the anchor is not used for recovery: \(why); the next barrier writes one under the current key")
            case .keyNotHeld(let why):
                out.append("an anchor cannot be opened here: \(why)")
            default:
                out.append("the anchor at generation \(refusal.generation) is not used: \(refusal.error)")
            }
        }
        return out
    }
}
