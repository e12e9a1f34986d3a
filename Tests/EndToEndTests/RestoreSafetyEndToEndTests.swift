import Foundation
import XCTest

/// `quire restore` writes and checks everything new before it moves
/// anything, keeps where the device lives (cloud folder, relay), refuses a
/// damaged backup, and a restore killed during its switch is finished by
/// running it again, naming what it sets aside. Real processes, real files.
final class RestoreSafetyEndToEndTests: XCTestCase {
    var dir = ""

    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() {
        _ = shell("mountpoint -q '\(dir)/small' && umount '\(dir)/small'")
        try? FileManager.default.removeItem(atPath: dir)
    }

    func home(_ name: String) -> String { dir + "/" + name }

    func entries(_ path: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }

    /// A disk too full for the backup's replica: the restore fails before
    /// the switch, says nothing was changed, and that is true: the device
    /// opens and reads as before, with no marker and no staging folder left.
    func testARestoreOnAFullDiskLeavesTheDeviceAsItWas() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        // Text that does not deflate: the replica is as large as the notes.
        var state: UInt64 = 7
        for i in 0..<60 {
            let text = (0..<800).map { _ -> String in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return String(state >> 20, radix: 36)
            }.joined(separator: " ") + "\n"
            try quireOK(["put", "notebook", "big\(i)"], home: a, stdin: Array(text.utf8))
        }
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        try FileManager.default.createDirectory(atPath: dir + "/small", withIntermediateDirectories: false)
        let backupSize = try FileManager.default.attributesOfItem(atPath: backup)[.size] as? Int ?? 0
        let deviceSize = Int(shell("du -sk '\(a)' | cut -f1").output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        // Room for the device as it is, not for the backup's replica beside it.
        let mounted = shell("mount -t tmpfs -o size=\(deviceSize + backupSize / 1024 / 3)k tmpfs '\(dir)/small'")
        try XCTSkipIf(mounted.status != 0, "cannot mount a small tmpfs here: \(mounted.output)")
        let h = dir + "/small/h"
        XCTAssertEqual(shell("cp -a '\(a)' '\(h)'").status, 0)
        try quireOK(["put", "notebook", "mine"], home: h, stdin: Array("still here\n".utf8))
        let failed = try quire(["restore", "--from", backup], home: h)
        XCTAssertEqual(failed.status, 1, failed.stdout)
        XCTAssertTrue(failed.stderr.contains("nothing restored") && failed.stderr.contains("nothing was changed"), failed.stderr)
        XCTAssertEqual(try quireOK(["get", "notebook", "mine"], home: h).stdout, "still here\n")
        try quireOK(["status"], home: h)
        try quireOK(["config"], home: h)
        XCTAssertFalse(FileManager.default.fileExists(atPath: h + "/restore-in-progress"))
        XCTAssertEqual(entries(h).filter { $0.hasPrefix(".restore-") || $0.hasPrefix("before-restore-") }, [], "nothing staged or moved is left")
    }

    /// A backup with a damaged note body is refused before anything is
    /// replaced, naming the note; with --force it is restored, and 'get'
    /// says the body is damaged, not offloaded.
    func testADamagedBackupIsRefusedNamingTheNoteAndGetSaysDamaged() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["put", "notebook", "victim"], home: a, stdin: Array("this body is unique text alpha bravo charlie\n".utf8))
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: backup))
        let needle = Data("unique text alpha".utf8)
        let at = try XCTUnwrap(bytes.range(of: needle), "the body is in the backup in clear")
        bytes[at.lowerBound] = UInt8(ascii: "X")
        try bytes.write(to: URL(fileURLWithPath: backup))
        try quireOK(["put", "notebook", "after"], home: a, stdin: Array("written after the backup\n".utf8))
        let refused = try quire(["restore", "--from", backup], home: a)
        XCTAssertEqual(refused.status, 1, refused.stdout)
        XCTAssertTrue(refused.stderr.contains("damaged") && refused.stderr.contains("'victim'"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("nothing was changed"), refused.stderr)
        XCTAssertEqual(try quireOK(["get", "notebook", "victim"], home: a).stdout, "this body is unique text alpha bravo charlie\n")
        XCTAssertEqual(try quireOK(["get", "notebook", "after"], home: a).stdout, "written after the backup\n")
        XCTAssertEqual(entries(a).filter { $0.hasPrefix(".restore-") || $0.hasPrefix("before-restore-") }, [])
        XCTAssertTrue(try quireOK(["restore", "--help"]).stdout.contains("--force"))
        let forced = try quireOK(["restore", "--from", backup, "--force"], home: a).stdout
        XCTAssertTrue(forced.contains("'victim'") && forced.contains("damaged"), forced)
        let get = try quire(["get", "notebook", "victim"], home: a)
        XCTAssertEqual(get.status, 1)
        XCTAssertTrue(get.stderr.contains("damaged") && !get.stderr.contains("offloaded"), get.stderr)
    }

    /// The fleet moved its cloud folder after the backup: the restore keeps
    /// the device's current one (where the anchor that catches this very
    /// rollback lives), and says the backup's differs.
    func testARestoreKeepsThisDevicesCloudFolderAndSaysSo() throws {
        let a = home("a")
        let old = dir + "/cloud-old", new = dir + "/cloud-new"
        for folder in [old, new] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false) }
        try quireOK(["init", "--name", "a", "--cloud", old, "--relay", "local:" + dir + "/relay"], home: a)
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        try quireOK(["config", "cloud", new], home: a)
        let dry = try quireOK(["restore", "--from", backup, "--dry-run"], home: a).stdout
        XCTAssertTrue(dry.contains("keep this device's cloud folder \(new) (the backup's is \(old))"), dry)
        let restored = try quireOK(["restore", "--from", backup], home: a).stdout
        XCTAssertTrue(restored.contains("kept this device's cloud folder \(new), not the backup's \(old)"), restored)
        let config = try quireOK(["config", "--json"], home: a).stdout
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any])
        XCTAssertEqual(object["cloud"] as? String, new, config)
        XCTAssertEqual(object["relay"] as? String, "local:" + dir + "/relay", config)
    }

    /// Killed during its switch (the old replica moved, its WAL not yet):
    /// every command, mount and config included, says how to finish; the
    /// rerun names the write no other device received, as an uninterrupted
    /// restore does, and it reads from the one folder it names.
    func testARestoreKilledDuringItsSwitchIsFinishedNamingWhatItSetsAside() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["put", "notebook", "old"], home: a, stdin: Array("shared\n".utf8))
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        try quireOK(["put", "notebook", "unshared"], home: a, stdin: Array("only copy of these words\n".utf8))
        let dry = try quireOK(["restore", "--from", backup, "--dry-run"], home: a).stdout
        XCTAssertTrue(dry.contains("notebook 'unshared'"), dry)
        // One rename per staged file, one for the marker, then the switch's:
        // the second of those is the kill.
        let writes = dry.split(separator: "\n").filter { $0.hasPrefix("  write ") }.count
        let killed = shell("strace -f -o /dev/null -e trace=rename -e inject=rename:signal=SIGKILL:when=\(writes + 3) "
                           + "'\(QuireBinary.path)' --home '\(a)' restore --from '\(backup)' >/dev/null 2>&1")
        try XCTSkipIf(killed.output.contains("strace: not found") || killed.status == 127, "no strace here")
        XCTAssertTrue(FileManager.default.fileExists(atPath: a + "/restore-in-progress"), "the restore was killed during its switch")
        for args in [["status"], ["config"], ["mount", dir + "/mnt"]] {
            let refused = try quire(args, home: a)
            XCTAssertEqual(refused.status, 1, args.joined(separator: " "))
            XCTAssertTrue(refused.stderr.contains("a restore into \(a) was interrupted"), refused.stderr)
            XCTAssertTrue(refused.stderr.contains("run 'quire restore --from \(backup)' again"), refused.stderr)
        }
        let rerun = try quireOK(["restore", "--from", backup], home: a).stdout
        XCTAssertTrue(rerun.contains("notebook 'unshared'"), rerun)
        let folders = entries(a).filter { $0.hasPrefix("before-restore-") }
        XCTAssertEqual(folders.count, 1, "one folder holds the device as it was: \(folders)")
        let aside = a + "/" + (folders.first ?? "")
        XCTAssertTrue(rerun.contains(aside), rerun)
        XCTAssertEqual(try quireOK(["get", "notebook", "unshared"], home: aside).stdout, "only copy of these words\n")
        XCTAssertEqual(try quireOK(["get", "notebook", "old"], home: a).stdout, "shared\n")
        XCTAssertEqual(try quire(["get", "notebook", "unshared"], home: a).status, 1, "the restored device is the backup's")
        XCTAssertEqual(entries(a).filter { $0.hasPrefix(".restore-") }, [])
    }

    /// Killed right after its marker, before the folder for the old files
    /// was made: the message says the files are still in place.
    func testARestoreKilledBeforeItsFolderWasMadeSaysTheFilesAreStillInPlace() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["put", "notebook", "kept"], home: a, stdin: Array("kept words\n".utf8))
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        // The first rename after the staged files is the marker's; a kill at
        // the next mkdir (the folder for the old files) lands just after it.
        let killed = shell("strace -f -o /dev/null -e trace=mkdir -e inject=mkdir:signal=SIGKILL:when=3 "
                           + "'\(QuireBinary.path)' --home '\(a)' restore --from '\(backup)' >/dev/null 2>&1")
        try XCTSkipIf(killed.status == 127, "no strace here")
        XCTAssertTrue(FileManager.default.fileExists(atPath: a + "/restore-in-progress"))
        let refused = try quire(["status"], home: a)
        XCTAssertTrue(refused.stderr.contains("the files from before it are still in \(a)/"), refused.stderr)
        for folder in entries(a) where folder.hasPrefix("before-restore-") {
            XCTAssertFalse(refused.stderr.contains(folder), "names \(folder): \(refused.stderr)")
        }
        try quireOK(["restore", "--from", backup], home: a)
        XCTAssertEqual(try quireOK(["get", "notebook", "kept"], home: a).stdout, "kept words\n")
    }

    /// A backup or restore that dies leaves its scratch copy in the device
    /// directory (never in /tmp), and the next start removes it.
    func testScratchCopiesOfDeadProcessesAreRemovedAndNoneGoToTmp() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["put", "notebook", "n"], home: a, stdin: Array("words\n".utf8))
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        // What a killed backup and a killed restore leave (a pid no process has).
        let dead = 4_000_000 + Int.random(in: 0..<100_000)
        _ = FileManager.default.createFile(atPath: a + "/.backup-\(dead)-1.sqlite", contents: Data("partial".utf8))
        try FileManager.default.createDirectory(atPath: a + "/.restore-\(dead)-2", withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: a + "/.restore-\(dead)-2/replica.sqlite", contents: Data("partial".utf8))
        let live = a + "/.restore-\(getpid())-3"
        try FileManager.default.createDirectory(atPath: live, withIntermediateDirectories: false)
        let tmpBefore = Set(entries(NSTemporaryDirectory()).filter { $0.hasPrefix("quire-restore-check") })
        try quireOK(["status"], home: a)
        XCTAssertEqual(entries(a).filter { $0.hasPrefix(".backup-") || $0.hasPrefix(".restore-") }, [".restore-\(getpid())-3"],
                       "a live process's folder stays")
        try quireOK(["restore", "--from", backup, "--dry-run"], home: a)
        try quireOK(["restore", "--from", backup], home: a)
        XCTAssertEqual(Set(entries(NSTemporaryDirectory()).filter { $0.hasPrefix("quire-restore-check") }), tmpBefore, "nothing in /tmp")
        XCTAssertEqual(entries(a).filter { $0.hasPrefix(".backup-") || ($0.hasPrefix(".restore-") && $0 != ".restore-\(getpid())-3") }, [])
    }

    /// Ctrl-C (SIGINT) during a backup or a restore leaves no scratch copy
    /// of the replica behind, without waiting for a later start; a restore
    /// interrupted after its marker is finished by running it again.
    func testCtrlCDuringBackupOrRestoreLeavesNoScratchCopy() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["debug", "burst", "--count", "3000", "--size", "4000"], home: a)
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        var caught = (backup: 0, restore: 0)
        for attempt in 0..<16 {
            let delay = String(format: "%.3f", 0.02 + Double(attempt % 8) * 0.02)
            let run = shell("timeout -s INT \(delay) '\(QuireBinary.path)' --home '\(a)' backup --to '\(dir)/b.qbackup' --replace >/dev/null 2>&1; echo $?")
            if run.output.trimmingCharacters(in: .whitespacesAndNewlines) != "0" { caught.backup += 1 }
            XCTAssertEqual(entries(a).filter { $0.hasPrefix(".backup-") }, [], "after SIGINT at \(delay) s")
        }
        for attempt in 0..<16 {
            let delay = String(format: "%.3f", 0.02 + Double(attempt % 8) * 0.03)
            let run = shell("timeout -s INT \(delay) '\(QuireBinary.path)' --home '\(a)' restore --from '\(backup)' >/dev/null 2>&1; echo $?")
            if run.output.trimmingCharacters(in: .whitespacesAndNewlines) != "0" { caught.restore += 1 }
            if FileManager.default.fileExists(atPath: a + "/restore-in-progress") {
                try quireOK(["restore", "--from", backup], home: a)
            }
            XCTAssertEqual(entries(a).filter { $0.hasPrefix(".restore-") }, [], "after SIGINT at \(delay) s")
            try quireOK(["status"], home: a)
        }
        XCTAssertGreaterThan(caught.backup, 0, "no backup was interrupted")
        XCTAssertGreaterThan(caught.restore, 0, "no restore was interrupted")
    }

    /// The folder a restore moves the device's old files into is set aside
    /// as repair's is: it reads with `--home FOLDER get|ls`, never opens as
    /// the device (a second live copy of its actor), and keeps no private
    /// keys when the restored device holds the same ones.
    func testTheFolderARestoreSetsAsideHoldsNoKeysAndNeverActsAsTheDevice() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        try quireOK(["put", "notebook", "unshared"], home: a, stdin: Array("only copy of these words\n".utf8))
        let restored = try quireOK(["restore", "--from", backup, "--json"], home: a).stdout
        let object = try XCTUnwrap(try jsonObject(restored) as? [String: Any], restored)
        let aside = try XCTUnwrap(object["movedAside"] as? String, restored)
        XCTAssertEqual(object["oldKeysKept"] as? [String], [], restored)
        XCTAssertFalse(FileManager.default.fileExists(atPath: aside + "/keys"), "the restored device holds the same keys")
        XCTAssertTrue(FileManager.default.fileExists(atPath: aside + "/set-aside"))
        XCTAssertEqual(try quireOK(["get", "notebook", "unshared"], home: aside).stdout, "only copy of these words\n")
        XCTAssertTrue(try quireOK(["ls", "notebook"], home: aside).stdout.contains("unshared"))
        for use in [["put", "notebook", "Later"], ["sync", "--once"], ["status"]] {
            let r = try quire(use, home: aside, stdin: Array("x\n".utf8))
            XCTAssertEqual(r.status, 1, "\(use): \(r.stdout)")
            XCTAssertTrue(r.stderr.contains("set aside") && r.stderr.contains("never syncs"), "\(use): \(r.stderr)")
        }
        try quireOK(["ls", "notebook"], home: a)
    }

    /// An interrupted restore rerun with another --from is refused, naming
    /// both backups, and changes nothing; the first --from finishes it.
    func testARerunWithAnotherBackupIsRefusedAndChangesNothing() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["put", "notebook", "first"], home: a, stdin: Array("in the first backup\n".utf8))
        let first = dir + "/first.qbackup", second = dir + "/second.qbackup"
        try quireOK(["backup", "--to", first], home: a)
        try quireOK(["put", "notebook", "second"], home: a, stdin: Array("in the second backup\n".utf8))
        try quireOK(["backup", "--to", second], home: a)
        let dry = try quireOK(["restore", "--from", first, "--dry-run"], home: a).stdout
        let writes = dry.split(separator: "\n").filter { $0.hasPrefix("  write ") }.count
        let killed = shell("strace -f -o /dev/null -e trace=rename -e inject=rename:signal=SIGKILL:when=\(writes + 3) "
                           + "'\(QuireBinary.path)' --home '\(a)' restore --from '\(first)' >/dev/null 2>&1")
        try XCTSkipIf(killed.status == 127, "no strace here")
        XCTAssertTrue(FileManager.default.fileExists(atPath: a + "/restore-in-progress"), "the restore was killed during its switch")
        func snapshot() -> [String: Data] {
            var files: [String: Data] = [:]
            // sync.lock holds the pid of the last command that held the lock, nothing of the device.
            for path in (FileManager.default.subpaths(atPath: a) ?? []) where path != "sync.lock" {
                files[path] = FileManager.default.contents(atPath: a + "/" + path)
            }
            return files
        }
        let before = snapshot()
        for args in [["restore", "--from", second], ["restore", "--from", second, "--dry-run"]] {
            let refused = try quire(args, home: a)
            XCTAssertEqual(refused.status, 1, refused.stdout)
            XCTAssertTrue(refused.stderr.contains(first) && refused.stderr.contains(second) && refused.stderr.contains("nothing was changed"), refused.stderr)
            XCTAssertTrue(refused.stderr.contains("'quire restore --from \(first)'"), refused.stderr)
        }
        XCTAssertEqual(snapshot(), before, "a refused rerun changed the device directory")
        try quireOK(["restore", "--from", first], home: a)
        XCTAssertEqual(try quireOK(["get", "notebook", "first"], home: a).stdout, "in the first backup\n")
        XCTAssertEqual(try quire(["get", "notebook", "second"], home: a).status, 1, "the first backup was put back")
        try quireOK(["restore", "--from", second], home: a)
        XCTAssertEqual(try quireOK(["get", "notebook", "second"], home: a).stdout, "in the second backup\n")
    }
}
