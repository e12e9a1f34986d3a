import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// An invite: what a new device needs to join the account (account key,
/// backup key, roster, relay and cloud settings), sealed with a key derived
/// from a passphrase (Argon2id `crypto_pwhash`, then `crypto_secretbox`).
/// Without the passphrase the invite reveals nothing but its KDF settings.
///
/// Text form: `quire-invite-1.` + base64url of
///     "QI" | 1 | salt (16) | ops (8, BE) | memory bytes (8, BE) | secretbox(CBOR)
public struct Invite: Sendable {
    public static let prefix = "quire-invite-1."
    /// An invite is a bearer credential: it expires.
    public static let lifetimeSeconds: Int64 = 7 * 24 * 3600
    /// Refused when opening, so a crafted invite cannot make us burn memory.
    public static let maxOperations = PasswordHash.maximumOperations
    public static let maxMemoryBytes = Int(PasswordHash.maximumMemoryBytes)
    public static let minimumPassphraseLength = 8

    public let accountSeed: SecretBytes
    public let backupKey: SecretBytes
    public let roster: [Row]
    public let relay: String
    public let cloud: String?
    public let inviter: DeviceID
    public let createdAt: Timestamp
    public let expiresAt: Timestamp

    /// Builds the invite text from this device's keys, roster and prefs.
    public static func make(identity: Identity, store: ReplicaStore, prefs: Prefs, passphrase: String,
                            strength: PasswordHash.Strength, now: Timestamp) throws -> String {
        guard passphrase.count >= minimumPassphraseLength else {
            throw PairingError("the passphrase must be at least \(minimumPassphraseLength) characters")
        }
        let (roster, _) = try Roster.load(from: store, accountKey: identity.account.publicKey)
        var rows: [CBOR] = []
        for member in roster.members.values where !member.isRevoked {
            if let row = try store.row(.devices, member.deviceID) { rows.append(RowWire.encode(row)) }
        }
        var seed = identity.account.seed().withUnsafeBytes { Array($0) }
        var backup = identity.backupKey.withUnsafeBytes { Array($0) }
        defer { secureZero(&seed); secureZero(&backup) }
        var fields: [(CBOR, CBOR)] = [
            (.unsigned(1), .bytes(seed)), (.unsigned(2), .bytes(backup)), (.unsigned(3), .array(rows)),
            (.unsigned(4), .text(prefs.relay)), (.unsigned(6), .bytes(identity.deviceID.bytes)),
            (.unsigned(7), .int(now.seconds)), (.unsigned(8), .int(now.seconds + lifetimeSeconds)),
        ]
        if let cloud = prefs.cloud { fields.append((.unsigned(5), .text(cloud))) }
        var plain = CBORWriter.encode(.map(fields))
        defer { secureZero(&plain) }
        let salt = PasswordHash.makeSalt()
        let key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, strength: strength)
        var out: [UInt8] = [0x51, 0x49, 1] + salt
        appendBigEndian(strength.operations, to: &out)
        appendBigEndian(UInt64(strength.memoryBytes), to: &out)
        out += try SecretBox.seal(plain, with: key)
        return prefix + Base64URL.encode(out)
    }

    /// Opens invite text with its passphrase. Every failure is one clear line.
    public static func open(_ text: String, passphrase: String, now: Timestamp) throws -> Invite {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(prefix), let bytes = Base64URL.decode(String(trimmed.dropFirst(prefix.count))) else {
            throw PairingError("this is not a quire invite (it should start with '\(prefix)')")
        }
        let header = 3 + PasswordHash.saltByteCount + 16
        guard bytes.count > header + SecretBox.overhead, bytes[0] == 0x51, bytes[1] == 0x49 else {
            throw PairingError("the invite is damaged (too short or wrong header)")
        }
        guard bytes[2] == 1 else { throw PairingError("the invite was made by a newer quire (format \(bytes[2])); upgrade quire") }
        let salt = Array(bytes[3..<(3 + PasswordHash.saltByteCount)])
        let ops = readBigEndian(bytes, at: 3 + PasswordHash.saltByteCount)
        let memory = readBigEndian(bytes, at: 11 + PasswordHash.saltByteCount)
        guard let strength = PasswordHash.strength(fromFile: ops, memoryBytes: memory) else {
            throw PairingError("the invite asks for key-derivation settings outside the accepted range; refusing it")
        }
        let key: SecretBytes
        do {
            key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, strength: strength)
        } catch { throw PairingError("cannot derive the invite key: \(error)") }
        var plain: [UInt8]
        do { plain = try SecretBox.open(bytes[header...], with: key) } catch {
            throw PairingError("the passphrase does not open this invite (or the invite was altered)")
        }
        defer { secureZero(&plain) }
        do {
            let f = try CBORReader.decode(plain).asFieldMap()
            let seed = try f.required(1, "account key").asBytes()
            let backup = try f.required(2, "backup key").asBytes()
            guard seed.count == SigningKeyPair.seedByteCount, backup.count == 32 else { throw CBORError.invalidValue("key length") }
            var rows: [Row] = []
            for item in try f.required(3, "roster").asArray() {
                guard let row = RowWire.decode(item, namespace: .devices) else { throw CBORError.invalidValue("roster row") }
                rows.append(row)
            }
            guard let inviter = ID16(bytes: try f.required(6, "inviter").asBytes()) else { throw CBORError.invalidValue("inviter") }
            let invite = Invite(accountSeed: SecretBytes(copying: seed), backupKey: SecretBytes(copying: backup), roster: rows,
                                relay: try f.required(4, "relay").asText(), cloud: try f.optional(5)?.asText(), inviter: inviter,
                                createdAt: Timestamp(seconds: try f.required(7, "created").asInt()),
                                expiresAt: Timestamp(seconds: try f.optional(8)?.asInt() ?? Int64.max))
            guard now < invite.expiresAt else {
                throw PairingError("the invite expired on \(DateStamp.format(invite.expiresAt)); make a new one with 'quire invite'")
            }
            return invite
        } catch let e as PairingError {
            throw e
        } catch {
            throw PairingError("the invite opened but its contents are damaged: \(error)")
        }
    }

    /// Creates a new device in `home` on the invite's account: its own device
    /// keys, an account-signed certificate in its roster row, the inviter's
    /// roster, relay and cloud settings.
    public func join(home: DeviceHome, name: String, role: Prefs.Role, clock: any Clock) throws -> (Identity, ReplicaStore) {
        let account = try SigningKeyPair(seed: accountSeed)
        var members: [RosterMember] = []
        for row in roster {
            guard let member = Roster.verify(row, accountKey: account.publicKey) else {
                throw PairingError("the invite's roster holds a certificate that does not verify against its account key; refusing it")
            }
            members.append(member)
        }
        if let clash = members.first(where: { $0.name == name && !$0.isRevoked }) {
            throw PairingError("a device named '\(clash.name)' is already on this account; choose another --name")
        }
        let identity = Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: backupKey)
        let (_, store) = try home.create(name: name, role: role, identity: identity, clock: clock)
        try home.prefs.update { p in
            p.relay = relay
            p.cloud = cloud
        }
        try store.apply(roster)
        return (identity, store)
    }
}

public struct PairingError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Base64 with the URL-safe alphabet and no padding: an invite survives
/// being pasted into a chat or a shell without quoting.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !s.contains("=") else { return nil }
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { Array($0) }
    }
}
