import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// An invite: what a new device needs to ask to join the account, sealed
/// with a key derived from a passphrase (Argon2id `crypto_pwhash`, then
/// `crypto_secretbox`). It carries no key of the account: only a one-time
/// pairing key, the public statements of the device log (so the joiner
/// knows the siblings' keys), the account's public key, relay and cloud
/// settings. `quire invite` writes a *grant* statement (signed by this
/// device) naming the pairing key's public half and an expiry; the joiner
/// signs its enrolment (its own new keys) with the pairing key; the first
/// trusted device that receives the enrolment checks the grant (counts,
/// unexpired by its own clock, unused) and admits the joiner. A leaked
/// invite after use admits nobody; a second joiner is refused; an invite
/// from a revoked device admits nobody anywhere.
///
/// Text form: `quire-invite-2.` + base64url of
///     "QI" | 2 | salt (16) | ops (8, BE) | memory bytes (8, BE) | secretbox(CBOR)
public struct Invite: Sendable {
    public static let prefix = "quire-invite-2."
    static let legacyPrefix = "quire-invite-1."
    /// An invite is a bearer credential: it expires (checked by the admitting device).
    public static let lifetimeSeconds: Int64 = 7 * 24 * 3600
    /// Refused when opening, so a crafted invite cannot make us burn memory.
    public static let maxOperations = PasswordHash.maximumOperations
    public static let maxMemoryBytes = Int(PasswordHash.maximumMemoryBytes)
    public static let minimumPassphraseLength = 12

    public let pairingSeed: SecretBytes
    public let accountKey: SigningPublicKey
    public let grant: DeviceID
    public let roster: [Row]
    public let relay: String
    public let cloud: String?
    public let inviter: DeviceID
    public let createdAt: Timestamp
    public let expiresAt: Timestamp

    /// Checks a passphrase a person chose: long enough and not one repeated
    /// character or a run like "123456789012" (a generated code passes).
    public static func checkStrength(_ passphrase: String) throws {
        guard passphrase.count >= minimumPassphraseLength else {
            throw PairingError("the passphrase must be at least \(minimumPassphraseLength) characters (or let quire make one: --passphrase-words)")
        }
        guard Set(passphrase.lowercased()).count >= 6 else {
            throw PairingError("the passphrase repeats too few characters to resist guessing; use several words (or --passphrase-words)")
        }
    }

    /// Writes the grant into this device's log and builds the invite text.
    public static func make(identity: Identity, store: ReplicaStore, prefs: Prefs, passphrase: String,
                            strength: PasswordHash.Strength, now: Timestamp, lifetime: Int64 = lifetimeSeconds) throws -> String {
        try checkStrength(passphrase)
        let (roster, _) = try Roster.load(from: store, accountKey: identity.account.publicKey)
        guard let me = roster[identity.deviceID], me.trust == .trusted, identity.hasBackupKey else {
            throw PairingError(roster[identity.deviceID]?.isRevoked == true
                ? "this device was revoked (or never validly admitted): it cannot invite devices"
                : "this device has not been admitted to the account yet: it cannot invite devices until a sibling admits it ('quire sync')")
        }
        let pairing = SigningKeyPair()
        var grant = DeviceStatement(kind: .grant, accountKey: identity.account.publicKey.bytes,
                                    signerKey: identity.deviceSigning.publicKey.bytes, subject: identity.deviceID, at: now)
        grant.pairingKey = pairing.publicKey.bytes
        grant.expiresAt = Timestamp(seconds: now.seconds + lifetime)
        let signedGrant = grant.signed(by: identity.deviceSigning)
        let (grantID, record) = DeviceStatement.row(signedGrant, displayName: "invite by \(me.name)")
        try store.putRosterEntry(record, key: grantID)
        let rows = try store.rows(.devices, from: [], to: nil).prefix(IntroduceMessage.maxRows).map(RowWire.encode)
        var seed = pairing.seed().withUnsafeBytes { Array($0) }
        defer { secureZero(&seed) }
        var fields: [(CBOR, CBOR)] = [
            (.unsigned(1), .bytes(seed)), (.unsigned(2), .bytes(identity.account.publicKey.bytes)), (.unsigned(3), .array(rows)),
            (.unsigned(4), .text(prefs.relay)), (.unsigned(6), .bytes(identity.deviceID.bytes)),
            (.unsigned(7), .int(now.seconds)), (.unsigned(8), .int(grant.expiresAt.seconds)), (.unsigned(9), .bytes(grantID.bytes)),
        ]
        if let cloud = prefs.cloud { fields.append((.unsigned(5), .text(cloud))) }
        var plain = CBORWriter.encode(.map(fields))
        defer { secureZero(&plain) }
        let salt = PasswordHash.makeSalt()
        let key = try PasswordHash.deriveKey(passphrase: passphrase, salt: salt, strength: strength)
        var out: [UInt8] = [0x51, 0x49, 2] + salt
        appendBigEndian(strength.operations, to: &out)
        appendBigEndian(UInt64(strength.memoryBytes), to: &out)
        out += try SecretBox.seal(plain, with: key)
        return prefix + Base64URL.encode(out)
    }

    /// Opens invite text with its passphrase. Every failure is one clear line.
    public static func open(_ text: String, passphrase: String, now: Timestamp) throws -> Invite {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix(legacyPrefix) {
            throw PairingError("this invite was made by an older quire and carries the account's key; make a new one with 'quire invite' on an upgraded device")
        }
        guard trimmed.hasPrefix(prefix), let bytes = Base64URL.decode(String(trimmed.dropFirst(prefix.count))) else {
            throw PairingError("this is not a quire invite (it should start with '\(prefix)')")
        }
        let header = 3 + PasswordHash.saltByteCount + 16
        guard bytes.count > header + SecretBox.overhead, bytes[0] == 0x51, bytes[1] == 0x49 else {
            throw PairingError("the invite is damaged (too short or wrong header)")
        }
        guard bytes[2] == 2 else { throw PairingError("the invite was made by another quire version (format \(bytes[2])); make a new one") }
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
            return try decodeContents(plain, now: now)
        } catch let e as PairingError {
            throw e
        } catch {
            throw PairingError("the invite opened but its contents are damaged: \(error)")
        }
    }

    /// The sealed contents (also the fuzz target's entry point past the KDF).
    public static func decodeContents(_ plain: [UInt8], now: Timestamp) throws -> Invite {
        let f = try CBORReader.decode(plain, limits: .init(maxDepth: 12, maxItemLength: 1 << 20)).asFieldMap()
        let seed = try f.required(1, "pairing key").asBytes()
        guard seed.count == SigningKeyPair.seedByteCount else { throw CBORError.invalidValue("pairing key length") }
        let account = try SigningPublicKey(bytes: try f.required(2, "account key").asBytes())
        var rows: [Row] = []
        for item in try f.required(3, "roster").asArray() {
            guard let row = RowWire.decode(item, namespace: .devices) else { throw CBORError.invalidValue("roster row") }
            rows.append(row)
        }
        guard let inviter = ID16(bytes: try f.required(6, "inviter").asBytes()),
              let grant = ID16(bytes: try f.required(9, "grant").asBytes()) else { throw CBORError.invalidValue("inviter or grant") }
        let invite = Invite(pairingSeed: SecretBytes(copying: seed), accountKey: account, grant: grant, roster: rows,
                            relay: try f.required(4, "relay").asText(), cloud: try f.optional(5)?.asText(), inviter: inviter,
                            createdAt: Timestamp(seconds: try f.required(7, "created").asInt()),
                            expiresAt: Timestamp(seconds: try f.required(8, "expires").asInt()))
        // Checked here only to fail early; the device that admits checks it again with its own clock.
        guard now < invite.expiresAt else {
            throw PairingError("the invite expired on \(DateStamp.format(invite.expiresAt)); make a new one with 'quire invite'")
        }
        return invite
    }

    /// Creates a new device in `home` on the invite's account: its own keys,
    /// no certificate yet, the invite's device log, relay and cloud settings,
    /// and its enrolment (`keys/enrolment`), which its sync sends with its
    /// introductions until a sibling admits it.
    public func join(home: DeviceHome, name: String, role: Prefs.Role, clock: any Clock) throws -> (Identity, ReplicaStore) {
        let log = DeviceLog(rows: roster.filter { Roster.isWellFormed($0, accountKey: accountKey) }, accountKey: accountKey)
        guard log.invalidRows == 0, roster.allSatisfy({ Roster.isWellFormed($0, accountKey: accountKey) }) else {
            throw PairingError("the invite's device log holds a statement that does not verify against its account key; refusing it")
        }
        guard log.entries[grant]?.statement.kind == .grant else { throw PairingError("the invite names a grant its device log does not hold") }
        let members = log.roster().members.values
        if let clash = members.first(where: { $0.name == name && !$0.isRevoked }) {
            throw PairingError("a device named '\(clash.name)' is already on this account; choose another --name")
        }
        let identity = Identity(account: AccountKeys(publicKey: accountKey), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: nil)
        let pairing = try SigningKeyPair(seed: pairingSeed)
        let enrolment = Enrolment(grant: grant, name: name, signingKey: identity.deviceSigning.publicKey.bytes,
                                  boxKey: identity.deviceBox.publicKey.bytes, role: role.rawValue, at: clock.now())
        let (_, store) = try home.create(name: name, role: role, identity: identity, clock: clock)
        try AtomicFile.write(enrolment.signed(by: pairing), to: home.enrolmentPath, mode: 0o600)
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
