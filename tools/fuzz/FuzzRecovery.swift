import Foundation
import QuireCore
import QuireCrypto
import QuireStore

// libFuzzer entry for the recovery file (Sources/QuireSync/Anchor/
// RecoveryFile.swift): it sits in the cloud folder, which a file-sync
// service, another machine or anyone with the folder can write. The first
// byte picks what the rest is:
//   even: the whole file, read by RecoveryFile.accounts and .open;
//   odd:  the sealed keys (CBOR), sealed here under a fixed code into an
//         otherwise valid file, so the fuzzer reaches the inner decoder.
// Built and run by tools/fuzz/run.

private let code = "ABCDE-FGHJK-MNPQR-STVWX-YZ012-34567"
private let salt = [UInt8](repeating: 9, count: PasswordHash.saltByteCount)
private let strength = PasswordHash.Strength.testing
nonisolated(unsafe) private var fixture: (identity: Identity, cloud: String, key: SecretBytes)?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    // A fixed account, so sealed seeds stay valid from run to run.
    let account = try! SigningKeyPair(seed: SecretBytes(copying: [UInt8](repeating: 1, count: SigningKeyPair.seedByteCount)))
    let identity = Identity(account: account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(),
                            backupKey: SecretBytes(copying: [UInt8](repeating: 2, count: 32)))
    let key = try! PasswordHash.deriveKey(passphrase: RecoveryFile.normalized(code), salt: salt, strength: strength)
    fixture = (identity, fuzzScratchDirectory("recovery"), key)
    writeSeeds(makeSeeds)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0, let fixture else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let file: [UInt8]
    if data[0] % 2 == 0 {
        // Settings inside the accepted Argon2id range (up to 1 GiB, 16
        // passes) but above the cheapest cost seconds per input and say
        // nothing new; out-of-range ones go through: they must be refused.
        if let f = try? CBORReader.decode(input).asFieldMap(), let ops = try? f.optional(5)?.asUInt(),
           let memory = try? f.optional(6)?.asUInt(), isExpensiveButAccepted(operations: ops, memoryBytes: memory) {
            return 0
        }
        file = input
    } else {
        guard let sealed = try? SecretBox.seal(input, with: fixture.key) else { return 0 }
        file = recoveryFile(accountID: fixture.identity.userIDHash, sealed: sealed)
    }
    let accountID = fixture.identity.userIDHash
    let path = RecoveryFile.path(cloud: fixture.cloud, accountID: accountID)
    check(FileManager.default.createFile(atPath: path, contents: Data(file)), "the scratch file is written")
    _ = RecoveryFile.accounts(in: fixture.cloud)
    if let opened = try? RecoveryFile.open(cloud: fixture.cloud, accountID: accountID, code: code) {
        check(SHA256.hash(opened.account.publicKey.bytes) == accountID, "an opened recovery file holds this account's key")
    }
    return 0
}

func isExpensiveButAccepted(operations: UInt64, memoryBytes: UInt64) -> Bool {
    PasswordHash.strength(fromFile: operations, memoryBytes: memoryBytes) != nil
        && (operations > strength.operations || memoryBytes > 64 << 10)
}

/// The outer file as RecoveryFile.write makes it, around given sealed bytes.
private func recoveryFile(accountID: [UInt8], sealed: [UInt8]) -> [UInt8] {
    CBORWriter.encode(.map([
        (.unsigned(1), .text(RecoveryFile.kind)), (.unsigned(2), .unsigned(1)), (.unsigned(3), .bytes(accountID)),
        (.unsigned(4), .bytes(salt)), (.unsigned(5), .unsigned(strength.operations)),
        (.unsigned(6), .unsigned(UInt64(strength.memoryBytes))), (.unsigned(7), .bytes(sealed)),
    ]))
}

/// A real recovery file, and its opened contents.
private func makeSeeds() throws -> [[UInt8]] {
    guard let fixture else { return [] }
    try RecoveryFile.write(identity: fixture.identity, cloud: fixture.cloud, code: code, strength: strength)
    let path = RecoveryFile.path(cloud: fixture.cloud, accountID: fixture.identity.userIDHash)
    let file = Array(FileManager.default.contents(atPath: path)!)
    let f = try CBORReader.decode(file).asFieldMap()
    let key = try PasswordHash.deriveKey(passphrase: RecoveryFile.normalized(code), salt: try f.required(4, "salt").asBytes(), strength: strength)
    let inner = try SecretBox.open(try f.required(7, "sealed").asBytes(), with: key)
    return [[0] + file, [1] + inner]
}
