import Foundation
import XCTest

/// Deleted stays deleted, end to end: three devices with a shared cloud
/// folder, a barrier that collects a deleted plan everywhere, then a device
/// put back from a backup taken before the delete. It notices at start-up
/// (no sibling online), recovers from the anchor, and the plan never comes
/// back on any device.
final class RestoreEndToEndTests: CloudDrillTestCase {
    func plans(_ name: String) throws -> String { try quireOK(["ls", "plans"], home: home(name)).stdout }

    func testARestoredDeviceNeverBringsBackAPlanTheFleetCollected() throws {
        let made = try quireOK(["init", "--name", "phone", "--relay", relay, "--cloud", cloud, "--kdf", "interactive"], home: home("phone")).stdout
        let code = try XCTUnwrap(made.split(separator: "\n").first { $0.hasPrefix("recovery code: ") }).dropFirst("recovery code: ".count)
        for n in ["tablet", "home"] {
            try quireOK(["invite", "--out", dir + "/invite-" + n, "--kdf", "interactive"], home: home("phone"), env: env)
            try quireOK(["init", "--join", dir + "/invite-" + n, "--name", n, "--relay", relay, "--cloud", cloud], home: home(n), env: env)
        }
        try quireOK(["put", "plans", "Keep me"], home: home("phone"))
        try quireOK(["put", "plans", "Delete me"], home: home("phone"))
        var daemons = try ["phone", "tablet", "home"].map { try SyncDaemon(home: home($0), relay: relay, env: drill) }
        XCTAssertTrue(try waitForEqualDigests(["phone", "tablet", "home"].map(home), timeout: 30))
        daemons.forEach { $0.stop() }
        XCTAssertTrue(try plans("tablet").contains("Delete me"))
        let backup = dir + "/tablet.qbackup"
        try quireOK(["backup", "--to", backup], home: home("tablet"))

        try quireOK(["rm", "plans", "Delete me"], home: home("phone"))
        daemons = try ["phone", "tablet", "home"].map { try SyncDaemon(home: home($0), relay: relay, env: drill) }
        let collected = eventually(40) {
            (try? ["phone", "tablet", "home"].allSatisfy { try self.generation($0) == 1 }) ?? false
        }
        daemons.forEach { $0.stop() }
        XCTAssertTrue(collected, "a barrier committed: " + daemons.map(\.output).joined(separator: "\n"))
        let anchors = try FileManager.default.contentsOfDirectory(atPath: cloud).filter { $0.hasPrefix("quire-anchor-") }
        XCTAssertEqual(anchors.count, 1, "\(anchors)")
        for n in ["phone", "tablet", "home"] {
            let status = try jsonObject(try quireOK(["status", "--json"], home: home(n)).stdout) as! [String: Any]
            let plansCounts = (status["namespaces"] as? [String: Any])?["plans"] as? [String: Any]
            XCTAssertEqual(plansCounts?["tombstones"] as? Int, 0, "tombstones collected on \(n)")
        }

        // The tablet is put back from its old backup, the plan live in it at
        // generation 0. The restore itself checks the anchor it can read, so
        // no command ever shows (or lets anyone edit) the collected plan.
        let restored = try quireOK(["restore", "--from", backup], home: home("tablet")).stdout
        XCTAssertTrue(restored.contains("the cloud anchor is ahead of the backup"), restored)
        XCTAssertTrue(restored.contains("at generation 1"), restored)
        XCTAssertEqual(try generation("tablet"), 1)
        XCTAssertFalse(try plans("tablet").contains("Delete me"), "the collected plan is gone before any command shows it")
        XCTAssertTrue(try plans("tablet").contains("Keep me"))
        XCTAssertTrue(try quireOK(["status"], home: home("tablet")).stdout.contains("recovered from the cloud anchor"))
        // No sibling online: the sync's start-up check finds nothing more to do.
        let alone = try SyncDaemon(home: home("tablet"), relay: relay, env: drill)
        XCTAssertTrue(eventually(5) { ((try? quireOK(["status"], home: self.home("tablet")).stdout) ?? "").contains("sync: running") }, alone.output)
        alone.stop()
        XCTAssertEqual(try generation("tablet"), 1)
        XCTAssertFalse(try plans("tablet").contains("Delete me"))
        // With everyone online, it never comes back anywhere.
        daemons = try ["phone", "tablet", "home"].map { try SyncDaemon(home: home($0), relay: relay, env: drill) }
        XCTAssertTrue(try waitForEqualDigests(["phone", "tablet", "home"].map(home), timeout: 30))
        daemons.forEach { $0.stop() }
        for n in ["phone", "tablet", "home"] { XCTAssertFalse(try plans(n).contains("Delete me"), "on \(n)") }

        // Put back again while the cloud folder cannot be read: no line may
        // claim a recovery this state has not had (the last runs' said one).
        try FileManager.default.moveItem(atPath: cloud, toPath: cloud + "-away")
        try quireOK(["restore", "--from", backup], home: home("tablet"))
        XCTAssertEqual(try generation("tablet"), 0)
        let unchecked = try quireOK(["status"], home: home("tablet")).stdout
        XCTAssertFalse(unchecked.contains("recovered from the cloud anchor"), unchecked)
        // The folder back: the next command catches up before it lists anything.
        try FileManager.default.moveItem(atPath: cloud + "-away", toPath: cloud)
        XCTAssertFalse(try plans("tablet").contains("Delete me"))
        XCTAssertEqual(try generation("tablet"), 1)

        // Every device lost: the account is rebuilt from the cloud folder with the recovery code.
        let wrong = try quire(["init", "--from-cloud", cloud, "--name", "rebuilt"], home: home("rebuilt"),
                              env: ["QUIRE_RECOVERY_CODE": "00000-00000-00000-00000-00000-00000"])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stderr.contains("the recovery code is wrong"), wrong.stderr)
        XCTAssertFalse(wrong.stderr.contains("anchor does not open"), "nothing is altered: " + wrong.stderr)
        let rebuilt = try quireOK(["init", "--from-cloud", cloud, "--name", "rebuilt"], home: home("rebuilt"),
                                  env: ["QUIRE_RECOVERY_CODE": String(code).lowercased()]).stdout
        XCTAssertTrue(rebuilt.contains("generation 1"), rebuilt)
        XCTAssertTrue(try plans("rebuilt").contains("Keep me"))
        XCTAssertFalse(try plans("rebuilt").contains("Delete me"))
        XCTAssertEqual(try generation("rebuilt"), 1)
        let account = { (n: String) throws -> String in
            (try jsonObject(try quireOK(["status", "--json"], home: self.home(n)).stdout) as! [String: Any])["account"] as! String
        }
        XCTAssertEqual(try account("rebuilt"), try account("phone"), "a device of the same account")
    }

    /// Phone and tablet with a cloud folder, a plan deleted and collected
    /// (generation 1), and the tablet's backup from before the delete.
    func twoDevicesWithACollectedPlan() throws -> String {
        try quireOK(["init", "--name", "phone", "--relay", relay, "--cloud", cloud, "--kdf", "interactive"], home: home("phone"))
        try quireOK(["invite", "--out", dir + "/invite-tablet", "--kdf", "interactive"], home: home("phone"), env: env)
        try quireOK(["init", "--join", dir + "/invite-tablet", "--name", "tablet", "--relay", relay, "--cloud", cloud], home: home("tablet"), env: env)
        try quireOK(["put", "plans", "Keep me"], home: home("phone"))
        try quireOK(["put", "plans", "Delete me"], home: home("phone"))
        var daemons = try ["phone", "tablet"].map { try SyncDaemon(home: home($0), relay: relay, env: drill) }
        XCTAssertTrue(try waitForEqualDigests(["phone", "tablet"].map(home), timeout: 30))
        daemons.forEach { $0.stop() }
        let backup = dir + "/tablet.qbackup"
        try quireOK(["backup", "--to", backup], home: home("tablet"))
        try quireOK(["rm", "plans", "Delete me"], home: home("phone"))
        daemons = try ["phone", "tablet"].map { try SyncDaemon(home: home($0), relay: relay, env: drill) }
        let collected = eventually(40) { (try? ["phone", "tablet"].allSatisfy { try self.generation($0) == 1 }) ?? false }
        daemons.forEach { $0.stop() }
        XCTAssertTrue(collected, daemons.map(\.output).joined(separator: "\n"))
        return backup
    }

    /// A recovery a sync run said ("recovered from the cloud anchor") is
    /// not said again once the device is put back from before it: the
    /// line must not outlive the state it speaks of.
    func testARecoveryLineOfAnEarlierRunIsNotShownAfterTheDeviceIsPutBackAgain() throws {
        let backup = try twoDevicesWithACollectedPlan()
        // Put back while the folder is away, so only the running sync can
        // recover, once a device at generation 1 is heard.
        try FileManager.default.moveItem(atPath: cloud, toPath: cloud + "-away")
        try quireOK(["restore", "--from", backup], home: home("tablet"))
        let tablet = try SyncDaemon(home: home("tablet"), relay: relay, env: drill)
        sleep(1)
        try FileManager.default.moveItem(atPath: cloud + "-away", toPath: cloud)
        let phone = try SyncDaemon(home: home("phone"), relay: relay, env: drill)
        XCTAssertTrue(eventually(30) { (try? self.generation("tablet")) == 1 }, tablet.output)
        XCTAssertTrue(eventually(10) { ((try? quireOK(["status"], home: self.home("tablet")).stdout) ?? "").contains("recovered from the cloud anchor") },
                      tablet.output)
        tablet.stop(); phone.stop()
        // Put back again, the folder away: generation 0, nothing recovered.
        try FileManager.default.moveItem(atPath: cloud, toPath: cloud + "-away")
        try quireOK(["restore", "--from", backup], home: home("tablet"))
        XCTAssertEqual(try generation("tablet"), 0)
        let status = try quireOK(["status"], home: home("tablet")).stdout
        XCTAssertFalse(status.contains("recovered from the cloud anchor"), status)
        let sync = (try jsonObject(try quireOK(["status", "--json"], home: home("tablet")).stdout) as! [String: Any])["sync"] as? [String: Any]
        XCTAssertTrue(sync?["barrier"] == nil || sync?["barrier"] is NSNull, "\(sync?["barrier"] ?? "none")")
        try FileManager.default.moveItem(atPath: cloud + "-away", toPath: cloud)
    }

    /// The anchor is there but its commit record is not (the sync service has
    /// not brought it, or it was removed): a device put back from before the
    /// barrier does not recover from an anchor no one vouches for, and says
    /// plainly, at the top of its status and in --json, that it is behind the
    /// fleet's anchor and may show what the fleet deleted; its sync says the
    /// same while it waits for a device at that generation.
    func testARestoredDeviceBehindAnAnchorWithNoCommitRecordSaysSo() throws {
        let backup = try twoDevicesWithACollectedPlan()
        let records = try FileManager.default.contentsOfDirectory(atPath: cloud).filter { $0.hasPrefix("quire-committed-") }
        XCTAssertEqual(records.count, 1)
        for r in records { try FileManager.default.removeItem(atPath: cloud + "/" + r) }

        let restored = try quireOK(["restore", "--from", backup], home: home("tablet")).stdout
        XCTAssertEqual(try generation("tablet"), 0, "no recovery from an anchor no one vouches for")
        XCTAssertTrue(restored.contains("behind the fleet's anchor"), restored)
        func says(_ what: String) throws {
            let text = try quireOK(["status"], home: home("tablet")).stdout
            let top = text.split(separator: "\n").prefix(4).joined(separator: "\n")
            XCTAssertTrue(top.contains("STUCK: behind the fleet's anchor"), what + ": " + text)
            XCTAssertTrue(top.contains("the fleet deleted may still show here"), what + ": " + text)
            let json = try jsonObject(try quireOK(["status", "--json"], home: home("tablet")).stdout) as! [String: Any]
            XCTAssertTrue((json["behindFleet"] as? String)?.contains("generation 1") ?? false, what + ": \(json["behindFleet"] ?? "none")")
        }
        try says("no sync running")
        let alone = try SyncDaemon(home: home("tablet"), relay: relay, env: drill)
        XCTAssertTrue(eventually(10) { ((try? quireOK(["status"], home: self.home("tablet")).stdout) ?? "").contains("sync: running") }, alone.output)
        try says("its sync running alone")
        // A device at generation 1 heard: it vouches for the anchor, and the plan goes.
        let phone = try SyncDaemon(home: home("phone"), relay: relay, env: drill)
        XCTAssertTrue(eventually(30) { (try? self.generation("tablet")) == 1 }, alone.output)
        alone.stop(); phone.stop()
        XCTAssertFalse(try quireOK(["ls", "plans"], home: home("tablet")).stdout.contains("Delete me"))
        let after = try jsonObject(try quireOK(["status", "--json"], home: home("tablet")).stdout) as! [String: Any]
        XCTAssertTrue(after["behindFleet"] is NSNull || after["behindFleet"] == nil, "\(after["behindFleet"] ?? "none")")
    }

    /// An anchor this device cannot recover from (here: no commit record) is
    /// checked in full once: the next commands remember that check while the
    /// anchor files are unchanged (the record is not rewritten) and still say
    /// the device is behind; a changed anchor is checked again.
    func testACheckThatLeftTheDeviceBehindIsNotRunAgainUntilTheAnchorChanges() throws {
        let backup = try twoDevicesWithACollectedPlan()
        for r in try FileManager.default.contentsOfDirectory(atPath: cloud) where r.hasPrefix("quire-committed-") {
            try FileManager.default.removeItem(atPath: cloud + "/" + r)
        }
        try quireOK(["restore", "--from", backup], home: home("tablet"))
        let record = home("tablet") + "/anchor-check.json"
        func inode() throws -> Int { try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: record)[.systemFileNumber] as? NSNumber)?.intValue) }
        let first = try inode()
        for args in [["ls", "plans"], ["status"], ["ls", "notebook"]] {
            let out = try quireOK(args, home: home("tablet")).stdout
            if args == ["status"] { XCTAssertTrue(out.contains("behind the fleet's anchor"), out) }
            XCTAssertEqual(try inode(), first, "\(args): the full check ran again on an unchanged anchor")
        }
        let json = try jsonObject(try quireOK(["status", "--json"], home: home("tablet")).stdout) as! [String: Any]
        XCTAssertTrue((json["behindFleet"] as? String)?.contains("generation 1") ?? false, "\(json["behindFleet"] ?? "none")")
        // The anchor rewritten (here: its time): checked again.
        let anchor = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: cloud).first { $0.hasPrefix("quire-anchor-") }, "no anchor")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 5)], ofItemAtPath: cloud + "/" + anchor)
        try quireOK(["ls", "plans"], home: home("tablet"))
        XCTAssertNotEqual(try inode(), first, "a changed anchor is checked again")
    }
}
