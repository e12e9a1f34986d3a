/// "Wedged", as seeds/diary-never-loses-a-word.txt defines it: errors keep
/// coming and nothing succeeds for a while. A device that cannot converge
/// must say so (rule 8) instead of looking idle. One owner of the rule, per
/// concern, since each has its own kind of success: frames with siblings
/// (an authenticated frame from one), the cloud folder (an anchor written
/// or read), and the generation (no gap left that this device cannot close).
struct WedgeDetector {
    enum Concern: String, CaseIterable {
        case siblings, cloud, generation
    }

    private var firstErrorMs: [Concern: UInt64] = [:]
    private var lastReason: [Concern: String] = [:]

    mutating func success(_ concern: Concern) {
        firstErrorMs[concern] = nil
        lastReason[concern] = nil
    }

    mutating func error(_ concern: Concern, _ reason: String, nowMs: UInt64) {
        if firstErrorMs[concern] == nil { firstErrorMs[concern] = nowMs }
        lastReason[concern] = reason
    }

    /// The longest-standing concern whose errors have persisted past
    /// `after` (SyncConfiguration.wedgedAfterMilliseconds) with no success,
    /// and its latest reason.
    func wedged(nowMs: UInt64, after: UInt64) -> (sinceMs: UInt64, reason: String)? {
        Concern.allCases.compactMap { c -> (UInt64, String)? in
            guard let first = firstErrorMs[c], let reason = lastReason[c], nowMs &- first >= after else { return nil }
            return (first, reason)
        }.min { $0.0 < $1.0 }.map { (sinceMs: $0.0, reason: $0.1) }
    }
}
