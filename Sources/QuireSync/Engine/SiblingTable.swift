import QuireCore

/// The siblings this device syncs with: one `SiblingState` per trusted
/// device on the roster other than this one, and the questions asked of
/// all of them at once.
///
/// Membership follows the roster alone (`follow(_:channel:)`): a sibling is
/// never added by a frame, and one revoked or gone is forgotten whole.
/// Everything else edits an existing entry in place (`update`, `save`).
struct SiblingTable {
    private var byID: [DeviceID: SiblingState] = [:]

    subscript(id: DeviceID) -> SiblingState? { byID[id] }

    var isEmpty: Bool { byID.isEmpty }
    var ids: [DeviceID] { Array(byID.keys) }
    var all: Dictionary<DeviceID, SiblingState>.Values { byID.values }

    /// Edits a sibling in place; nothing if it is not on the roster (any more).
    mutating func update(_ id: DeviceID, _ change: (inout SiblingState) -> Void) {
        guard byID[id] != nil else { return }
        change(&byID[id]!)
    }

    /// Writes back a sibling read from the table and changed; nothing if it
    /// was forgotten meanwhile.
    mutating func save(_ sibling: SiblingState) {
        update(sibling.member.deviceID) { $0 = sibling }
    }

    /// Takes the roster's siblings: new ones are added, known ones take
    /// their new roster entry, and the rest are forgotten. Returns the
    /// forgotten ones.
    mutating func follow(_ members: [RosterMember], channel: (DeviceID) -> String) -> [DeviceID] {
        let ids = Set(members.map(\.deviceID))
        var gone: [DeviceID] = []
        for id in byID.keys where !ids.contains(id) {
            gone.append(id)
            byID[id] = nil
        }
        for member in members {
            if byID[member.deviceID] != nil {
                byID[member.deviceID]!.member = member
            } else {
                byID[member.deviceID] = SiblingState(member: member, channel: channel(member.deviceID))
            }
        }
        return gone
    }

    /// The siblings that satisfy `condition`, in the table's order.
    func ids(where condition: (SiblingState) -> Bool) -> [DeviceID] {
        byID.compactMap { condition($0.value) ? $0.key : nil }
    }

    // MARK: Digests

    /// Some sibling was not sent this digest last.
    func someLack(_ digest: [UInt8]) -> Bool { byID.values.contains { $0.lastSentDigest != digest } }

    /// Every sibling holds this digest and we hold theirs.
    func allHoldBoth(_ mine: [UInt8]?) -> Bool { byID.values.allSatisfy { $0.holdsBoth(mine) } }

    /// Some sibling's last digest matched ours.
    var someInSync: Bool { byID.values.contains { $0.inSync } }

    /// Compares every sibling's last digest with ours (after ours moved).
    mutating func compareAll(with mine: StateDigest, now: Timestamp) {
        for id in Array(byID.keys) { byID[id]?.compare(with: mine, now: now) }
    }

    /// When each advertisement still waiting for an answer went out.
    var unansweredSinceMs: [UInt64] { byID.values.compactMap(\.awaitingAnswerSinceMs) }

    /// The siblings whose unanswered advertisement is due to be sent again,
    /// each with its next wait doubled.
    mutating func takeDueAdvertRetries(nowMs: UInt64, maxBackoffMs: UInt64) -> [DeviceID] {
        let due = ids { $0.nextAdvertRetryMs.map { nowMs >= $0 } ?? false }
        for id in due { byID[id]!.retryingAdvertisement(maxBackoffMs: maxBackoffMs) }
        return due
    }

    // MARK: Introductions

    /// Siblings never heard from whose next introduction is due.
    func dueIntroductions(nowMs: UInt64) -> [DeviceID] {
        ids { $0.lastSeenMs == nil && ($0.nextIntroduceMs.map { nowMs >= $0 } ?? false) }
    }

    /// The earliest re-sent advertisement or introduction.
    var nextTimerMs: UInt64? {
        var next: UInt64?
        for sibling in byID.values {
            if let retry = sibling.nextAdvertRetryMs { next = min(next ?? retry, retry) }
            if sibling.lastSeenMs == nil, let introduce = sibling.nextIntroduceMs { next = min(next ?? introduce, introduce) }
        }
        return next
    }

    // MARK: Generations

    /// Of the siblings at a generation ahead of `local`, the one heard from
    /// last (then the furthest ahead): see `checkAnchor`.
    func aheadOf(_ local: UInt64) -> (id: DeviceID, sibling: SiblingState)? {
        byID.filter { ($0.value.generationGap ?? 0) > local }
            .max { ($0.value.lastSeenMs ?? 0, $0.value.generationGap ?? 0) < ($1.value.lastSeenMs ?? 0, $1.value.generationGap ?? 0) }
            .map { ($0.key, $0.value) }
    }
}
