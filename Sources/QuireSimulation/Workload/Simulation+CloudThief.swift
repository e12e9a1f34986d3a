import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

/// A thief who also reaches the cloud folder (its file-sync service still
/// lets the lost device in): after the fleet settled, it cannot read the
/// anchor the fleet stands on, and the anchor it forges above the fleet's
/// generation, under every key it holds, with a commit record to match,
/// moves no device of the roster: none reaches its generation, none takes
/// its note, though each restarts (the start-up check reads the folder).
extension Simulation {
    func thievesForgeAnchors(_ stolen: [(thief: SimDevice, key: RowKey, title: String)]) throws -> [String] {
        let cloud = fleet.cloud.folder
        let recordBefore = FileManager.default.contents(atPath: cloud.commitRecordPath)
        var forgedPaths: [String] = []
        var problems: [String] = []
        defer {
            // The forgery goes, and the fleet's record comes back, so what the run checks after this is untouched.
            for path in forgedPaths { unlink(path) }
            if let recordBefore { _ = FileManager.default.createFile(atPath: cloud.commitRecordPath, contents: recordBefore) }
        }
        let top = fleet.members.map { (try? $0.home.prefs.load().generation) ?? 0 }.max() ?? 0
        let forgedGeneration = top + 5
        for (n, (thief, _, title)) in stolen.enumerated() {
            guard let store = thief.store else { continue }
            // Everything it holds: the original key, the keys sealed to it before its revocation.
            let own = try AnchorKeys.of(identity: thief.identity, store: store, ring: try thief.rotationKeys())
            let ring = own.schedule.open(for: thief.id, box: thief.identity.deviceBox, sealedRing: nil, into: own.ring).ring
            for member in fleet.members where member.isPowered {
                let keys = try AnchorKeys.of(identity: member.identity, store: member.store!, ring: try member.rotationKeys())
                guard let newest = try? cloud.newest(keys: keys) else { continue }
                if ring.key(for: newest.0.keySet, original: thief.identity.backupKey) != nil {
                    problems.append("\(thief.name), revoked, can read the anchor at generation \(newest.0.generation) that \(member.name) accepts")
                }
            }
            let rows = try store.rows(.notebook, from: [], to: nil)
            let snapshot = AnchorSnapshot(generation: forgedGeneration, rows: rows)
            let forged = try AnchorKeys(original: thief.identity.backupKey, ring: ring, schedule: BackupKeySchedule(), accountKey: thief.identity.account.publicKey)
            for (i, bytes) in [try AnchorFile.sealFormat1(snapshot, accountID: cloud.accountID, backupKey: thief.identity.backupKey, at: thief.clock.now()),
                               try sealUnder(ring.ids, snapshot, keys: forged, at: thief.clock.now())].enumerated() {
                let path = cloud.anchorPath.replacingOccurrences(of: ".qanchor", with: " (thief \(n) \(i)).qanchor")
                guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { continue }
                forgedPaths.append(path)
            }
            var plain: [UInt8] = []
            for shift in stride(from: 56, through: 0, by: -8) { plain.append(UInt8(truncatingIfNeeded: forgedGeneration >> UInt64(shift))) }
            let record = try AEAD.seal(plain, associatedData: Array("quire.commit-record".utf8) + cloud.accountID, with: thief.identity.backupKey)
            _ = FileManager.default.createFile(atPath: cloud.commitRecordPath, contents: Data(record))
            fleet.trace.record(thief.name, "forges an anchor at generation \(forgedGeneration) holding '\(title)' (under its old keys) and a commit record to match")
        }
        guard !forgedPaths.isEmpty else { return problems }
        for member in fleet.members where member.isOnline {
            fleet.goOffline(member)
            try fleet.goOnline(member)
        }
        fleet.run(ms: 30_000)
        for member in fleet.members {
            let generation = (try? member.home.prefs.load().generation) ?? 0
            if generation >= forgedGeneration { problems.append("\(member.name) moved to generation \(generation), the thieves' forged anchor's") }
            for (thief, key, title) in stolen {
                if let row = try member.store?.row(.notebook, key), RowObservation.isLive(row) {
                    problems.append("\(member.name) took '\(title)' from the anchor \(thief.name) forged")
                }
            }
        }
        return problems
    }

    /// An anchor under key set `set` (the thief's own keys; no keys sealed to the account).
    private func sealUnder(_ set: [DeviceID], _ snapshot: AnchorSnapshot, keys: AnchorKeys, at: Timestamp) throws -> [UInt8] {
        guard let key = keys.ring.key(for: set, original: keys.original) else { throw SimulationError("the thief's keys make no key") }
        let header = AnchorHeader(generation: snapshot.generation, accountID: fleet.cloud.folder.accountID, writtenAt: at, keySet: set).encoded()
        return header + (try AEAD.seal(snapshot.encoded(), associatedData: header, with: key))
    }
}
