import Foundation
import QuireCore
import XCTest

/// Seeded fleets: replay one with `QUIRE_SEED=<seed> swift test --filter Prose`.
final class ProseMergePropertyTests: XCTestCase {
    func testRandomFleetsConvergeWithoutLosingAWord() {
        var associative = 0
        var checks = 0
        for seed in ProseSeeds.seeds(first: 1, count: 250) {
            var fleet = ProseFleetSimulation(seed: seed)
            fleet.run(steps: 40)
            fleet.finish()
            associative += fleet.associativeOrders
            checks += fleet.associativityChecks
            if let failure = fleet.failures.first {
                XCTFail("seed \(seed) (replay with QUIRE_SEED=\(seed)): \(failure)")
            }
        }
        // Order is not associative in general (see ProseMerge); the set is,
        // and that is what the simulation asserts. Report how often the
        // order happened to agree too.
        print("prose fleets: order associative in \(associative) of \(checks) triples")
    }

    /// Users who also type deleted paragraphs again (ranked tombstones):
    /// the merge stays commutative, idempotent and associative in its set,
    /// every schedule reaches one text, and no other paragraph is lost.
    func testRandomFleetsThatTypeDeletedParagraphsAgainConverge() {
        var typedAgain = 0
        for seed in ProseSeeds.seeds(first: 1, count: 250) {
            var fleet = ProseFleetSimulation(seed: seed, retypes: true)
            fleet.run(steps: 60)
            fleet.finish()
            typedAgain += fleet.retyped.count
            if let failure = fleet.failures.first {
                XCTFail("seed \(seed) (replay with QUIRE_SEED=\(seed)): \(failure)")
            }
        }
        XCTAssertGreaterThan(typedAgain, 100, "paragraphs were typed again")
    }

    /// `deletions` skips telling rewrites from deletions; it must still name
    /// exactly the paragraphs `classifyEdit` tombstones.
    func testDeletionsAreTheClassifiedTombstones() {
        let words = ["went", "to", "the", "park", "beach", "Cold.", "morning", "é", "ok", "Amen."]
        for seed in ProseSeeds.seeds(first: 1, count: 400) {
            var random = ProseSeededRandom(seed: seed)
            func paragraph() -> String { (0..<(1 + random.below(9))).map { _ in random.element(of: words) }.joined(separator: " ") }
            let shown = (0..<random.below(7)).map { _ in paragraph() }
            var edited = shown.filter { _ in random.chance(percent: 60) }
            for i in edited.indices where random.chance(percent: 30) { edited[i] += " " + random.element(of: words) }
            for _ in 0..<random.below(3) { edited.insert(paragraph(), at: random.below(edited.count + 1)) }
            // Trailing whitespace and Windows line breaks leave an identity as it is.
            for i in edited.indices where random.chance(percent: 15) { edited[i] += random.element(of: [" ", "\t", "\u{00A0}"]) }
            if random.chance(percent: 20), let copy = shown.first { edited.append(copy) }
            let before = Paragraphs.join(shown)
            var after = Paragraphs.join(edited)
            if random.chance(percent: 25) { after = after.replacingOccurrences(of: "\n", with: "\r\n") }
            XCTAssertEqual(ProseMerge.deletions(shown: before, edited: after),
                           ProseMerge.classifyEdit(shown: before, edited: after).tombstones, "seed \(seed)")
        }
    }
}
