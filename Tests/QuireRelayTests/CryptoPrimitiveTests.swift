import QuireCrypto
import XCTest

/// QuireCrypto's typed wrappers over libsodium. They live in this target
/// because QuireRelayTests already depends on QuireCrypto.
final class CryptoPrimitiveTests: XCTestCase {
    func testBoxRoundTripAndEachNonceIsFresh() throws {
        let alice = BoxKeyPair(), bob = BoxKeyPair()
        let message = Array("meet at the usual place".utf8) + [0, 0, 255]
        let sealed = Box.seal(message, to: bob.publicKey, from: alice)
        XCTAssertEqual(sealed.count, message.count + Box.overhead)
        XCTAssertEqual(try Box.open(sealed, from: alice.publicKey, to: bob), message)
        XCTAssertNotEqual(Box.seal(message, to: bob.publicKey, from: alice), sealed, "two seals with the same nonce")
        XCTAssertEqual(try Box.open(Box.seal([UInt8](), to: bob.publicKey, from: alice), from: alice.publicKey, to: bob), [])
    }

    func testBoxOpenWithWrongKeyFails() {
        let alice = BoxKeyPair(), bob = BoxKeyPair(), eve = BoxKeyPair()
        let sealed = Box.seal([1, 2, 3], to: bob.publicKey, from: alice)
        XCTAssertThrowsError(try Box.open(sealed, from: alice.publicKey, to: eve)) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .authenticationFailed)
            XCTAssertTrue("\(error)".hasPrefix("Box.open: "), "\(error)")
        }
        XCTAssertThrowsError(try Box.open(sealed, from: eve.publicKey, to: bob), "a wrong claimed sender must fail too")
    }

    func testTamperedBoxFailsAtEveryPosition() {
        let alice = BoxKeyPair(), bob = BoxKeyPair()
        let sealed = Box.seal(Array("no edits".utf8), to: bob.publicKey, from: alice)
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x01
            XCTAssertThrowsError(try Box.open(tampered, from: alice.publicKey, to: bob), "flip at byte \(index) went unnoticed")
        }
        XCTAssertThrowsError(try Box.open(Array(sealed.prefix(Box.overhead - 1)), from: alice.publicKey, to: bob)) {
            XCTAssertEqual(($0 as? CryptoError)?.code, .invalidLength)
        }
    }

    func testAnonymousSealedBox() throws {
        let bob = BoxKeyPair(), eve = BoxKeyPair()
        let sealed = Box.sealAnonymously([9, 8, 7], to: bob.publicKey)
        XCTAssertEqual(try Box.openAnonymous(sealed, to: bob), [9, 8, 7])
        XCTAssertThrowsError(try Box.openAnonymous(sealed, to: eve))
    }

    func testKeyPairsRebuildFromStoredSecrets() throws {
        let box = BoxKeyPair()
        XCTAssertEqual(try BoxKeyPair(secretKey: box.secretKey).publicKey, box.publicKey)
        let seed = SecretBytes(randomCount: BoxKeyPair.seedByteCount)
        XCTAssertEqual(try BoxKeyPair(seed: seed).publicKey, try BoxKeyPair(seed: seed).publicKey)
        let signing = SigningKeyPair()
        XCTAssertEqual(try SigningKeyPair(seed: signing.seed()).publicKey, signing.publicKey)
        XCTAssertThrowsError(try BoxPublicKey(bytes: [1, 2, 3])) { XCTAssertEqual(($0 as? CryptoError)?.code, .invalidLength) }
    }

    func testSignaturesVerifyAndFailOnAnyFlippedBit() throws {
        let account = SigningKeyPair(), other = SigningKeyPair()
        let message = Array("device certificate".utf8)
        let signature = account.sign(message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(account.publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(other.publicKey.isValidSignature(signature, for: message), "another key accepted the signature")
        for bit in [0, 7, 100, 511] {
            var flipped = signature
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            XCTAssertFalse(account.publicKey.isValidSignature(flipped, for: message), "signature bit \(bit) flipped still verifies")
        }
        var alteredMessage = message
        alteredMessage[0] ^= 0x20
        XCTAssertFalse(account.publicKey.isValidSignature(signature, for: alteredMessage))
        XCTAssertFalse(account.publicKey.isValidSignature(Array(signature.prefix(63)), for: message))
    }

    func testPasswordHashIsDeterministicPerSaltAndDiffersAcrossSalts() throws {
        let salt = PasswordHash.makeSalt(), otherSalt = PasswordHash.makeSalt()
        XCTAssertEqual(salt.count, PasswordHash.saltByteCount)
        let first = try PasswordHash.deriveKey(passphrase: "correct horse", salt: salt, strength: .testing)
        let again = try PasswordHash.deriveKey(passphrase: "correct horse", salt: salt, strength: .testing)
        let salted = try PasswordHash.deriveKey(passphrase: "correct horse", salt: otherSalt, strength: .testing)
        let misspelt = try PasswordHash.deriveKey(passphrase: "correct hose", salt: salt, strength: .testing)
        XCTAssertEqual(first.count, SecretBox.keyByteCount)
        XCTAssertTrue(first.isEqual(to: again))
        XCTAssertFalse(first.isEqual(to: salted))
        XCTAssertFalse(first.isEqual(to: misspelt))
        XCTAssertThrowsError(try PasswordHash.deriveKey(passphrase: "x", salt: [1, 2], strength: .testing)) {
            XCTAssertEqual(($0 as? CryptoError)?.code, .invalidLength)
        }
    }

    func testSecretBoxUnderPassphraseKeyAndWrongKeyFails() throws {
        let salt = PasswordHash.makeSalt()
        let key = try PasswordHash.deriveKey(passphrase: "invite passphrase", salt: salt, strength: .testing)
        let invite = Array("account secret and roster".utf8)
        let sealed = try SecretBox.seal(invite, with: key)
        XCTAssertEqual(sealed.count, invite.count + SecretBox.overhead)
        XCTAssertEqual(try SecretBox.open(sealed, with: key), invite)
        let wrong = try PasswordHash.deriveKey(passphrase: "invite passphrasE", salt: salt, strength: .testing)
        XCTAssertThrowsError(try SecretBox.open(sealed, with: wrong)) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .authenticationFailed)
            XCTAssertEqual("\(error)", "SecretBox.open: wrong key (passphrase?) or altered bytes")
        }
        XCTAssertThrowsError(try SecretBox.seal(invite, with: SecretBytes(randomCount: 16))) {
            XCTAssertEqual(($0 as? CryptoError)?.code, .invalidLength)
        }
    }

    func testSecretBytesNeverPrintAndCompareByValue() {
        let secret = SecretBytes(copying: [UInt8](repeating: 0xAB, count: 32))
        XCTAssertEqual("\(secret)", "SecretBytes(32 bytes, redacted)")
        XCTAssertFalse(String(reflecting: secret).lowercased().contains("ab, ab"))
        XCTAssertTrue(secret.isEqual(to: SecretBytes(copying: [UInt8](repeating: 0xAB, count: 32))))
        XCTAssertFalse(secret.isEqual(to: SecretBytes(copying: [UInt8](repeating: 0xAB, count: 31) + [0xAC])))
        XCTAssertEqual(secret.withUnsafeBytes { Array($0) }, [UInt8](repeating: 0xAB, count: 32))
    }
}
