import Foundation
import QuireCore
import QuireCrypto
import QuireStore

extension AnchorKeys {
    /// A device's keys read from its replica's device log and its rotation
    /// keys, outside an engine (`quire devices revoke`, the simulator).
    public static func of(identity: Identity, store: ReplicaStore, ring: BackupKeyRing) throws -> AnchorKeys {
        let log = DeviceLog(rows: try store.rows(.devices, from: [], to: nil), accountKey: identity.account.publicKey)
        let verdicts = log.verdicts()
        let schedule = BackupKeySchedule(log: log, roster: log.roster(verdicts: verdicts), verdicts: verdicts)
        return try AnchorKeys(original: identity.backupKey, ring: ring, schedule: schedule, accountKey: identity.account.publicKey)
    }
}

/// Right after a revocation, on the device that made it: its copy of the
/// device log in the folder, so the revocation outlives a restore of this
/// device (`CloudDeviceLog`); then the anchor the
/// fleet stands on, and the commit record, are sealed again under the new
/// key set. Every device that learns the revocation refuses what is sealed
/// under an older set (the revoked device could have written it), so
/// without this no anchor would be usable for recovery until the next
/// barrier; and a device put back from an older backup, which has not
/// learned the revocation, sees the new rotation named in the folder and
/// trusts no anchor until its log catches up.
///
/// Only the revoking device does this, at once: it trusted those files a
/// moment ago, with the keys it held before its own revocation. A device
/// that learns of the revocation later cannot tell whether the revoked
/// device wrote something in between, so it waits for the next barrier.
/// The copy gets a name of its own (a barrier writing the next anchor at
/// the same time is never overwritten) and the anchor's own time, so a
/// newer anchor at the same generation still comes first.
public enum AnchorRekey {
    /// `deviceLog`: the revoking device's `devices` rows, the revocation among them.
    public static func afterRevocation(cloud: CloudFolder, before: AnchorKeys, after: AnchorKeys, localGeneration: UInt64,
                                       device: DeviceID, deviceLog: [Row]) throws -> String {
        try cloud.writeDeviceLog(deviceLog, device: device, key: after.original)
        guard let writing = after.writing else { throw AnchorError.keyNotHeld(after.missingWords) }
        var done: [String] = []
        if let (header, snapshot) = try cloud.newest(keys: before), header.generation <= localGeneration {
            let header2 = AnchorHeader(generation: header.generation, accountID: cloud.accountID, writtenAt: header.writtenAt,
                                       keySet: writing.set, sealedForAccount: after.ring.sealed(to: after.accountSealingKey, only: writing.set))
            let encodedHeader = header2.encoded()
            let bytes = encodedHeader + (try AEAD.seal(snapshot.encoded(), associatedData: encodedHeader, with: writing.key))
            let path = cloud.rekeyedPath(device: device)
            do { try CloudIO.write(bytes, to: path, mode: 0o600) } catch { throw AnchorError.unwritable("\(path): \(error)") }
            done.append("the anchor at generation \(header.generation)")
        }
        if try CloudIO.exists(cloud.commitRecordPath) || localGeneration > 0 {
            try cloud.recordCommit(localGeneration, keys: after, trusting: before)
            done.append("the commit record")
        }
        return "the revocation is in this device's copy of the device log; "
            + (done.isEmpty ? "the cloud folder holds no anchor yet" : "sealed again under the new key: " + done.joined(separator: " and "))
    }
}

extension CloudFolder {
    /// Where the revoking device puts an anchor it sealed again (read like
    /// any anchor: the name starts like the canonical one).
    public func rekeyedPath(device: DeviceID) -> String {
        path + "/" + CloudFolder.filePrefix(accountID) + "-resealed-" + device.hex.prefix(12) + ".qanchor"
    }

    /// Once a barrier's anchor landed at `generation`, the copies sealed
    /// again below it serve nobody: removed (a failure is harmless).
    public func removeResealed(below generation: UInt64) {
        guard let all = try? candidates() else { return }
        for candidate in all where candidate.path.contains("-resealed-") && candidate.header.generation < generation {
            try? CloudIO.remove(candidate.path)
        }
    }
}
