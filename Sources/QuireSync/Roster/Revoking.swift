import QuireCore
import QuireCrypto
import QuireStore

/// `quire devices revoke`: a revocation signed by this device's own key,
/// added to the device log. What the revoked device signed before, as this
/// device saw it, stays (`kept`); nothing it signs after counts anywhere.
///
/// It also rotates the backup key: a fresh random key, sealed to every
/// device left trusted on the roster (this one included, never the revoked
/// one), with a public check value (`BackupKeySchedule`). Anchors written
/// after this device learns the revocation are sealed with a key that
/// mixes it in, which the revoked device cannot make.
public enum Revoking {
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case notAdmitted, revoked, unknownDevice, thisDevice

        public var description: String {
            switch self {
            case .notAdmitted: return "this device has not been admitted to the account yet: it cannot revoke devices"
            case .revoked: return "this device was revoked (or never validly admitted): it cannot revoke devices"
            case .unknownDevice: return "no trusted device on the roster matches (revoked devices stay revoked); see 'quire devices'"
            case .thisDevice: return "this is the device you are on; revoke it from another device of the account"
            }
        }
    }

    /// Revokes `target` from the device `identity` on its `store`; returns
    /// the roster as this device reads it afterwards.
    /// `keep` receives the rotation's key (named by the statement's id)
    /// before the statement is written: the caller stores it durably
    /// (`keys/backup-keys`), so nothing can rely on a key this device lost.
    @discardableResult
    public static func revoke(_ target: DeviceID, by identity: Identity, store: ReplicaStore, at: Timestamp,
                              keep: (DeviceID, SecretBytes) throws -> Void = { _, _ in }) throws -> Roster {
        let log = DeviceLog(rows: try store.rows(.devices, from: [], to: nil), accountKey: identity.account.publicKey)
        let roster = log.roster()
        guard let me = roster[identity.deviceID] else { throw Refusal.notAdmitted }
        guard me.trust == .trusted else { throw Refusal.revoked }
        guard target != identity.deviceID else { throw Refusal.thisDevice }
        guard let member = roster[target] else { throw Refusal.unknownDevice }
        // Revoked already: only again when no rotation names it (revoked before
        // rotation existed, so it still holds the backup key).
        if member.isRevoked {
            let verdicts = log.verdicts()
            let rotated = BackupKeySchedule(log: log, roster: roster, verdicts: verdicts).rotations.values.contains { $0.revoked == target }
            guard member.trust == .revoked, !rotated else { throw Refusal.unknownDevice }
        }
        var statement = DeviceStatement(kind: .revoke, accountKey: identity.account.publicKey.bytes,
                                        signerKey: identity.deviceSigning.publicKey.bytes, subject: target, at: at)
        statement.kept = log.countingStatements(signedBy: target)
        let fresh = SecretBytes(randomCount: AEAD.keyByteCount)
        var plain = fresh.withUnsafeBytes { Array($0) }
        defer { secureZero(&plain) }
        for remaining in roster.members.values where remaining.trust == .trusted && remaining.deviceID != target {
            statement.sealedRotationKeys[remaining.deviceID] = Box.sealAnonymously(plain, to: remaining.boxKey)
        }
        statement.rotationKeyCheck = BackupKeyRing.check(of: fresh)
        let signed = statement.signed(by: identity.deviceSigning)
        try keep(DeviceStatement.id(of: signed), fresh)
        let (key, record) = DeviceStatement.row(signed, displayName: "revocation of \(member.name)")
        try store.putRosterEntry(record, key: key)
        return try Roster.load(from: store, accountKey: identity.account.publicKey).roster
    }
}
