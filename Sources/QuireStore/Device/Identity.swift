import Foundation
import QuireCore
import QuireCrypto

/// The account's key as a device knows it: always the public key (the
/// account id is its hash), and the secret only in memory where it is
/// legitimately at hand: at `quire init` of a new account (to certify the
/// first device and seal the recovery file), at a rebuild from the
/// recovery file, in tests and in the simulator. It is never written to a
/// device directory: a key that certifies devices, kept on every device,
/// would be kept for ever by a lost one (see SECURITY.md).
public struct AccountKeys: Sendable {
    public let publicKey: SigningPublicKey
    public let secret: SigningKeyPair?

    public init(publicKey: SigningPublicKey, secret: SigningKeyPair? = nil) {
        self.publicKey = publicKey
        self.secret = secret
    }

    public init(_ pair: SigningKeyPair) { self.init(publicKey: pair.publicKey, secret: pair) }
}

/// This device's keys and the account's public key, as kept in `keys/`
/// (mode 0600). `userIDHash` = SHA-256 of the account public key identifies
/// the account on every frame.
public struct Identity: Sendable {
    public let account: AccountKeys
    public let deviceSigning: SigningKeyPair
    public let deviceBox: BoxKeyPair
    /// Symmetric key for the cloud anchor's sealed snapshot; a joining
    /// device receives it sealed to its box key in the statement that
    /// admits it (until then it holds a random key that seals nothing
    /// anyone reads, and `isAdmitted` is false).
    public let backupKey: SecretBytes
    public let hasBackupKey: Bool

    public var deviceID: DeviceID { Identity.deviceID(for: deviceSigning.publicKey) }
    public var userIDHash: [UInt8] { SHA256.hash(account.publicKey.bytes) }

    public static func deviceID(for key: SigningPublicKey) -> DeviceID {
        DeviceID(bytes: Array(SHA256.hash(key.bytes).prefix(16)))!
    }

    public init(account: AccountKeys, deviceSigning: SigningKeyPair, deviceBox: BoxKeyPair, backupKey: SecretBytes?) {
        self.account = account
        self.deviceSigning = deviceSigning
        self.deviceBox = deviceBox
        self.backupKey = backupKey ?? SecretBytes(randomCount: 32)
        self.hasBackupKey = backupKey != nil
    }

    public init(account: SigningKeyPair, deviceSigning: SigningKeyPair, deviceBox: BoxKeyPair, backupKey: SecretBytes) {
        self.init(account: AccountKeys(account), deviceSigning: deviceSigning, deviceBox: deviceBox, backupKey: Optional(backupKey))
    }

    /// A brand-new account and device (the account secret stays in memory).
    public static func generate() -> Identity {
        Identity(account: SigningKeyPair(), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(),
                 backupKey: SecretBytes(randomCount: 32))
    }

    /// The files of `keys/`. `account.key` is the legacy account seed: read
    /// once when an older device directory is opened, then deleted.
    static let publicFile = "account.pub", legacySecretFile = "account.key", backupFile = "backup.key"
    static let deviceFiles = ["device-sign.key", "device-box.key"]

    func save(in directory: String) throws(StoreError) {
        try AtomicFile.write(account.publicKey.bytes, to: directory + "/" + Identity.publicFile, mode: 0o600)
        for (name, secret) in zip(Identity.deviceFiles, [deviceSigning.seed(), deviceBox.secretKey]) {
            try Identity.writeSecret(secret, to: directory + "/" + name)
        }
        if hasBackupKey { try Identity.writeSecret(backupKey, to: directory + "/" + Identity.backupFile) }
    }

    static func writeSecret(_ secret: SecretBytes, to path: String) throws(StoreError) {
        var bytes = secret.withUnsafeBytes { Array($0) }
        defer { secureZero(&bytes) }
        try AtomicFile.write(bytes, to: path, mode: 0o600)
    }

    /// Reads one key file: owner-only, a regular file, and exactly the
    /// length that key has (a file replaced by garbage or truncated is
    /// refused with its name, never used as a new identity).
    static func readKeyFile(_ path: String, length: Int?, what: String) throws(StoreError) -> SecretBytes {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw StoreError(.notFound, "key file \(path) is missing; the device directory is incomplete") }
        guard st.st_mode & S_IFMT == S_IFREG else { throw StoreError(.corrupt, "key file \(path) is not a regular file; refusing it") }
        if st.st_mode & 0o077 != 0 {
            throw StoreError(.permission, "key file \(path) is accessible by other users (mode \(String(st.st_mode & 0o777, radix: 8))); run 'chmod 600 \(path)'")
        }
        guard var bytes = FileManager.default.contents(atPath: path).map({ Array($0) }) else {
            throw StoreError(.permission, "cannot read key file \(path)")
        }
        defer { secureZero(&bytes) }
        guard length.map({ bytes.count == $0 }) ?? (bytes.count <= 1 << 20) else {
            throw StoreError(.corrupt, "key file \(path) holds \(bytes.count) bytes, not the \(length ?? 0) of \(what); it was damaged or replaced. Put back the device directory from a backup, or make a new device with 'quire init --join'")
        }
        return SecretBytes(copying: bytes)
    }

    /// Loads the keys. `legacySecret` is the account seed of a device
    /// directory made before the device log (the caller retires and deletes
    /// it); `expectedDevice` is the id the replica was made for, so a key
    /// file swapped for another device's key is refused.
    static func load(from directory: String) throws(StoreError) -> (identity: Identity, legacySecret: SigningKeyPair?) {
        let fm = FileManager.default
        do {
            var legacy: SigningKeyPair? = nil
            let accountPublic: SigningPublicKey
            if fm.fileExists(atPath: directory + "/" + legacySecretFile) {
                let pair = try SigningKeyPair(seed: try readKeyFile(directory + "/" + legacySecretFile, length: SigningKeyPair.seedByteCount, what: "an account seed"))
                legacy = pair
                accountPublic = pair.publicKey
            } else {
                let pub = try readKeyFile(directory + "/" + publicFile, length: SigningPublicKey.byteCount, what: "the account public key")
                accountPublic = try SigningPublicKey(bytes: pub.withUnsafeBytes { Array($0) })
            }
            let signing = try SigningKeyPair(seed: try readKeyFile(directory + "/" + deviceFiles[0], length: SigningKeyPair.seedByteCount, what: "a device signing seed"))
            let box = try BoxKeyPair(secretKey: try readKeyFile(directory + "/" + deviceFiles[1], length: BoxKeyPair.secretKeyByteCount, what: "a device box key"))
            let backupPath = directory + "/" + backupFile
            let backup: SecretBytes? = fm.fileExists(atPath: backupPath) ? try readKeyFile(backupPath, length: 32, what: "the backup key") : nil
            return (Identity(account: AccountKeys(publicKey: accountPublic), deviceSigning: signing, deviceBox: box, backupKey: backup), legacy)
        } catch let e as StoreError {
            throw e
        } catch {
            throw StoreError(.corrupt, "key files in \(directory) are damaged: \(error)")
        }
    }

    /// Writes the backup key a sibling sealed to this device when it admitted it.
    public func withBackupKey(_ key: SecretBytes, savingIn directory: String) throws(StoreError) -> Identity {
        try Identity.writeSecret(key, to: directory + "/" + Identity.backupFile)
        return Identity(account: account, deviceSigning: deviceSigning, deviceBox: deviceBox, backupKey: key)
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
    /// row carries. Only where the account secret is in memory: the first
    /// device of a new account, a rebuild from the recovery file, tests,
    /// benchmarks and the simulator.
    public func signedCertificate(name: String, role: String = "device", issuedAt: Timestamp) -> [UInt8] {
        DeviceCertificate(accountKey: account.publicKey.bytes, deviceID: deviceID, name: name,
                          signingKey: deviceSigning.publicKey.bytes, boxKey: deviceBox.publicKey.bytes,
                          role: role, issuedAt: issuedAt).signed(by: account.secret!)
    }
}
