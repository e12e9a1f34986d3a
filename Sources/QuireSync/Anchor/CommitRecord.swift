import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The commit record beside the anchor: the highest generation a barrier is
/// known to have committed, sealed under the backup key (so it cannot be
/// forged by whoever can write the folder). The anchor lands before the
/// round commits, so an anchor alone may be one for a round that never
/// committed (its leader lost power after the upload, or the round was
/// abandoned): a floor nobody stands on. Taking it for "this device was
/// rolled back" would make a device recover from a snapshot older than
/// rows it holds, and turn those rows into tombstones as if the fleet had
/// collected them (the simulator's seeds 46, 51, 60 and 79 with
/// --cloud-and-power-faults). So the start-up check acts on an anchor only
/// when this record (written by each device that commits) or a sibling at
/// that generation shows the round committed.
///
/// Format 2 says in clear which key sealed it, as the anchor does:
/// `"QUIRECR2" ‖ key block length (u32 BE) ‖ CBOR {1: [rotation ids]} ‖
/// AEAD(generation, u64 BE ‖ the nonce of the round that committed it, 16
/// bytes, when known)`, the associated data being a separator, the
/// account id and everything before the AEAD. Format 1 (no magic) is the
/// AEAD alone under the original key. A record under a key set missing a
/// rotation this device knows is ignored, like such an anchor: a revoked
/// device could have written it. The round lets a device that starts behind
/// the fleet, with no sibling heard yet, recover only from that round's
/// anchor: a folder kept by a sync service may show another round's at the
/// same generation (one abandoned after its upload), and the committed
/// one as a conflict copy beside it.
extension CloudFolder {
    public var commitRecordPath: String { path + "/quire-committed-" + Hex.encode(accountID.prefix(6)) }

    static let commitMagic = Array("QUIRECR2".utf8)

    private var commitAssociatedData: [UInt8] { Array("quire.commit-record".utf8) + accountID }

    /// The record's key set and sealed value, as stored (nil: no record, or not one).
    private func readCommitRecord() -> (set: [DeviceID], header: [UInt8], sealed: [UInt8])? {
        guard let data = try? CloudIO.read(commitRecordPath, upTo: 1 << 20) else { return nil }
        guard data.count >= 12, Array(data[0..<8]) == CloudFolder.commitMagic else { return ([], [], data) }   // format 1
        let n = Int(data[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard n <= 64 << 10, data.count >= 12 + n,
              let ids = try? CBORReader.decode(Array(data[12..<12 + n])).asFieldMap().required(1, "key set").asArray() else { return nil }
        var set: [DeviceID] = []
        for item in ids {
            guard let id = (try? item.asBytes()).flatMap(ID16.init(bytes:)) else { return nil }
            set.append(id)
        }
        return (set, Array(data[0..<12 + n]), Array(data[(12 + n)...]))
    }

    private func openCommitRecord(with key: SecretBytes, _ record: (set: [DeviceID], header: [UInt8], sealed: [UInt8])) -> CommittedRound? {
        guard let plain = try? AEAD.open(record.sealed, associatedData: commitAssociatedData + record.header, with: key),
              plain.count == 8 || plain.count == 24 else { return nil }
        return CommittedRound(generation: plain[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, round: plain.count == 24 ? Array(plain[8...]) : nil)
    }

    /// What the commit record says: the generation, and the round that
    /// committed it (nil in records written before it was kept).
    public struct CommittedRound: Equatable, Sendable {
        public var generation: UInt64
        public var round: [UInt8]?
    }

    /// Records that a barrier committed `generation`, sealed under the key
    /// `keys` writes with (never lowers a record this device may trust; a
    /// record under older keys is replaced). `previous`: keys whose records
    /// may also be trusted (the revoking device's keys just before its own
    /// revocation, when it re-seals the record under the new key).
    public func recordCommit(_ generation: UInt64, round: [UInt8]? = nil, keys: AnchorKeys, trusting previous: AnchorKeys? = nil) throws(AnchorError) {
        guard let writing = keys.writing else { throw .keyNotHeld(keys.missingWords) }
        let existing = readCommitRecord()
        let current = committedRound(keys: keys)
        let older = previous.flatMap { committedRound(keys: $0) }
        if let current, current.generation > generation || (current.generation == generation && (current.round != nil || round == nil)),
           existing?.set == writing.set { return }
        // The highest generation known, with the round of that generation where one is known.
        let candidates = [CommittedRound(generation: generation, round: round), current, older].compactMap { $0 }
        let value = candidates.map(\.generation).max() ?? generation
        let valueRound = candidates.first { $0.generation == value && $0.round?.count == 16 }?.round
        let block = CBORWriter.encode(.map([(.unsigned(1), .array(writing.set.map { .bytes($0.bytes) }))]))
        let n = UInt32(block.count)
        let header = CloudFolder.commitMagic + [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + block
        var plain: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { plain.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        if let valueRound { plain += valueRound }
        do {
            try CloudIO.write(header + (try AEAD.seal(plain, associatedData: commitAssociatedData + header, with: writing.key)),
                              to: commitRecordPath, mode: 0o600)
        } catch {
            throw .unwritable("\(commitRecordPath): \(error)")
        }
    }

    /// The highest committed generation recorded; nil if none, if it does
    /// not open, or if it is sealed under keys from before a rotation `keys` knows.
    public func committedGeneration(keys: AnchorKeys) -> UInt64? { committedRound(keys: keys)?.generation }

    /// The record's generation and round (see `committedGeneration`).
    public func committedRound(keys: AnchorKeys) -> CommittedRound? {
        guard let record = readCommitRecord(), case .acceptable(let key) = keys.judge(record.set) else { return nil }
        return openCommitRecord(with: key, record)
    }

    /// The record's generation and round for a device rebuilt from the
    /// folder (`CloudRebuild`): opened with the rotation keys `ring`
    /// carries, and ignored unless its key set holds every rotation in
    /// `required` (as an anchor: a revoked device could have written it).
    public func committedRound(ring: BackupKeyRing, original: SecretBytes, required: Set<DeviceID>) -> CommittedRound? {
        guard let record = readCommitRecord(), required.isSubset(of: Set(record.set)),
              let key = ring.key(for: record.set, original: original) else { return nil }
        return openCommitRecord(with: key, record)
    }

    /// Rotations the commit record names that `keys`' log does not know.
    func commitRecordUnknownRotations(keys: AnchorKeys) -> [DeviceID] {
        readCommitRecord().map { keys.unknownRotations(in: $0.set) } ?? []
    }
}
