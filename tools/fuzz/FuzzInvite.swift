import Foundation
import QuireCore
import QuireCrypto
import QuireStore

// libFuzzer entry for invite text (Sources/QuireSync/Pairing/Invite.swift):
// a bearer credential pasted from a chat or a file, so hostile. The first
// byte picks what the rest is:
//   even: the invite text itself, through Invite.open;
//   odd:  the sealed contents (CBOR), sealed here under a fixed passphrase
//         so the fuzzer reaches the decoder behind the secretbox.
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
    if data[0] % 2 == 0 {
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
    } else {
        guard let key, let sealed = try? SecretBox.seal(input, with: key) else { return 0 }
        if let invite = try? Invite.open(inviteText(sealing: sealed), passphrase: passphrase, now: now) { checkAccepted(invite) }
    }
    return 0
}

private func checkAccepted(_ invite: Invite) {
    check(invite.accountSeed.count == SigningKeyPair.seedByteCount, "an accepted invite holds a whole account key")
    check(invite.backupKey.count == 32, "an accepted invite holds a whole backup key")
    check(now < invite.expiresAt, "an accepted invite has not expired")
    check(invite.roster.allSatisfy { $0.namespace == .devices }, "the roster holds device rows only")
}

private func inviteText(sealing sealed: [UInt8]) -> String {
    var out: [UInt8] = [0x51, 0x49, 1] + salt
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
