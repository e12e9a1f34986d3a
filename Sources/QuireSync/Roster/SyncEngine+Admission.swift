import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// Introductions and admissions. A device introduces itself to each sibling
/// with the statements of its device log, sealed anonymously (a device that
/// just joined is not on the sibling's roster yet, so its ordinary frames
/// would be refused). A device still waiting to be admitted adds its
/// enrolment, signed by the invite's one-time pairing key; the first
/// trusted device that receives it checks the grant (it counts, it has not
/// expired by this device's clock, no other device was admitted under it)
/// and writes a statement admitting the joiner, with the account's backup
/// key and every rotation key it holds sealed to the joiner's box key. The
/// statement spreads like any row.
extension SyncEngine {
    /// Sends this device's introduction to one sibling.
    func introduce(to device: DeviceID) {
        guard phase != .revoked, let sibling = siblings[device] else { return }
        do {
            let rows = try store.rows(.devices, from: [], to: nil)
            let message = IntroduceMessage(rows: Array(rows.prefix(IntroduceMessage.maxRows)),
                                           enrolment: roster[me.deviceID]?.trust == .trusted ? nil : deps.enrolment)
            let frame = link.sealIntroduction(message.encoded(), to: device, boxKey: sibling.member.boxKey)
            try deps.relay.publish(frame, to: sibling.channel)
            metrics.framesOut += 1
            metrics.bytesOut += frame.count
            let nowMs = clock.monotonicMilliseconds()
            siblings.update(device) { $0.introduced(bytes: frame.count, nowMs: nowMs, maxBackoffMs: configuration.heartbeatMilliseconds) }
            relayAnswered()
        } catch {
            metrics.sendErrors += 1
            wedge.error(.siblings, "frames cannot be sent (the relay is unreachable?)", nowMs: clock.monotonicMilliseconds())
            report("cannot introduce this device to \(name(of: device))", error)
            relayFailed(error)
        }
    }

    func handleIntroduce(_ message: IntroduceMessage, from sender: DeviceID, nowMs: UInt64) throws {
        let known = roster[sender].map { !$0.isRevoked } ?? false
        // Anyone may seal an introduction to us: a refusal is only words for
        // the user, and admission still waits for a signed statement.
        if let refusal = message.refusal, deps.enrolment != nil, roster[me.deviceID]?.trust != .trusted,
           admissionRefusal != refusal {
            admissionRefusal = refusal
            note("\(name(of: sender)) refused to admit this device: \(refusal)")
        }
        // An introduction is sealed anonymously: anyone who knows the account
        // id (a revoked device does) can send one. Keep only the statements
        // that count once added to ours, so it cannot fill the log with
        // statements of revoked devices or of keys nobody admitted.
        // Only admits and grants (what the sender's own admission rests on):
        // a revocation or a role travels only in authenticated frames from a
        // trusted sibling, so a revoked device claiming a made-up sender id
        // cannot slip one in here.
        let offered = certifiedRows(message.rows).filter { row in
            row.heads.allSatisfy { head in
                guard case .device(let record) = head.content, record.revocation == nil else { return false }
                guard let s = try? DeviceStatement.verify(record.certificate, accountKey: accountKey) else { return true }  // legacy certificate
                return s.kind == .admit || s.kind == .grant
            }
        }
        let existing = try store.rows(.devices, from: [], to: nil)
        let verdicts = DeviceLog(rows: existing + offered, accountKey: accountKey).verdicts()
        let rows = offered.filter { row in
            existing.contains { $0.key == row.key } || row.heads.contains { head in
                if case .device(let record) = head.content { return verdicts[DeviceStatement.id(of: record.certificate)] == .counts }
                return false
            }
        }
        if rows.count < offered.count { count(.uncertifiedRoster, offered.count - rows.count) }
        let (applied, _) = try store.apply(rows, from: sender)
        if applied > 0 {
            invalidateDigest()
            markDirty(nowMs: nowMs)
            try reloadRoster()
        }
        if roster[sender]?.isRevoked != false, let enrolment = message.enrolment {
            admit(enrolment, from: sender, offered: offered, nowMs: nowMs)
        }
        if !known, let member = roster[sender], !member.isRevoked {
            note("device '\(member.name)' (\(sender.hex.prefix(12))) joined the account")
        }
        guard siblings[sender] != nil else { return }
        // Its answers (sealed with its roster key) will show it is alive;
        // the introduce itself cannot. Give it our digest to pull from.
        sendDigest(to: sender)
    }

    /// Admits a joining device whose enrolment checks out; otherwise says why not.
    /// `offered`: the statements its introduction carried (its invite's grant
    /// among them, even when that grant does not count here).
    func admit(_ signed: [UInt8], from sender: DeviceID, offered: [Row] = [], nowMs: UInt64) {
        /// `joiner`: the verified enrolment, whose box key the reason is
        /// sealed to (an unverified one gets no answer: we would be sending
        /// words to whatever key a stranger named).
        func refuse(_ why: String, joiner: Enrolment? = nil) {
            count(.uncertifiedRoster)
            // A verified joiner is always told (only an invite's holder can
            // ask); the log line is what a flood must not multiply.
            if let joiner { tellRefused(sender, boxKey: joiner.boxKey, why: why) }
            let (allowed, suppressed) = refusalLog.allow("admission", nowMs: nowMs)
            guard allowed else { return }
            note("refused to admit device \(sender.hex.prefix(12)): \(why)"
                 + (suppressed > 0 ? " (and \(suppressed) more refusals in the last minute, not logged)" : ""))
        }
        guard roster[me.deviceID]?.trust == .trusted, backupKeyIsReal else { return }
        guard let grantID = Enrolment.claimedGrant(signed) else { return refuse("its enrolment is damaged") }
        do {
            let existing = try store.rows(.devices, from: [], to: nil)
            let log = DeviceLog(rows: existing, accountKey: accountKey)
            guard let grant = log.countingGrant(grantID) else {
                let why = "its invite is not one this account's trusted devices made (unknown, or made by a revoked device)"
                // A grant signed by a device since revoked: the joiner is told
                // (it cannot be admitted until it has a new invite), once its
                // enrolment is shown to be signed by that grant's pairing key.
                guard let made = DeviceLog(rows: existing + offered, accountKey: accountKey).entries[grantID]?.statement,
                      made.kind == .grant, let signer = roster[made.signer], signer.isRevoked,
                      let key = try? SigningPublicKey(bytes: made.pairingKey),
                      let enrolment = try? Enrolment.verify(signed, pairingKey: key), enrolment.deviceID == sender
                else { return refuse(why) }
                return refuse("its invite was made by '\(signer.name)', which was revoked; make a new one with 'quire invite' on a trusted device",
                              joiner: enrolment)
            }
            let pairingKey = try SigningPublicKey(bytes: grant.pairingKey)
            let enrolment: Enrolment
            do { enrolment = try Enrolment.verify(signed, pairingKey: pairingKey) } catch {
                return refuse("its enrolment is not signed by the invite's pairing key")
            }
            guard enrolment.deviceID == sender else { return refuse("its enrolment names another device") }
            // The expiry is checked here, by a device of the account, with
            // its own clock: a joiner's clock cannot stretch an invite.
            guard clock.now().seconds < grant.expiresAt.seconds else {
                return refuse("its invite expired on \(DateStamp.format(grant.expiresAt)); make a new one with 'quire invite'",
                              joiner: enrolment)
            }
            if let used = log.admitted(under: grantID), used != sender {
                return refuse("its invite was already used by device \(used.hex.prefix(12)); an invite admits one device: make a new one with 'quire invite'",
                              joiner: enrolment)
            }
            if log.admitted(under: grantID) == sender { return }
            var statement = DeviceStatement(kind: .admit, accountKey: accountKey.bytes, signerKey: deps.identity.deviceSigning.publicKey.bytes,
                                            subject: sender, at: clock.now())
            statement.name = enrolment.name
            statement.subjectSigningKey = enrolment.signingKey
            statement.subjectBoxKey = enrolment.boxKey
            statement.role = enrolment.role == "homebase" ? "homebase" : "device"
            statement.grant = grantID
            var key = backupKey.withUnsafeBytes { Array($0) }
            defer { secureZero(&key) }
            let joinerBox = try BoxPublicKey(bytes: enrolment.boxKey)
            statement.sealedBackupKey = Box.sealAnonymously(key, to: joinerBox)
            // Every rotation key held here, so the joiner reads the current
            // anchor (and older ones) and writes under the current key.
            if !rotationKeys.isEmpty { statement.sealedKeyRing = rotationKeys.sealed(to: joinerBox) }
            let signedStatement = statement.signed(by: deps.identity.deviceSigning)
            let (rowKey, record) = DeviceStatement.row(signedStatement, displayName: enrolment.name)
            try store.putRosterEntry(record, key: rowKey)
            invalidateDigest()
            markDirty(nowMs: nowMs)
            try reloadRoster()
            note("admitted device '\(enrolment.name)' (\(sender.hex.prefix(12))) with an invite made by \(name(of: grant.signer))")
        } catch {
            report("cannot admit device \(sender.hex.prefix(12))", error)
        }
    }

    /// Tells a joining device why it was refused: an introduction with our
    /// device log and the reason, sealed to the box key its enrolment gave.
    func tellRefused(_ joiner: DeviceID, boxKey: [UInt8], why: String) {
        do {
            let key = try BoxPublicKey(bytes: boxKey)
            let rows = try store.rows(.devices, from: [], to: nil)
            let message = IntroduceMessage(rows: Array(rows.prefix(IntroduceMessage.maxRows)), refusal: why)
            let frame = link.sealIntroduction(message.encoded(), to: joiner, boxKey: key)
            try deps.relay.publish(frame, to: SyncChannel.name(userIDHash: me.userIDHash, device: joiner))
            metrics.framesOut += 1
            metrics.bytesOut += frame.count
        } catch {
            report("cannot tell device \(joiner.hex.prefix(12)) why it was refused", error)
        }
    }

    /// Once a sibling admitted this device, opens the backup key sealed to
    /// it in the admitting statement and keeps it (the anchor needs it).
    func pickUpBackupKey() {
        guard !backupKeyIsReal, let mine = roster[me.deviceID], mine.trust == .trusted, let sealed = mine.sealedBackupKey else { return }
        do {
            var opened = try Box.openAnonymous(sealed, to: deps.identity.deviceBox)
            defer { secureZero(&opened) }
            guard opened.count == 32 else { throw PairingError("the sealed backup key has the wrong length") }
            let key = SecretBytes(copying: opened)
            try deps.admitted?(key)
            backupKey = key
            backupKeyIsReal = true
            note("this device was admitted to the account by \(mine.addedBy.map { name(of: $0) } ?? "the account key")")
        } catch {
            report("this device was admitted, but the backup key sealed to it does not open", error)
        }
    }
}

/// At most one log line per kind of refusal per interval; the next line says
/// how many were left out. Kinds are a fixed set chosen by the code, never
/// taken from a frame, so made-up senders cannot grow it.
struct LogThrottle: Sendable {
    static let intervalMs: UInt64 = 60_000
    private var lastMs: [String: UInt64] = [:]
    private var suppressed: [String: Int] = [:]

    mutating func allow(_ kind: String, nowMs: UInt64) -> (allowed: Bool, suppressed: Int) {
        if let last = lastMs[kind], nowMs &- last < Self.intervalMs {
            suppressed[kind, default: 0] += 1
            return (false, 0)
        }
        lastMs[kind] = nowMs
        let left = suppressed[kind] ?? 0
        suppressed[kind] = 0
        return (true, left)
    }
}
