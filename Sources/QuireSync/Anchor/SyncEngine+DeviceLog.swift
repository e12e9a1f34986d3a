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
            for problem in unusable { noteOnce("cloud folder: a copy of the device log was not used: \(problem)") }
            let certified = certifiedRows(rows.filter { RowLimits.check($0) == nil })
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
            try cloud.writeDeviceLog(try store.rows(.devices, from: [], to: nil), device: me.deviceID, key: backupKey)
        } catch let error as AnchorError {
            if case .unreadable = error { return }
            noteOnce("cloud folder: the device log was not exchanged: \(error)")
        } catch {
            report("device log", error)
        }
    }
}
