import QuireCore
import QuireCrypto
import QuireStore

/// One certified device of the account, as its certificate says.
public struct RosterMember: Equatable, Sendable {
    public let deviceID: DeviceID
    public let name: String
    public let boxKey: BoxPublicKey
    public let signingKey: [UInt8]
    public let role: String
    public let issuedAt: Timestamp
    public let revokedAt: Timestamp?

    public var isRevoked: Bool { revokedAt != nil }
}

/// The account's devices: rows of the `devices` namespace whose certificate
/// verifies against the account key. Anything else in that namespace is
/// ignored here and refused on arrival.
public struct Roster: Equatable, Sendable {
    public let members: [DeviceID: RosterMember]

    public init(members: [DeviceID: RosterMember]) { self.members = members }

    public subscript(id: DeviceID) -> RosterMember? { members[id] }

    /// Members other than `me` that are not revoked, in device id order.
    public func siblings(of me: DeviceID) -> [RosterMember] {
        members.values.filter { $0.deviceID != me && !$0.isRevoked }.sorted { $0.deviceID < $1.deviceID }
    }

    /// Every member, in name then id order.
    public var sorted: [RosterMember] {
        members.values.sorted { ($0.name, $0.deviceID.hex) < ($1.name, $1.deviceID.hex) }
    }

    /// Reads and verifies the roster from the replica. Returns how many rows
    /// failed verification (they are not members).
    public static func load(from store: ReplicaStore, accountKey: SigningPublicKey) throws -> (roster: Roster, invalid: Int) {
        var members: [DeviceID: RosterMember] = [:]
        var invalid = 0
        for row in try store.rows(.devices, from: [], to: nil) {
            if let member = verify(row, accountKey: accountKey) { members[member.deviceID] = member } else { invalid += 1 }
        }
        return (Roster(members: members), invalid)
    }

    /// The member a roster row certifies, or nil if it is a tombstone, its
    /// certificate does not verify against the account key, it names another
    /// device than its key, or it carries a revocation that does not verify.
    public static func verify(_ row: Row, accountKey: SigningPublicKey) -> RosterMember? {
        guard row.namespace == .devices, case .device(let record)? = row.content,
              let cert = try? DeviceCertificate.verify(record.certificate, accountKey: accountKey),
              cert.deviceID == row.key, let boxKey = try? BoxPublicKey(bytes: cert.boxKey) else { return nil }
        var revokedAt: Timestamp? = nil
        if let signed = record.revocation {
            guard let revocation = DeviceRevocation.verify(signed, accountKey: accountKey),
                  revocation.deviceID == cert.deviceID else { return nil }
            revokedAt = revocation.revokedAt
        }
        return RosterMember(deviceID: cert.deviceID, name: cert.name, boxKey: boxKey, signingKey: cert.signingKey,
                            role: cert.role, issuedAt: cert.issuedAt, revokedAt: revokedAt)
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
