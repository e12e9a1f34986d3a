import QuireCore
import QuireCrypto

/// One entry of the account's device log: a statement about a device,
/// signed by the key of the device that made it (or, for the account's
/// first device and for legacy accounts, by the account key).
///
/// Why a log of device-signed statements instead of an account key on every
/// device: a key that certifies devices, held by every device, is held for
/// ever by a device that is lost, and revoking the device does not take the
/// key back. Here a device's power comes only from statements that other
/// trusted devices made about it, and a revocation voids every statement of
/// the revoked device that the revoker had not seen (`kept`), so what a
/// stolen device signs after its revocation counts for nothing anywhere.
/// The rules that turn a set of statements into a roster live in
/// `QuireSync/Roster/DeviceLog.swift`; this type only encodes and verifies.
///
/// Each statement is its own row of the `devices` namespace, keyed by its id
/// (a hash of its signed bytes): rows are immutable and content-addressed,
/// so a merge can add statements but never replace one (a revocation can
/// not be "overwritten" by a row with a dominating version vector).
public struct DeviceStatement: Equatable, Sendable {
    public enum Kind: UInt64, Sendable {
        /// `signer` certifies `subject` (its keys, name, role), optionally
        /// under a one-time pairing grant, with the account's backup key
        /// sealed to the subject's box key, and the backup keys of later
        /// rotations (`BackupKeyRing`) sealed to it too.
        case admit = 1
        /// `signer` revokes `subject`; the subject's statements named in
        /// `kept` (the ones the signer had accepted) stay valid. It rotates
        /// the backup key: a fresh key sealed to each device the signer
        /// leaves on the roster (never to the subject), with its check value.
        case revoke = 2
        /// `signer` (the subject itself or another trusted device) sets the
        /// subject's role.
        case role = 3
        /// `signer` lets the holder of `pairingKey` enrol one device, until
        /// `expiresAt` (checked by the device that admits it).
        case grant = 4
        /// Account-signed: the account key certifies nothing more; only the
        /// account-signed statements in `kept` stay valid (legacy upgrade).
        case retire = 5
    }

    static let separator = "quire.device-log.v1"
    static let idSeparator = "quire.device-log.id"

    public var kind: Kind
    public var accountKey: [UInt8]
    public var signerKey: [UInt8]
    public var subject: DeviceID
    public var at: Timestamp
    public var name: String = ""
    public var subjectSigningKey: [UInt8] = []
    public var subjectBoxKey: [UInt8] = []
    public var role: String = ""
    public var grant: DeviceID? = nil
    public var sealedBackupKey: [UInt8]? = nil
    /// Admit, field 15: the backup keys of rotations the signer held,
    /// sealed to the subject (`BackupKeyRing.sealed(to:)`).
    public var sealedKeyRing: [UInt8]? = nil
    /// Revoke, field 14: the rotation's fresh key sealed to each device the
    /// signer leaves on the roster, by device id (absent in revocations made
    /// before rotation existed: those rotate nothing).
    public var sealedRotationKeys: [DeviceID: [UInt8]] = [:]
    /// Revoke, field 16: `BackupKeyRing.check(of:)` of that key, so a copy
    /// received any other way (an admit, a sibling) can be checked.
    public var rotationKeyCheck: [UInt8]? = nil
    public var kept: [DeviceID] = []
    public var pairingKey: [UInt8] = []
    public var expiresAt: Timestamp = Timestamp(seconds: 0)

    public init(kind: Kind, accountKey: [UInt8], signerKey: [UInt8], subject: DeviceID, at: Timestamp) {
        self.kind = kind; self.accountKey = accountKey; self.signerKey = signerKey; self.subject = subject; self.at = at
    }

    /// True when the account key signed it (the account's first device, a
    /// rebuild from the recovery file, or a legacy account).
    public var isAccountSigned: Bool { signerKey == accountKey }

    /// The device that signed it (meaningless when `isAccountSigned`).
    public var signer: DeviceID {
        DeviceID(bytes: Array(SHA256.hash(signerKey).prefix(16))) ?? DeviceID(bytes: [UInt8](repeating: 0, count: 16))!
    }

    func body() -> [UInt8] {
        var f: [(CBOR, CBOR)] = [
            (.unsigned(0), .unsigned(kind.rawValue)), (.unsigned(1), .bytes(accountKey)), (.unsigned(2), .bytes(signerKey)),
            (.unsigned(3), .bytes(subject.bytes)), (.unsigned(4), .int(at.seconds)),
        ]
        switch kind {
        case .admit:
            f += [(.unsigned(5), .text(name)), (.unsigned(6), .bytes(subjectSigningKey)), (.unsigned(7), .bytes(subjectBoxKey)),
                  (.unsigned(8), .text(role))]
            if let grant { f.append((.unsigned(9), .bytes(grant.bytes))) }
            if let sealedBackupKey { f.append((.unsigned(10), .bytes(sealedBackupKey))) }
            if let sealedKeyRing { f.append((.unsigned(15), .bytes(sealedKeyRing))) }
        case .revoke, .retire:
            f.append((.unsigned(11), .array(kept.map { .bytes($0.bytes) })))
            if kind == .revoke, let rotationKeyCheck {
                let sealed = sealedRotationKeys.sorted { $0.key < $1.key }.map { CBOR.array([.bytes($0.key.bytes), .bytes($0.value)]) }
                f += [(.unsigned(14), .array(sealed)), (.unsigned(16), .bytes(rotationKeyCheck))]
            }
        case .role:
            f.append((.unsigned(8), .text(role)))
        case .grant:
            f += [(.unsigned(12), .bytes(pairingKey)), (.unsigned(13), .int(expiresAt.seconds))]
        }
        return CBORWriter.encode(.map(f))
    }

    /// `[body, signature]`, the signature over a separator and the body.
    public func signed(by key: SigningKeyPair) -> [UInt8] {
        let b = body()
        return CBORWriter.encode(.array([.bytes(b), .bytes(key.sign(Array(Self.separator.utf8) + b))]))
    }

    /// The row key of a signed statement.
    public static func id(of signed: [UInt8]) -> DeviceID {
        DeviceID(bytes: Array(SHA256.hash(separator: idSeparator, signed).prefix(16)))!
    }

    static let limits = CBORReader.Limits(maxDepth: 4, maxItemLength: 64 << 10)

    /// Parses signed bytes and checks the signature against the signer key
    /// the statement names and the account it names against ours. Nothing
    /// here says whether the signer is trusted: that is the log's job.
    public static func verify(_ signed: [UInt8], accountKey: SigningPublicKey) throws(CBORError) -> DeviceStatement {
        let parts = try CBORReader.decode(signed, limits: limits).asArray()
        guard parts.count == 2 else { throw .invalidValue("statement shape") }
        let b = try parts[0].asBytes(), signature = try parts[1].asBytes()
        let f = try CBORReader.decode(b, limits: limits).asFieldMap()
        guard let kind = Kind(rawValue: try f.required(0, "kind").asUInt()) else { throw .invalidValue("statement kind") }
        let account = try f.required(1, "account").asBytes()
        guard account == accountKey.bytes else { throw .invalidValue("statement names another account") }
        let signerBytes = try f.required(2, "signer").asBytes()
        guard let signer = try? SigningPublicKey(bytes: signerBytes) else { throw .invalidValue("signer key") }
        guard signer.isValidSignature(signature, for: Array(separator.utf8) + b) else {
            throw .invalidValue("statement signature does not verify")
        }
        guard let subject = ID16(bytes: try f.required(3, "subject").asBytes()) else { throw .invalidValue("subject") }
        var s = DeviceStatement(kind: kind, accountKey: account, signerKey: signerBytes, subject: subject,
                                at: Timestamp(seconds: try f.required(4, "at").asInt()))
        switch kind {
        case .admit:
            s.name = try f.required(5, "name").asText()
            s.subjectSigningKey = try f.required(6, "signing key").asBytes()
            s.subjectBoxKey = try f.required(7, "box key").asBytes()
            s.role = try f.required(8, "role").asText()
            if let g = f.optional(9) {
                guard let grant = ID16(bytes: try g.asBytes()) else { throw .invalidValue("grant") }
                s.grant = grant
            }
            s.sealedBackupKey = try f.optional(10)?.asBytes()
            s.sealedKeyRing = try f.optional(15)?.asBytes()
            guard let key = try? SigningPublicKey(bytes: s.subjectSigningKey), Identity.deviceID(for: key) == subject,
                  s.subjectBoxKey.count == BoxPublicKey.byteCount, s.name.utf8.count <= 64 else {
                throw .invalidValue("admitted device's keys do not match its id")
            }
        case .revoke, .retire:
            for item in try f.required(11, "kept").asArray() {
                guard let id = ID16(bytes: try item.asBytes()) else { throw .invalidValue("kept id") }
                s.kept.append(id)
            }
            if kind == .retire && !s.isAccountSigned { throw .invalidValue("only the account key retires itself") }
            if kind == .revoke, let check = f.optional(16) {
                // A sealed copy that does not open is the recipient's problem to
                // report (and a sibling's to repair); only the shape is checked here.
                s.rotationKeyCheck = try check.asBytes()
                guard s.rotationKeyCheck?.count == KeyedHash.byteCount else { throw .invalidValue("rotation key check") }
                for item in try f.required(14, "sealed rotation keys").asArray() {
                    let pair = try item.asArray()
                    guard pair.count == 2, let device = ID16(bytes: try pair[0].asBytes()) else { throw .invalidValue("sealed rotation key") }
                    s.sealedRotationKeys[device] = try pair[1].asBytes()
                }
            }
        case .role:
            s.role = try f.required(8, "role").asText()
        case .grant:
            s.pairingKey = try f.required(12, "pairing key").asBytes()
            s.expiresAt = Timestamp(seconds: try f.required(13, "expires").asInt())
            guard s.pairingKey.count == SigningPublicKey.byteCount else { throw .invalidValue("pairing key") }
        }
        return s
    }

    /// The device an admit names and its name, read without checking the
    /// signature: only for showing a name (rows were checked on arrival, and
    /// nothing is decided on it).
    public static func displayedAdmit(_ signed: [UInt8]) -> (device: DeviceID, name: String)? {
        guard let parts = try? CBORReader.decode(signed, limits: limits).asArray(), parts.count == 2, let b = try? parts[0].asBytes(),
              let f = try? CBORReader.decode(b, limits: limits).asFieldMap(), (try? f.required(0, "kind").asUInt()) == Kind.admit.rawValue,
              let subject = (try? f.required(3, "subject").asBytes()).flatMap({ ID16(bytes: $0) }),
              let name = try? f.required(5, "name").asText() else { return nil }
        return (subject, name)
    }

    /// The roster row that carries a signed statement.
    public static func row(_ signed: [UInt8], displayName: String) -> (key: DeviceID, record: DeviceRecord) {
        (id(of: signed), DeviceRecord(name: displayName, certificate: signed))
    }
}

/// What a joining device sends with its introduction: its keys and name,
/// signed by the invite's one-time pairing key, so the device that admits
/// it knows the joiner held the invite (and its passphrase). Never stored.
public struct Enrolment: Equatable, Sendable {
    static let separator = "quire.enrolment.v1"

    public var grant: DeviceID
    public var name: String
    public var signingKey: [UInt8]
    public var boxKey: [UInt8]
    public var role: String
    public var at: Timestamp

    public init(grant: DeviceID, name: String, signingKey: [UInt8], boxKey: [UInt8], role: String, at: Timestamp) {
        self.grant = grant; self.name = name; self.signingKey = signingKey; self.boxKey = boxKey; self.role = role; self.at = at
    }

    func body() -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .bytes(grant.bytes)), (.unsigned(2), .text(name)), (.unsigned(3), .bytes(signingKey)),
                                (.unsigned(4), .bytes(boxKey)), (.unsigned(5), .text(role)), (.unsigned(6), .int(at.seconds))]))
    }

    public func signed(by pairingKey: SigningKeyPair) -> [UInt8] {
        let b = body()
        return CBORWriter.encode(.array([.bytes(b), .bytes(pairingKey.sign(Array(Self.separator.utf8) + b))]))
    }

    /// Parses an enrolment and checks it was signed by `pairingKey`.
    public static func verify(_ signed: [UInt8], pairingKey: SigningPublicKey) throws(CBORError) -> Enrolment {
        let parts = try CBORReader.decode(signed, limits: DeviceStatement.limits).asArray()
        guard parts.count == 2 else { throw .invalidValue("enrolment shape") }
        let b = try parts[0].asBytes(), signature = try parts[1].asBytes()
        guard pairingKey.isValidSignature(signature, for: Array(separator.utf8) + b) else {
            throw .invalidValue("enrolment not signed by the invite's pairing key")
        }
        return try decodeBody(b)
    }

    /// The grant an enrolment claims (read before the signature is checked,
    /// only to find the grant whose key checks it).
    public static func claimedGrant(_ signed: [UInt8]) -> DeviceID? {
        guard let parts = try? CBORReader.decode(signed, limits: DeviceStatement.limits).asArray(), parts.count == 2,
              let b = try? parts[0].asBytes(), let e = try? decodeBody(b) else { return nil }
        return e.grant
    }

    static func decodeBody(_ b: [UInt8]) throws(CBORError) -> Enrolment {
        let f = try CBORReader.decode(b, limits: DeviceStatement.limits).asFieldMap()
        guard let grant = ID16(bytes: try f.required(1, "grant").asBytes()) else { throw .invalidValue("grant") }
        let e = Enrolment(grant: grant, name: try f.required(2, "name").asText(), signingKey: try f.required(3, "signing key").asBytes(),
                          boxKey: try f.required(4, "box key").asBytes(), role: try f.required(5, "role").asText(),
                          at: Timestamp(seconds: try f.required(6, "at").asInt()))
        guard (try? SigningPublicKey(bytes: e.signingKey)) != nil, e.boxKey.count == BoxPublicKey.byteCount,
              !e.name.isEmpty, e.name.utf8.count <= 64 else { throw .invalidValue("enrolment keys or name") }
        return e
    }

    public var deviceID: DeviceID { DeviceID(bytes: Array(SHA256.hash(signingKey).prefix(16)))! }
}
