import XCTest
import QuireCore

final class DigestTests: XCTestCase {
    func roots(_ fill: UInt8) -> [Namespace: [UInt8]] {
        Dictionary(uniqueKeysWithValues: Namespace.allCases.map { ($0, [UInt8](repeating: fill &+ $0.rawValue, count: 32)) })
    }

    func testEncodedSizeIsVersionPlusRootsPlusGeneration() {
        let d = StateDigest(roots: roots(1), generation: 0x0102_0304_0506_0708)
        let bytes = d.encoded()
        XCTAssertEqual(bytes.count, 1 + 32 * Namespace.allCases.count + 8)
        XCTAssertEqual(Array(bytes.suffix(8)), [1, 2, 3, 4, 5, 6, 7, 8], "generation is 8 bytes big-endian")
        XCTAssertEqual(try StateDigest(decoding: bytes), d)
    }

    func testOtherVersionByteIsRejectedClearly() {
        var bytes = StateDigest(roots: roots(1), generation: 3).encoded()
        bytes[0] = StateDigest.wireVersion &+ 1
        XCTAssertThrowsError(try StateDigest(decoding: bytes)) { error in
            XCTAssertEqual(error as? DigestError, .incompatibleVersion(theirs: StateDigest.wireVersion &+ 1, ours: StateDigest.wireVersion))
            XCTAssertTrue("\(error)".contains("incompatible version"))
        }
        XCTAssertThrowsError(try StateDigest(decoding: Array(StateDigest(roots: roots(1), generation: 3).encoded().dropLast())))
    }

    func testDivergentNamespaces() {
        let a = StateDigest(roots: roots(1), generation: 0)
        var r = roots(1)
        r[.plans] = [UInt8](repeating: 0xFF, count: 32)
        r[.memory] = [UInt8](repeating: 0xEE, count: 32)
        XCTAssertEqual(a.divergentNamespaces(from: StateDigest(roots: r, generation: 0)), [.plans, .memory])
        XCTAssertEqual(a.divergentNamespaces(from: a), [])
    }

    func testFingerprintArithmetic() {
        let leaves = (0..<50).map { i in [UInt8](repeating: UInt8(i), count: 31) + [0xFF] }
        var sum = Fingerprint.zero
        for l in leaves { sum += Fingerprint(leaf: l) }
        var reordered = Fingerprint.zero
        for l in leaves.reversed() { reordered += Fingerprint(leaf: l) }
        XCTAssertEqual(sum, reordered, "a set's fingerprint does not depend on order")
        var removed = sum
        removed -= Fingerprint(leaf: leaves[3])
        XCTAssertEqual(removed.count, 49)
        XCTAssertNotEqual(removed.root, sum.root)
        removed += Fingerprint(leaf: leaves[3])
        XCTAssertEqual(removed, sum)
        // Carries across limbs: all-ones plus one wraps to zero with count 2.
        let ones = Fingerprint(leaf: [UInt8](repeating: 0xFF, count: 32))
        let one = Fingerprint(leaf: [UInt8](repeating: 0, count: 31) + [1])
        XCTAssertEqual((ones + one).sumBytes, [UInt8](repeating: 0, count: 32))
        XCTAssertEqual(((ones + one) - one).sumBytes, [UInt8](repeating: 0xFF, count: 32))
        // The count is part of the root: an empty set differs from {0…0}.
        XCTAssertNotEqual(Fingerprint.zero.root, Fingerprint(leaf: [UInt8](repeating: 0, count: 32)).root)
    }
}
