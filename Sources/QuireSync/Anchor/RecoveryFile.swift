import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The last resort when every device of an account is lost: a file in the
/// cloud folder, beside the anchor, holding the account key and the backup
/// key sealed under a recovery code printed once at `quire init`. With the
/// code and the folder, `quire init --from-cloud` rebuilds a device of the
/// same account from the newest anchor. The code is never stored anywhere.
///
/// Format: canonical CBOR `{1: "quire-recovery", 2: 1, 3: account id,
/// 4: Argon2id salt, 5: ops limit, 6: memory bytes, 7: secretbox(CBOR
/// {1: account seed, 2: backup key})}`, mode 0600.
public enum RecoveryFile {
    static let kind = "quire-recovery"

    public static func path(cloud: String, accountID: [UInt8]) -> String {
        cloud + "/quire-recovery-" + Hex.encode(accountID.prefix(6)) + ".qrecovery"
    }

    /// A fresh code: 30 characters of Crockford base32 in six groups (150 bits).
    public static func makeCode() -> String {
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        let bytes = SecureRandom.bytes(30)
        let chars = bytes.map { alphabet[Int($0 & 31)] }
        return stride(from: 0, to: 30, by: 5).map { String(chars[$0..<$0 + 5]) }.joined(separator: "-")
    }

    /// What a typed code becomes before it is hashed: case, spaces and
    /// dashes do not matter; O/I/L read as 0/1/1.
    static func normalized(_ code: String) -> String {
        String(code.uppercased().compactMap { c -> Character? in
            switch c {
            case "-", " ": return nil
            case "O": return "0"
            case "I", "L": return "1"
            default: return c
            }
        })
    }

    public static func write(identity: Identity, cloud: String, code: String, strength: PasswordHash.Strength) throws {
        // Only at `quire init` of a new account (or a rebuild) is the account
        // secret in memory: it is sealed here and then forgotten by the device.
        guard let account = identity.account.secret else {
            throw AnchorError.unwritable("the account key is not on this device (it never stays on one); a recovery file is written only at 'quire init' of a new account")
        }
        let salt = PasswordHash.makeSalt()
        let key = try PasswordHash.deriveKey(passphrase: normalized(code), salt: salt, strength: strength)
        var secret = CBORWriter.encode(.map([(.unsigned(1), .bytes(account.seed().withUnsafeBytes { Array($0) })),
                                              (.unsigned(2), .bytes(identity.backupKey.withUnsafeBytes { Array($0) }))]))
        defer { secureZero(&secret) }
        let sealed = try SecretBox.seal(secret, with: key)
        let file = CBORWriter.encode(.map([
            (.unsigned(1), .text(kind)), (.unsigned(2), .unsigned(1)), (.unsigned(3), .bytes(identity.userIDHash)),
            (.unsigned(4), .bytes(salt)), (.unsigned(5), .unsigned(strength.operations)),
            (.unsigned(6), .unsigned(UInt64(strength.memoryBytes))), (.unsigned(7), .bytes(sealed)),
        ]))
        try CloudIO.write(file, to: path(cloud: cloud, accountID: identity.userIDHash), mode: 0o600)
    }

    /// The recovery files in a cloud folder, by account id.
    public static func accounts(in cloud: String) -> [[UInt8]] {
        let names = (try? CloudIO.list(cloud)) ?? []
        return names.filter { $0.hasPrefix("quire-recovery-") && $0.hasSuffix(".qrecovery") }.compactMap { name in
            guard let data = try? CloudIO.read(cloud + "/" + name, upTo: 1 << 20),
                  let f = try? CBORReader.decode(Array(data)).asFieldMap(), let id = try? f.required(3, "account").asBytes() else { return nil }
            return id
        }
    }

    /// Opens the account's keys with a recovery code.
    public static func open(cloud: String, accountID: [UInt8], code: String) throws -> (account: SigningKeyPair, backupKey: SecretBytes) {
        let path = path(cloud: cloud, accountID: accountID)
        let data: [UInt8]
        do { data = try CloudIO.read(path, upTo: 1 << 20) } catch { throw AnchorError.unreadable("no recovery file at \(path) (\(error))") }
        let f: CBORFields
        do { f = try CBORReader.decode(Array(data)).asFieldMap() } catch { throw AnchorError.malformed("\(path) is not a recovery file: \(error)") }
        guard (try? f.required(1, "kind").asText()) == kind, (try? f.required(2, "format").asUInt()) == 1 else {
            throw AnchorError.malformed("\(path) is not a recovery file of a format this quire reads")
        }
        // The file sits in a folder others can write, and its settings choose
        // what opening costs: refuse what no quire writes, as invites do,
        // before Int() could trap or Argon2id take minutes or gigabytes.
        let ops = try f.required(5, "ops").asUInt(), memory = try f.required(6, "memory").asUInt()
        guard let strength = PasswordHash.strength(fromFile: ops, memoryBytes: memory) else {
            throw AnchorError.malformed("\(path) asks for key-derivation settings outside the accepted range (\(ops) passes, \(memory) bytes); refusing it")
        }
        let key = try PasswordHash.deriveKey(passphrase: normalized(code), salt: try f.required(4, "salt").asBytes(), strength: strength)
        var opened: [UInt8]
        do { opened = try SecretBox.open(try f.required(7, "sealed").asBytes(), with: key) } catch {
            throw WrongRecoveryCode(path: path)
        }
        defer { secureZero(&opened) }
        let inner = try CBORReader.decode(opened).asFieldMap()
        let account = try SigningKeyPair(seed: SecretBytes(copying: try inner.required(1, "account").asBytes()))
        guard SHA256.hash(account.publicKey.bytes) == accountID else { throw AnchorError.otherAccount }
        return (account, SecretBytes(copying: try inner.required(2, "backup").asBytes()))
    }
}

/// The recovery file opens only with the code `quire init` printed: a
/// wrong code is a mistyped or other code, never an altered anchor.
public struct WrongRecoveryCode: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var description: String {
        "the recovery code is wrong: it does not open \(path) (mistyped, or the code of another account?); use the code "
            + "'quire init' printed when the account was made (six groups of five letters and digits); nothing was created"
    }
}
