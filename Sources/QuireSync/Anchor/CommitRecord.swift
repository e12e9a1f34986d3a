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
extension CloudFolder {
    public var commitRecordPath: String { path + "/quire-committed-" + Hex.encode(accountID.prefix(6)) }

    private var commitAssociatedData: [UInt8] { Array("quire.commit-record".utf8) + accountID }

    /// Records that a barrier committed `generation` (never lowers the record).
    public func recordCommit(_ generation: UInt64, backupKey: SecretBytes) throws(AnchorError) {
        guard generation > committedGeneration(backupKey: backupKey) ?? 0 else { return }
        var plain: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { plain.append(UInt8(truncatingIfNeeded: generation >> UInt64(shift))) }
        do {
            try AtomicFile.write(try AEAD.seal(plain, associatedData: commitAssociatedData, with: backupKey), to: commitRecordPath, mode: 0o600)
        } catch {
            throw .unwritable("\(commitRecordPath): \(error)")
        }
    }

    /// The highest committed generation recorded; nil if none (or it does not open).
    public func committedGeneration(backupKey: SecretBytes) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: commitRecordPath),
              let plain = try? AEAD.open(Array(data), associatedData: commitAssociatedData, with: backupKey), plain.count == 8 else { return nil }
        return plain.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
