import Foundation

/// SplitMix64: a tiny, fast generator whose stream depends only on the seed,
/// so a failing property case replays exactly on any machine and toolchain
/// (we avoid `Int.random(in:using:)`, whose algorithm is not a promise).
struct ProseSeededRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

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
