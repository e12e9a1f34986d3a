/// More than `maxRounds` rounds with one sibling inside `windowMs`, none of
/// which moved our digest, means the pair is not converging (a field hashed
/// but not merged, usually): back off for `backoffMs`. It bounds a bug; it does not fix one, so the
/// back-off shows in `quire status` as still out of sync.
struct StormGuard {
    let maxRounds: Int
    let windowMs: UInt64
    let backoffMs: UInt64
    private(set) var roundTimes: [UInt64] = []
    private(set) var backoffUntilMs: UInt64? = nil
    private(set) var storms = 0
    private var lastOwnDigest: [UInt8]?

    init(maxRounds: Int, windowMs: UInt64, backoffMs: UInt64) {
        self.maxRounds = maxRounds
        self.windowMs = windowMs
        self.backoffMs = backoffMs
    }

    func isBackingOff(nowMs: UInt64) -> Bool { backoffUntilMs.map { nowMs < $0 } ?? false }

    /// Records a round starting now, with this device's digest as it is
    /// then; false (and a back-off) if it would be one too many. Only rounds
    /// that got nowhere count: if our digest moved since the last round,
    /// the pair made progress (a series of saves, a long catch-up), and the
    /// count starts again.
    mutating func admitRound(nowMs: UInt64, ownDigest: [UInt8]) -> Bool {
        if isBackingOff(nowMs: nowMs) { return false }
        if backoffUntilMs != nil { backoffUntilMs = nil; roundTimes = [] }
        if ownDigest != lastOwnDigest { roundTimes = []; lastOwnDigest = ownDigest }
        roundTimes.removeAll { nowMs &- $0 >= windowMs }
        if roundTimes.count >= maxRounds {
            backoffUntilMs = nowMs + backoffMs
            storms += 1
            return false
        }
        roundTimes.append(nowMs)
        return true
    }
}
