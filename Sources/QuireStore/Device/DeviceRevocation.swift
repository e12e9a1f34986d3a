import QuireCore
import QuireCrypto

/// An account-signed statement that a device is revoked. It rides the
/// device's roster row; the row merge lets a revocation win, so a roster
/// never un-revokes.
public struct DeviceRevocation: Equatable, Sendable {
    static let separator = "quire.device-revocation"

    public var deviceID: DeviceID
    public var revokedAt: Timestamp

    public init(deviceID: DeviceID, revokedAt: Timestamp) {
        self.deviceID = deviceID
        self.revokedAt = revokedAt
    }

    func body(accountKey: [UInt8]) -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .bytes(deviceID.bytes)), (.unsigned(2), .int(revokedAt.seconds)),
                                (.unsigned(3), .bytes(accountKey))]))
    }

    /// [body, signature], signed by the account key under a separator.
    public func signed(by account: SigningKeyPair) -> [UInt8] {
        let b = body(accountKey: account.publicKey.bytes)
        return CBORWriter.encode(.array([.bytes(b), .bytes(account.sign(Array(Self.separator.utf8) + b))]))
    }

    /// Parses and verifies a revocation against the account key.
    public static func verify(_ signed: [UInt8], accountKey: SigningPublicKey) -> DeviceRevocation? {
        guard let parts = try? CBORReader.decode(signed, limits: .init(maxDepth: 4, maxItemLength: 4096)).asArray(),
              parts.count == 2, let b = try? parts[0].asBytes(), let signature = try? parts[1].asBytes(),
              accountKey.isValidSignature(signature, for: Array(separator.utf8) + b),
              let f = try? CBORReader.decode(b).asFieldMap(),
              let idBytes = try? f.required(1, "device").asBytes(), let id = ID16(bytes: idBytes),
              let at = try? f.required(2, "revokedAt").asInt(),
              let key = try? f.required(3, "account").asBytes(), key == accountKey.bytes else { return nil }
        return DeviceRevocation(deviceID: id, revokedAt: Timestamp(seconds: at))
    }
}
