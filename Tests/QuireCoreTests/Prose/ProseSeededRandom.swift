import Foundation
import QuireTestSupport

/// SplitMix64: a tiny, fast generator whose stream depends only on the seed,
/// so a failing property case replays exactly on any machine and toolchain
/// (we avoid `Int.random(in:using:)`, whose algorithm is not a promise).
struct ProseSeededRandom {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    /// Uniform enough in 0..<n for tests (modulo bias is negligible here).
    mutating func below(_ n: Int) -> Int {
        precondition(n > 0)
        return Int(next() % UInt64(n))
    }

    mutating func chance(percent: Int) -> Bool { below(100) < percent }

    mutating func element<T>(of items: [T]) -> T { items[below(items.count)] }
}

/// Seeds for property tests: `QUIRE_SEED=<n>` replays one case, otherwise
/// `count` consecutive seeds starting at `first`.
enum ProseSeeds {
    static func seeds(first: UInt64, count: Int) -> [UInt64] {
        if let text = ProcessInfo.processInfo.environment["QUIRE_SEED"], let seed = UInt64(text) {
            return [seed]
        }
        return (0..<UInt64(count)).map { first + $0 }
    }
}
