import Foundation
import QuireCore
@testable import QuireStore
import XCTest

/// The generation a replica records it reached, beside the one in prefs.
final class ReplicaGenerationTests: XCTestCase {
    private func prefs(_ dir: String, generation: UInt64) throws -> PrefsFile {
        let file = PrefsFile(path: dir + "/prefs.json")
        var p = Prefs(deviceName: "a")
        p.generation = generation
        try file.save(p)
        return file
    }

    /// A replica from before the record, holding notes and a deletion:
    /// its first sync start takes the generation prefs say, and changes
    /// nothing else.
    func testAnOlderReplicaWithRowsUpgradesInPlace() throws {
        let dir = temporaryDirectory()
        let store = try makeStore(dir)
        let kept = try store.put(.note(Note(title: "Kept", body: Array("words\n".utf8), createdAt: Timestamp(seconds: 0),
                                            updatedAt: Timestamp(seconds: 0))))
        let gone = try store.put(.note(Note(title: "Gone", body: Array("x\n".utf8), createdAt: Timestamp(seconds: 0),
                                            updatedAt: Timestamp(seconds: 0))))
        try store.delete(.notebook, gone.key)
        let before = try store.digest(generation: 0).encoded()
        XCTAssertNil(try store.replicaGeneration(), "no record yet: a replica of an older build")
        let file = try prefs(dir, generation: 3)
        XCTAssertNil(try store.settleGeneration(with: file))
        XCTAssertEqual(try store.replicaGeneration(), 3)
        XCTAssertEqual(try file.load().generation, 3)
        XCTAssertEqual(try store.digest(generation: 0).encoded(), before)
        XCTAssertEqual(try store.row(.notebook, kept.key)?.content?.displayName, "Kept")
        XCTAssertEqual(try store.row(.notebook, gone.key)?.isTombstone, true)
        XCTAssertNil(try store.settleGeneration(with: file), "the next start finds them agreeing")
    }

    /// A barrier records what it reached; the replica put back from before
    /// it, prefs kept, takes the device back to the replica's generation.
    func testAReplicaBehindPrefsLowersTheDevicesGeneration() throws {
        let dir = temporaryDirectory()
        let store = try makeStore(dir)
        let file = try prefs(dir, generation: 0)
        XCTAssertNil(try store.settleGeneration(with: file))
        try store.dropTombstonesForBarrier(generation: 2)
        XCTAssertEqual(try store.replicaGeneration(), 2)
        try store.recordGeneration(1)
        XCTAssertEqual(try store.replicaGeneration(), 2, "never lowered")
        try file.setGeneration(2)
        XCTAssertNil(try store.settleGeneration(with: file))
        try file.setGeneration(5)
        XCTAssertTrue(try store.settleGeneration(with: file)! == (from: 5, to: 2))
        XCTAssertEqual(try file.load().generation, 2)
    }
}
