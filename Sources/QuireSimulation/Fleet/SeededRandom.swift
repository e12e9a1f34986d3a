import Foundation
import QuireCore

/// A `RandomSource` over SplitMix64 for everything a simulated device draws:
/// row keys, session stamps, message ids, heartbeat jitter. One seed, one
/// stream: the same seed draws the same bytes on every run and machine.
public final class SeededRandom: RandomSource, @unchecked Sendable {
    private let lock = NSLock()
    private var generator: SplitMix64

    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    public func next() -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        return generator.next()
    }

    /// Uniform in `range` (the modulo bias of a 64-bit draw is irrelevant here).
    public func int(_ range: Range<Int>) -> Int {
        precondition(!range.isEmpty, "empty range")
        return range.lowerBound + Int(next() % UInt64(range.count))
    }

    public func int(_ range: ClosedRange<Int>) -> Int { int(range.lowerBound..<(range.upperBound + 1)) }

    /// True with probability `p` (in millionths, so the stream is the same
    /// whatever the floating-point unit does with the comparison).
    public func chance(_ p: Double) -> Bool {
        guard p > 0 else { return false }
        return next() % 1_000_000 < UInt64(p * 1_000_000)
    }

    public func bytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count + 8)
        while out.count < count {
            var word = next()
            for _ in 0..<8 where out.count < count {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }

    public func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }
}

/// Derives independent seeds from one: a stream per device, per store
/// opening, per operation, so dropping one operation (the shrinker) does
/// not shift what every later one draws.
public enum SeedMix {
    public static func mix(_ values: UInt64...) -> UInt64 {
        var generator = SplitMix64(seed: 0x51_4D_5F_51_55_49_52_45)   // "QM_QUIRE"
        var acc: UInt64 = generator.next()
        for v in values {
            generator = SplitMix64(seed: acc ^ v)
            acc = generator.next()
        }
        return acc
    }

    /// 32 bytes of key material for `label` under `seed` (device keys).
    public static func keyMaterial(_ seed: UInt64, _ label: String, _ index: Int = 0) -> [UInt8] {
        var labelHash: UInt64 = 0xCBF2_9CE4_8422_2325   // FNV-1a: a stable, platform-independent label hash
        for byte in label.utf8 { labelHash = (labelHash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        let random = SeededRandom(seed: mix(seed, labelHash, UInt64(index)))
        return random.bytes(32)
    }
}
