import Foundation
import QuireCore
import QuireCrypto

/// This device's keys and the account's, as kept in `keys/` (mode 0600).
/// The account key certifies devices; `userIDHash` = SHA-256 of the
/// account public key identifies the account on every frame.
public struct Identity: Sendable {
    public let account: SigningKeyPair
    public let deviceSigning: SigningKeyPair
    public let deviceBox: BoxKeyPair
    /// Symmetric key for the cloud anchor's sealed snapshot; handed over at pairing.
    public let backupKey: SecretBytes

    public var deviceID: DeviceID { Identity.deviceID(for: deviceSigning.publicKey) }
    public var userIDHash: [UInt8] { SHA256.hash(account.publicKey.bytes) }

    public static func deviceID(for key: SigningPublicKey) -> DeviceID {
        DeviceID(bytes: Array(SHA256.hash(key.bytes).prefix(16)))!
    }

    public init(account: SigningKeyPair, deviceSigning: SigningKeyPair, deviceBox: BoxKeyPair, backupKey: SecretBytes) {
        self.account = account
        self.deviceSigning = deviceSigning
        self.deviceBox = deviceBox
        self.backupKey = backupKey
    }

    /// A brand-new account and device.
    public static func generate() -> Identity {
        Identity(account: SigningKeyPair(), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(),
                 backupKey: SecretBytes(randomCount: 32))
    }

    static let files = ["account.key", "device-sign.key", "device-box.key", "backup.key"]

    func save(in directory: String) throws(StoreError) {
        let secrets = [account.seed(), deviceSigning.seed(), deviceBox.secretKey, backupKey]
        for (name, secret) in zip(Identity.files, secrets) {
            var bytes = secret.withUnsafeBytes { Array($0) }
            defer { secureZero(&bytes) }
            try AtomicFile.write(bytes, to: directory + "/" + name, mode: 0o600)
        }
    }

    static func load(from directory: String) throws(StoreError) -> Identity {
        var secrets: [SecretBytes] = []
        for name in files {
            let path = directory + "/" + name
            var st = stat()
            guard stat(path, &st) == 0 else { throw StoreError(.notFound, "key file \(path) is missing; the device directory is incomplete") }
            if st.st_mode & 0o077 != 0 {
                throw StoreError(.permission, "key file \(path) is accessible by other users (mode \(String(st.st_mode & 0o777, radix: 8))); run 'chmod 600 \(path)'")
            }
            guard var bytes = FileManager.default.contents(atPath: path).map({ Array($0) }) else {
                throw StoreError(.permission, "cannot read key file \(path)")
            }
            secrets.append(SecretBytes(copying: bytes))
            secureZero(&bytes)
        }
        do {
            return Identity(account: try SigningKeyPair(seed: secrets[0]), deviceSigning: try SigningKeyPair(seed: secrets[1]),
                            deviceBox: try BoxKeyPair(secretKey: secrets[2]), backupKey: secrets[3])
        } catch {
            throw StoreError(.corrupt, "key files in \(directory) are damaged: \(error)")
        }
    }
}

/// What an account-signed device certificate says.
public struct DeviceCertificate: Equatable, Sendable {
    public var accountKey: [UInt8]
    public var deviceID: DeviceID
    public var name: String
    public var signingKey: [UInt8]
    public var boxKey: [UInt8]
    public var role: String
    public var issuedAt: Timestamp

    static let separator = "quire.device-certificate"

    public func body() -> [UInt8] {
        CBORWriter.encode(.map([
            (.unsigned(1), .bytes(accountKey)), (.unsigned(2), .bytes(deviceID.bytes)), (.unsigned(3), .text(name)),
            (.unsigned(4), .bytes(signingKey)), (.unsigned(5), .bytes(boxKey)), (.unsigned(6), .text(role)),
            (.unsigned(7), .int(issuedAt.seconds)),
        ]))
    }

    /// [body, signature] signed by the account key under a separator.
    public func signed(by account: SigningKeyPair) -> [UInt8] {
        let b = body()
        let signature = account.sign(Array(DeviceCertificate.separator.utf8) + b)
        return CBORWriter.encode(.array([.bytes(b), .bytes(signature)]))
    }

    /// Parses and verifies a signed certificate against the account key.
    public static func verify(_ signed: [UInt8], accountKey: SigningPublicKey) throws(CBORError) -> DeviceCertificate {
        let parts = try CBORReader.decode(signed, limits: .init(maxDepth: 4, maxItemLength: 4096)).asArray()
        guard parts.count == 2 else { throw .invalidValue("certificate shape") }
        let b = try parts[0].asBytes(), signature = try parts[1].asBytes()
        guard accountKey.isValidSignature(signature, for: Array(separator.utf8) + b) else {
            throw .invalidValue("certificate signature does not verify against the account key")
        }
        let f = try CBORReader.decode(b).asFieldMap()
        guard let id = ID16(bytes: try f.required(2, "deviceID").asBytes()) else { throw .invalidValue("device id") }
        let cert = DeviceCertificate(accountKey: try f.required(1, "accountKey").asBytes(), deviceID: id,
                                     name: try f.required(3, "name").asText(), signingKey: try f.required(4, "signingKey").asBytes(),
                                     boxKey: try f.required(5, "boxKey").asBytes(), role: try f.optional(6)?.asText() ?? "device",
                                     issuedAt: Timestamp(seconds: try f.required(7, "issuedAt").asInt()))
        guard cert.accountKey == accountKey.bytes else { throw .invalidValue("certificate names another account") }
        guard let sk = try? SigningPublicKey(bytes: cert.signingKey), Identity.deviceID(for: sk) == id else {
            throw .invalidValue("certificate device id does not match its signing key")
        }
        return cert
    }
}

extension Identity {
    /// This device's certificate, signed by the account key: what its roster
    /// row carries (tests, benchmarks and the simulator build rosters with it).
    public func signedCertificate(name: String, role: String = "device", issuedAt: Timestamp) -> [UInt8] {
        DeviceCertificate(accountKey: account.publicKey.bytes, deviceID: deviceID, name: name,
                          signingKey: deviceSigning.publicKey.bytes, boxKey: deviceBox.publicKey.bytes,
                          role: role, issuedAt: issuedAt).signed(by: account)
    }
}
