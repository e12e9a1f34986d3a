import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import XCTest
@testable import QuireSync

/// Inputs the fuzz targets (tools/fuzz) crashed, hung or exhausted memory
/// on, kept as tests so the fix stays.
final class FuzzFoundTests: XCTestCase {
    /// A recovery file whose Argon2id settings are rewritten to `ops` and
    /// `memory`, everything else as `quire init` writes it.
    private func recoveryFile(ops: UInt64, memory: UInt64) throws -> (cloud: String, accountID: [UInt8], code: String) {
        let cloud = makeShortTemporaryDirectory()
        let identity = Identity(account: SigningKeyPair(), deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(),
                                backupKey: SecretBytes(randomCount: 32))
        let code = RecoveryFile.makeCode()
        try RecoveryFile.write(identity: identity, cloud: cloud, code: code, strength: .testing)
        let path = RecoveryFile.path(cloud: cloud, accountID: identity.userIDHash)
        guard case .map(let fields) = try CBORReader.decode(Array(FileManager.default.contents(atPath: path)!)) else {
            throw CBORError.invalidValue("a recovery file is a map")
        }
        let patched = fields.map { (key, value) -> (CBOR, CBOR) in
            switch key {
            case .unsigned(5): return (key, .unsigned(ops))
            case .unsigned(6): return (key, .unsigned(memory))
            default: return (key, value)
            }
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(CBORWriter.encode(.map(patched)))))
        return (cloud, identity.userIDHash, code)
    }

    /// fuzz-recovery: memory 2^63+5 trapped in Int(UInt64) ("Not enough bits
    /// to represent the passed value"); 3 GiB ran out of memory in Argon2id;
    /// 2^32-1 passes would run for hours. The file lives in a folder others
    /// can write, so each is refused before any key derivation.
    func testRecoveryFileWithOutOfRangeKeyDerivationSettingsIsRefusedCheaply() throws {
        for (ops, memory) in [(UInt64(1), UInt64(1) << 63 + 5), (1, 3 << 30), (UInt64(UInt32.max), 8192), (0, 8192), (1, 4096)] {
            let file = try recoveryFile(ops: ops, memory: memory)
            defer { try? FileManager.default.removeItem(atPath: file.cloud) }
            let started = Date()
            XCTAssertThrowsError(try RecoveryFile.open(cloud: file.cloud, accountID: file.accountID, code: file.code), "ops \(ops), memory \(memory)") {
                XCTAssertTrue("\($0)".contains("outside the accepted range"), "\($0)")
            }
            XCTAssertLessThan(Date().timeIntervalSince(started), 1, "refused before deriving a key")
        }
        // The settings quire writes still open.
        let good = try recoveryFile(ops: PasswordHash.Strength.testing.operations, memory: UInt64(PasswordHash.Strength.testing.memoryBytes))
        defer { try? FileManager.default.removeItem(atPath: good.cloud) }
        XCTAssertEqual(SHA256.hash(try RecoveryFile.open(cloud: good.cloud, accountID: good.accountID, code: good.code).account.publicKey.bytes),
                       good.accountID)
    }

    /// fuzz-sync: a snapshot group numbered 0x0d0be2284f2a56d1 trapped in
    /// UInt8(UInt64) ("Not enough bits to represent the passed value").
    func testSnapshotGroupWithANamespaceNumberPast255IsMalformed() {
        for number: UInt64 in [256, 0x0d0b_e228_4f2a_56d1, UInt64.max] {
            let body = CBORWriter.encode(.map([(.unsigned(1), .unsigned(3)), (.unsigned(2), .array([.array([.unsigned(number), .array([])])]))]))
            XCTAssertThrowsError(try AnchorSnapshot(decoding: body), "namespace \(number)") {
                guard case AnchorError.malformed = $0 else { return XCTFail("\($0)") }
            }
        }
        let empty = CBORWriter.encode(.map([(.unsigned(1), .unsigned(3)), (.unsigned(2), .array([.array([.unsigned(UInt64(Namespace.plans.rawValue)), .array([])])]))]))
        XCTAssertEqual(try AnchorSnapshot(decoding: empty).generation, 3)
    }
}
