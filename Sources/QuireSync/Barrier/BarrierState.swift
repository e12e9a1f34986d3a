import QuireCore
import QuireStore

/// The tombstone barrier's state on one device, owned in one place: the
/// round this device leads (if any) and the rounds it answered. Pure: the
/// engine feeds it events and acts on what it returns.
///
/// Safety comes from three checks, in order: a commit needs an ack with the
/// current nonce from every roster device, every acked digest equal to the
/// leader's own freshly recomputed one; the anchor lands before anything is
/// collected; and a receiver collects only for a round it acked and has
/// not committed before, with its digest still the agreed one (the seed
/// checks only the digest, so a replayed commit could pass).
struct BarrierState {
    struct Round {
        let nonce: [UInt8]
        /// The roster (device ids other than ours) this round must hear from.
        let roster: Set<DeviceID>
        let digest: [UInt8]
        let startedMs: UInt64
        var acks: [DeviceID: [UInt8]] = [:]
        /// The tombstones each device acked: the anchor's graveyard names them.
        var tombstones: [DeviceID: [CollectedTombstone]] = [:]
        var declined: Set<DeviceID> = []
    }

    /// The round this device leads.
    var round: Round?
    /// When a sibling last matched us, a round may start this many ms later.
    var attemptAtMs: UInt64?
    /// Rounds this device acked: nonce → (leader, digest it acked, the
    /// encoding of the tombstones it acked).
    var acked: [[UInt8]: (leader: DeviceID, digest: [UInt8], tombstones: [UInt8], atMs: UInt64)] = [:]
    /// What the leader of a round this device acked says the round
    /// collects, the whole roster's tombstones (`gc_collected`), kept until
    /// its commit: nonce → entries.
    var collections: [[UInt8]: [CollectedTombstone]] = [:]
    /// How many of the lists of the last rounds this device led it keeps
    /// (in the replica, `BarrierLists`), for a follower whose copy was lost
    /// and asks again (`gc_collected_req`).
    static let sentListsKept = 4
    /// A round this device committed without its list, which it asks the
    /// leader for until it comes (`AwaitedList`).
    var awaitedList: AwaitedList?
    /// Nonces of rounds this device has collected for (a replay is refused).
    var committed: Set<[UInt8]> = []
    /// The last outcome, in words (status).
    var lastOutcome: String?

    /// A round committed without its `gc_collected`: once the list comes,
    /// the graveyard names the round and the claim it broke is mended. The
    /// round is also kept in the replica, so a restart asks again.
    struct AwaitedList {
        /// Which round, from which leader (kept in the replica too).
        let round: QuireStore.AwaitedList
        var askedAtMs: UInt64
        var asks: Int
        static let retryMs: UInt64 = 5_000
        static let maxAsks = 6
    }

    enum AckOutcome: Equatable {
        case waiting
        case unanimous
        case failed(String)
    }

    /// Records an ack to the round this device leads.
    mutating func record(_ ack: BarrierAck, from sender: DeviceID, name: String) -> AckOutcome {
        guard var current = round, ack.nonce == current.nonce, current.roster.contains(sender) else { return .waiting }
        if ack.declined {
            current.declined.insert(sender)
            round = current
            return .failed("device \(name) has the cloud anchor off, so it never acks: tombstones are not collected for this account "
                           + "until it turns it on ('quire config cloud-anchor on') or is revoked")
        }
        guard ack.digest == current.digest else {
            round = current
            return .failed("device \(name) answered with another digest (it moved since it matched)")
        }
        current.acks[sender] = ack.digest
        current.tombstones[sender] = ack.tombstones
        round = current
        return Set(current.acks.keys) == current.roster ? .unanimous : .waiting
    }

    /// Forgets acked rounds older than `keepMs` (a commit for them would be
    /// refused anyway once the timer passed).
    mutating func expireAcked(nowMs: UInt64, keepMs: UInt64) {
        acked = acked.filter { nowMs &- $0.value.atMs < keepMs }
        collections = collections.filter { acked[$0.key] != nil }
    }
}
