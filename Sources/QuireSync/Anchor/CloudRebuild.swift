import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// `quire init --from-cloud`: every device lost, the recovery file (opened
/// with the recovery code) gives the account key and the original backup
/// key. An anchor under rotated keys carries those keys sealed to the
/// account key (`AnchorHeader.sealedForAccount`), so the account key opens
/// it too.
///
/// There is no device of its own to judge anchors by, so the rule of
/// `AnchorKeys` is applied with the log of every anchor that opens and the
/// folder's copies of the device log (`CloudDeviceLog`): an anchor sealed
/// without the key of a revocation that any of them holds is refused (a
/// revoked device could have written it). A revoked device that deleted
/// every newer anchor and every copy cannot be caught this way (SECURITY.md).
public enum CloudRebuild {
    public struct Found {
        public var header: AnchorHeader
        public var snapshot: AnchorSnapshot
        /// Every rotation key the opened anchors carried (the rebuilt device keeps them).
        public var ring: BackupKeyRing
        /// Anchors above the chosen one that were not used, and why.
        public var refused: [String]
        /// What the chosen anchor may lack, by the commit record's account.
        public var cautions: [String] = []
    }

    /// Anchors opened, and every one was refused (nothing usable, though
    /// something was there): why, one line each.
    public struct EveryAnchorRefused: Error, CustomStringConvertible {
        public var refused: [String]
        public var description: String { refused.joined(separator: "; ") }
    }

    /// The newest anchor to rebuild from; nil when none opens; throws
    /// `EveryAnchorRefused` when some open and none may be used.
    public static func newest(in folder: CloudFolder, account: SigningKeyPair, original: SecretBytes) throws -> Found? {
        let accountBox = try BoxKeyPair(convertingSigningKeyPair: account)
        var opened: [(header: AnchorHeader, snapshot: AnchorSnapshot)] = []
        var ring = BackupKeyRing()
        var refused: [(UInt64, String)] = []
        for candidate in try folder.candidates() {
            do {
                guard let data = try? CloudIO.read(candidate.path) else { throw AnchorError.unreadable(candidate.path) }
                var key = original
                if !candidate.header.keySet.isEmpty {
                    let carried = try BackupKeyRing.open(candidate.header.sealedForAccount, with: accountBox)
                    guard let derived = carried.key(for: candidate.header.keySet, original: original) else {
                        throw AnchorError.keyNotHeld("it does not carry every key of its own key set")
                    }
                    key = derived
                    ring = ring.merging(carried)
                }
                opened.append(try AnchorFile.open(Array(data), accountID: folder.accountID, key: key))
            } catch {
                refused.append((candidate.header.generation, "the anchor at generation \(candidate.header.generation) does not open: \(error)"))
            }
        }
        // With the copies of the device log (CloudDeviceLog): a revocation
        // made after the newest honest anchor, or when there was none, counts.
        let copies = (try? folder.deviceLogs(key: original).rows) ?? []
        let rows = opened.flatMap { $0.snapshot.rows.filter { $0.namespace == .devices } } + copies
        let log = DeviceLog(rows: rows, accountKey: account.publicKey)
        let verdicts = log.verdicts()
        let schedule = BackupKeySchedule(log: log, roster: log.roster(verdicts: verdicts), verdicts: verdicts)
        for id in ring.ids where schedule.rotations[id] != nil && !schedule.accepts(ring.keys[id]!, for: id) { ring.remove(id) }
        var usable: [(header: AnchorHeader, snapshot: AnchorSnapshot)] = []
        for anchor in opened {
            let missing = schedule.required.filter { !anchor.header.keySet.contains($0) }
            guard missing.isEmpty else {
                refused.append((anchor.header.generation, "the anchor at generation \(anchor.header.generation) is sealed with a backup key from before "
                                + missing.map(schedule.words).joined(separator: " and ") + " (a revoked device could have written it)"))
                continue
            }
            usable.append(anchor)
        }
        guard var chosen = usable.first else {
            if !opened.isEmpty { throw EveryAnchorRefused(refused: refused.map(\.1)) }
            return nil
        }
        // At one generation the folder may show an anchor of a round
        // abandoned after its upload beside (or instead of) the committed
        // one. The commit record names the round that committed: its anchor
        // is the one to rebuild from. Without it, the newest still is (an
        // older generation's would lose more), and the user is told.
        let record = folder.committedRound(ring: ring, original: original, required: Set(schedule.required))
        var cautions: [String] = []
        if let record, record.generation == chosen.header.generation, let round = record.round, chosen.snapshot.round != round {
            if let committed = usable.first(where: { $0.header.generation == record.generation && $0.snapshot.round == round }) {
                chosen = committed
            } else {
                cautions.append("the anchor of the round that committed generation \(record.generation) is not in the folder; "
                                + "rebuilt from another round's anchor at that generation (a round abandoned after its upload): "
                                + "rows deleted after it was written may show again")
            }
        } else if let record, record.generation > chosen.header.generation {
            cautions.append("a barrier committed generation \(record.generation) (the commit record says so), but no anchor of it "
                            + "opens here; rebuilt from generation \(chosen.header.generation): rows deleted since may show again")
        }
        let above = refused.filter { $0.0 >= chosen.header.generation }.map(\.1)
        return Found(header: chosen.header, snapshot: chosen.snapshot, ring: ring, refused: above, cautions: cautions)
    }
}
