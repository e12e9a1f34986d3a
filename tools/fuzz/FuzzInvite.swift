import Foundation
import QuireCore
import QuireCrypto
import QuireStore

// libFuzzer entry for invite text (Sources/QuireSync/Pairing/Invite.swift)
// and the device log's checks (Sources/QuireSync/Roster/): a bearer
// credential pasted from a chat or a file, and statements that arrive from
// siblings or in anonymous introductions, so hostile. The first byte % 4
// picks what the rest is:
//   0: the invite text itself, through Invite.open;
//   1: the sealed contents (CBOR), sealed here under a fixed passphrase
//      so the fuzzer reaches the decoder behind the secretbox;
//   2: one signed statement: DeviceStatement.verify, Enrolment.verify, and
//      the roster it makes beside a real account's statements;
//   3: a CBOR array of signed statements: the whole log evaluated.
// Built and run by tools/fuzz/run.

private let passphrase = "fuzzing passphrase"
private let salt = [UInt8](repeating: 7, count: PasswordHash.saltByteCount)
private let strength = PasswordHash.Strength.testing
private let now = Timestamp(seconds: 1_800_000_000)
private let headerSize = 3 + PasswordHash.saltByteCount + 16
nonisolated(unsafe) private var key: SecretBytes?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    key = try! PasswordHash.deriveKey(passphrase: passphrase, salt: salt, strength: strength)
    writeSeeds(makeSeeds)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 2: checkStatements([input])
    case 3:
        guard let items = try? CBORReader.decode(input, limits: .init(maxDepth: 4, maxItemLength: 1 << 16)).asArray(), items.count <= 64 else { return 0 }
        checkStatements(items.compactMap { try? $0.asBytes() })
    case 0:
        let text = String(decoding: input, as: UTF8.self)
        // Settings inside the accepted Argon2id range (up to 1 GiB, 16
        // passes) but above the cheapest cost seconds per input and say
        // nothing new; out-of-range ones go through: they must be refused.
        if let bytes = Base64URL.decode(String(text.trimmingCharacters(in: .whitespacesAndNewlines).dropFirst(Invite.prefix.count))),
           bytes.count >= headerSize {
            let ops = readBigEndian(bytes, at: 3 + PasswordHash.saltByteCount), memory = readBigEndian(bytes, at: 11 + PasswordHash.saltByteCount)
            if PasswordHash.strength(fromFile: ops, memoryBytes: memory) != nil
                && (ops > strength.operations || memory > 64 << 10) {
                return 0
            }
        }
        if let invite = try? Invite.open(text, passphrase: passphrase, now: now) { checkAccepted(invite) }
    default:
        guard let key, let sealed = try? SecretBox.seal(input, with: key) else { return 0 }
        if let invite = try? Invite.open(inviteText(sealing: sealed), passphrase: passphrase, now: now) { checkAccepted(invite) }
    }
    return 0
}

/// A fixed account with a real first device, so hostile statements meet a log that has members.
private let fuzzAccount = try! SigningKeyPair(seed: SecretBytes(copying: [UInt8](repeating: 3, count: 32)))
private let fuzzFirst = try! SigningKeyPair(seed: SecretBytes(copying: [UInt8](repeating: 4, count: 32)))
private let fuzzGenesis: Row = {
    let id = Identity.deviceID(for: fuzzFirst.publicKey)
    let first = Identity(account: fuzzAccount, deviceSigning: fuzzFirst, deviceBox: try! BoxKeyPair(seed: SecretBytes(copying: [UInt8](repeating: 5, count: 32))),
                         backupKey: SecretBytes(copying: [UInt8](repeating: 6, count: 32)))
    let cert = first.signedCertificate(name: "first", issuedAt: now)
    return Row.single(.devices, id, dot: Dot(actor: Actor(device: id, incarnation: 1), counter: 1), context: VersionVector(),
                      content: .device(DeviceRecord(name: "first", certificate: cert)))
}()

private func checkStatements(_ signed: [[UInt8]]) {
    var rows = [fuzzGenesis]
    for (i, bytes) in signed.enumerated() {
        _ = try? Enrolment.verify(bytes, pairingKey: fuzzFirst.publicKey)
        _ = Enrolment.claimedGrant(bytes)
        guard let s = try? DeviceStatement.verify(bytes, accountKey: fuzzAccount.publicKey) else { continue }
        check(s.accountKey == fuzzAccount.publicKey.bytes, "a verified statement names our account")
        let id = DeviceStatement.id(of: bytes)
        let row = Row.single(.devices, id, dot: Dot(actor: Actor(device: id, incarnation: 1), counter: UInt64(i + 2)), context: VersionVector(),
                             content: .device(DeviceRecord(name: "x", certificate: bytes)))
        check(Roster.isWellFormed(row, accountKey: fuzzAccount.publicKey), "a verified statement keyed by its id is well-formed")
        rows.append(row)
    }
    let roster = DeviceLog(rows: rows, accountKey: fuzzAccount.publicKey).roster()
    let reversed = DeviceLog(rows: rows.reversed(), accountKey: fuzzAccount.publicKey).roster()
    check(roster == reversed, "the roster does not depend on the order of the statements")
    // Only the account key and a real signer could make anything but the first device count.
    check(roster.members.values.filter { $0.trust == .trusted }.allSatisfy { $0.addedBy == nil || $0.addedBy == Identity.deviceID(for: fuzzFirst.publicKey)
        || roster[$0.addedBy!]?.trust != nil }, "every trusted device was admitted by a member")
}

private func checkAccepted(_ invite: Invite) {
    check(invite.pairingSeed.count == SigningKeyPair.seedByteCount, "an accepted invite holds a whole pairing key")
    check(now < invite.expiresAt, "an accepted invite has not expired")
    check(invite.roster.allSatisfy { $0.namespace == .devices }, "the roster holds device rows only")
}

private func inviteText(sealing sealed: [UInt8]) -> String {
    var out: [UInt8] = [0x51, 0x49, 2] + salt
    appendBigEndian(strength.operations, to: &out)
    appendBigEndian(UInt64(strength.memoryBytes), to: &out)
    return Invite.prefix + Base64URL.encode(out + sealed)
}

/// A real invite from a real device directory, and its opened contents.
private func makeSeeds() throws -> [[UInt8]] {
    let base = fuzzScratchDirectory("invite-seeds")
    defer { try? FileManager.default.removeItem(atPath: base) }
    let home = DeviceHome(path: base + "/device")
    let (identity, store) = try home.create(name: "seed")
    var prefs = try home.prefs.load()
    prefs.cloud = "/srv/cloud"
    var seeds: [[UInt8]] = []
    for relay in ["local", "redis://127.0.0.1:6379"] {
        prefs.relay = relay
        let text = try Invite.make(identity: identity, store: store, prefs: prefs, passphrase: passphrase, strength: strength, now: now)
        seeds.append([0] + Array(text.utf8))
        let bytes = Base64URL.decode(String(text.dropFirst(Invite.prefix.count)))!
        let opened = try SecretBox.open(bytes[headerSize...],
                                        with: try PasswordHash.deriveKey(passphrase: passphrase, salt: Array(bytes[3..<19]), strength: strength))
        seeds.append([1] + opened)
    }
    return seeds
}

/// The engine's DateStamp (Sources/QuireSync/Engine/SyncEngine.swift), which
/// this target does not compile: only error texts use it.
enum DateStamp {
    static func format(_ t: Timestamp) -> String { "@\(t.seconds)" }
}
