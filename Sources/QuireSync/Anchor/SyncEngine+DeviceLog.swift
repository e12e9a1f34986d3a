import QuireCore
import QuireStore

/// The device log's copies in the cloud folder (`CloudDeviceLog`): read at
/// start-up, before every anchor check and every half minute; this
/// device's own copy written whenever its log holds something the copy
/// does not.
extension SyncEngine {
    static let deviceLogIntervalMilliseconds: UInt64 = 30_000

    /// Applies the roster statements the folder's copies hold and this
    /// device lacks (checked as a sibling's would be), then writes its own
    /// copy. A folder that cannot be read is the anchor check's to report.
    func exchangeDeviceLog(nowMs: UInt64) {
        deviceLogDueMs = nowMs + Self.deviceLogIntervalMilliseconds
        guard let cloud = deps.cloud, backupKeyIsReal else { return }
        do {
            let (rows, unusable) = try cloud.deviceLogs(key: backupKey)
            // Said in the status too: a copy altered in the folder may be a
            // revoked device hiding its revocation.
            deviceLogWarnings = unusable.map { "a copy of the device log was not used (altered in the folder, or not written by quire?): \($0)" }
            for warning in deviceLogWarnings { noteOnce("cloud folder: " + warning) }
            // Only what this device does not hold as it is: no write at all
            // (and nothing woken) when the copies hold nothing new.
            let held = try store.rows(.devices, from: [], to: nil)
            var heldByKey: [RowKey: Row] = [:]
            for row in held { heldByKey[row.key] = row }
            let certified = certifiedRows(rows.filter { heldByKey[$0.key] != $0 && RowLimits.check($0) == nil })
            if !certified.isEmpty {
                let (applied, _) = try store.apply(certified)
                if applied > 0 {
                    note("cloud folder: learned \(applied) roster statement\(applied == 1 ? "" : "s") from the copies of the device log")
                    invalidateDigest()
                    markDirty(nowMs: nowMs)
                    lastSeq = (try? store.changeSequence()) ?? lastSeq
                    try reloadRoster()
                }
            }
            try cloud.writeDeviceLog(certified.isEmpty ? held : try store.rows(.devices, from: [], to: nil), device: me.deviceID, key: backupKey)
            let mine = cloud.deviceLogPath(of: me.deviceID)
            deviceLogWarnings.removeAll { $0.contains(mine) }     // written again just now
        } catch let error as AnchorError {
            if case .unreadable = error { return }
            noteOnce("cloud folder: the device log was not exchanged: \(error)")
        } catch {
            report("device log", error)
        }
    }
}
