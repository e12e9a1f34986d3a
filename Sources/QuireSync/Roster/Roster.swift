import QuireCore
import QuireCrypto
import QuireStore

/// One device of the account, as the device log says (`DeviceLog`).
public struct RosterMember: Equatable, Sendable {
    public enum Trust: String, Equatable, Sendable {
        /// Admitted by a statement that counts, and not revoked.
        case trusted
        /// Revoked by a statement that counts.
        case revoked
        /// Named by admits that all count for nothing (for example, admitted
        /// by a device after its revocation): never trusted.
        case untrusted
    }

    public let deviceID: DeviceID
    public let name: String
    public let boxKey: BoxPublicKey
    public let signingKey: [UInt8]
    public let role: String
    public let issuedAt: Timestamp
    public let revokedAt: Timestamp?
    /// The device whose statement admitted it (nil: the account key).
    public let addedBy: DeviceID?
    /// The device whose statement revoked it (nil: the account key, or not revoked).
    public let revokedBy: DeviceID?
    public let trust: Trust
    /// The account's backup key sealed to this device's box key, in the
    /// statement that admitted it (a joining device opens it once admitted).
    public let sealedBackupKey: [UInt8]?
    /// The backup keys of rotations the admitting device held, sealed to
    /// this device in the same statement (`BackupKeyRing`).
    public let sealedKeyRing: [UInt8]?

    public init(deviceID: DeviceID, name: String, boxKey: BoxPublicKey, signingKey: [UInt8], role: String, issuedAt: Timestamp,
                revokedAt: Timestamp?, addedBy: DeviceID? = nil, revokedBy: DeviceID? = nil, trust: Trust? = nil,
                sealedBackupKey: [UInt8]? = nil, sealedKeyRing: [UInt8]? = nil) {
        self.deviceID = deviceID; self.name = name; self.boxKey = boxKey; self.signingKey = signingKey; self.role = role
        self.issuedAt = issuedAt; self.revokedAt = revokedAt; self.addedBy = addedBy; self.revokedBy = revokedBy
        self.trust = trust ?? (revokedAt == nil ? .trusted : .revoked); self.sealedBackupKey = sealedBackupKey
        self.sealedKeyRing = sealedKeyRing
    }

    /// Not trusted: revoked, or never validly admitted. Its frames are refused.
    public var isRevoked: Bool { trust != .trusted }
}

/// The account's devices: what the statements of the `devices` namespace
/// make of them (`DeviceLog`). Rows that are not well-formed statements are
/// ignored here and refused on arrival.
public struct Roster: Equatable, Sendable {
    public let members: [DeviceID: RosterMember]

    public init(members: [DeviceID: RosterMember]) { self.members = members }

    public subscript(id: DeviceID) -> RosterMember? { members[id] }

    /// Members other than `me` that are trusted, in device id order.
    public func siblings(of me: DeviceID) -> [RosterMember] {
        members.values.filter { $0.deviceID != me && !$0.isRevoked }.sorted { $0.deviceID < $1.deviceID }
    }

    /// Every member, in name then id order.
    public var sorted: [RosterMember] {
        members.values.sorted { ($0.name, $0.deviceID.hex) < ($1.name, $1.deviceID.hex) }
    }

    /// Reads the device log from the replica and evaluates it. Returns how
    /// many rows hold no verifiable statement (they count for nothing).
    public static func load(from store: ReplicaStore, accountKey: SigningPublicKey) throws -> (roster: Roster, invalid: Int) {
        let log = try DeviceLog(rows: store.rows(.devices, from: [], to: nil), accountKey: accountKey)
        return (log.roster(), log.invalidRows)
    }

    /// Whether a roster row from a sibling may be stored: a live row whose
    /// every head verifies as a statement of our account keyed by its own
    /// id, or (legacy) as an account-signed certificate keyed by its device
    /// id. Nothing here says the statement counts (`DeviceLog` decides),
    /// only that it is what it claims to be. Tombstones are refused: nothing
    /// deletes a statement, and a deleted revocation would un-revoke.
    public static func isWellFormed(_ row: Row, accountKey: SigningPublicKey) -> Bool {
        guard row.namespace == .devices, !row.heads.isEmpty else { return false }
        for head in row.heads {
            guard case .device(let record) = head.content else { return false }
            if (try? DeviceStatement.verify(record.certificate, accountKey: accountKey)) != nil {
                guard DeviceStatement.id(of: record.certificate) == row.key, record.revocation == nil else { return false }
                continue
            }
            guard let cert = try? DeviceCertificate.verify(record.certificate, accountKey: accountKey), cert.deviceID == row.key else { return false }
            if let r = record.revocation {
                guard let revocation = DeviceRevocation.verify(r, accountKey: accountKey), revocation.deviceID == row.key else { return false }
            }
        }
        return true
    }

    /// True when storing `incoming` over `existing` would drop a revocation
    /// the existing legacy row carries (a head with a dominating version
    /// vector and no revocation): refused, so revocations only grow.
    public static func wouldUnrevoke(_ incoming: Row, over existing: Row?) -> Bool {
        func revoked(_ row: Row) -> Bool {
            row.heads.contains { if case .device(let d) = $0.content { return d.revocation != nil } else { return false } }
        }
        guard let existing, revoked(existing) else { return false }
        return !revoked(incoming)
    }

    /// Compatibility for callers that check one row: the member a row
    /// admits if it were the only statement (tests, the simulator).
    public static func verify(_ row: Row, accountKey: SigningPublicKey) -> RosterMember? {
        guard isWellFormed(row, accountKey: accountKey) else { return nil }
        return DeviceLog(rows: [row], accountKey: accountKey).roster().members.values.first
    }
}

/// The relay channel a device listens on: a keyed hash of the account and
/// the device, so the channel name reveals neither to someone who reads
/// relay traffic, and two accounts never share a channel.
public enum SyncChannel {
    public static func name(userIDHash: [UInt8], device: DeviceID) -> String {
        "q" + Hex.encode(SHA256.hash(separator: "quire.relay.channel", userIDHash + device.bytes).prefix(20))
    }
}
