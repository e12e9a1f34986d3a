import Foundation
import XCTest

/// A backup is not encrypted (every note in clear, the device's private
/// keys, the account's backup key), so `quire backup --to` and `quire repair
/// --backup-to` refuse a file in the cloud folder, which a file-sync service
/// uploads, or in a quire mount, which syncs it to every device; however
/// the path is written.
final class BackupTargetEndToEndTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func testABackupIntoTheCloudFolderIsRefusedHoweverThePathIsWritten() throws {
        let real = dir + "/real", cloud = real + "/cloud", home = dir + "/a"
        try FileManager.default.createDirectory(atPath: cloud + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/cloud-link", withDestinationPath: cloud)
        try FileManager.default.createSymbolicLink(atPath: dir + "/real-link", withDestinationPath: real)
        // The prefs name the cloud folder through a symlink.
        try quireOK(["init", "--name", "a", "--relay", "local:\(dir)/relay", "--cloud", dir + "/cloud-link"], home: home)
        try quireOK(["put", "notebook", "secrets"], home: home, stdin: Array("my bank PIN is 4711\n".utf8))

        for target in [cloud + "/a.qbackup", dir + "/cloud-link/b.qbackup", dir + "/real-link/cloud/sub/c.qbackup",
                       cloud + "/sub/../d.qbackup", dir + "/real-link/cloud/sub/../../cloud/e.qbackup"] {
            let refused = try quire(["backup", "--to", target], home: home)
            XCTAssertEqual(refused.status, 1, "\(target): \(refused.stdout)")
            XCTAssertTrue(refused.stderr.contains("cloud folder") && refused.stderr.contains("not encrypted"), "\(target): \(refused.stderr)")
        }
        let relative = shell("cd '\(cloud)/sub' && '\(QuireBinary.path)' --home '\(home)' backup --to ../f.qbackup")
        XCTAssertEqual(relative.status, 1, relative.output)
        XCTAssertTrue(relative.output.contains("cloud folder"), relative.output)
        let repair = try quire(["repair", "--leave", "--backup-to", dir + "/cloud-link/g.qbackup"], home: home)
        XCTAssertEqual(repair.status, 1, repair.stdout)
        XCTAssertTrue(repair.stderr.contains("nothing repaired") && repair.stderr.contains("cloud folder"), repair.stderr)
        for name in try FileManager.default.subpathsOfDirectory(atPath: cloud) {
            XCTAssertFalse(name.contains("qbackup"), "written into the cloud folder: \(name)")
            let bytes = FileManager.default.contents(atPath: cloud + "/" + name) ?? Data()
            XCTAssertNil(bytes.range(of: Data("bank PIN".utf8)), "a note in clear in the cloud folder: \(name)")
        }

        // Beside the cloud folder, through the same symlinks: a backup as before.
        let beside = try quireOK(["backup", "--to", dir + "/real-link/a.qbackup"], home: home).stdout
        XCTAssertTrue(beside.contains("backed up device 'a'"), beside)
        XCTAssertTrue(try Data(contentsOf: URL(fileURLWithPath: real + "/a.qbackup")).count > 0)
    }

    func testABackupIntoAQuireMountIsRefused() throws {
        let device = try MountedDevice()
        defer { device.close() }
        for target in [device.path("notebook/a.qbackup"), device.directory + "/mnt/notebook/../notebook/b.qbackup"] {
            let refused = try quire(["backup", "--to", target], home: device.home)
            XCTAssertEqual(refused.status, 1, "\(target): \(refused.stdout)")
            XCTAssertTrue(refused.stderr.contains("quire mount") && refused.stderr.contains("not encrypted"), "\(target): \(refused.stderr)")
        }
        let notebook = try FileManager.default.contentsOfDirectory(atPath: device.path("notebook"))
        XCTAssertFalse(notebook.contains { $0.contains("qbackup") }, "written into the mount: \(notebook)")
        try quireOK(["backup", "--to", device.directory + "/a.qbackup"], home: device.home)
    }

    /// A backup is written only to a new name: a file already there (an
    /// older backup, anything else) is refused with what it holds and left
    /// byte for byte; --replace replaces a backup of this device only.
    func testAnOccupiedTargetIsRefusedAndOnlyABackupOfThisDeviceIsReplacedOnRequest() throws {
        let home = dir + "/a", other = dir + "/b"
        try FileManager.default.createDirectory(atPath: dir + "/cloud", withIntermediateDirectories: true)
        for (h, name) in [(home, "a"), (other, "b")] {
            try quireOK(["init", "--name", name, "--relay", "local:\(dir)/relay", "--cloud", dir + "/cloud"], home: h)
        }
        let notes = dir + "/notes.txt", folder = dir + "/folder", old = dir + "/old.qbackup", theirs = dir + "/theirs.qbackup"
        try Data("my only copy\n".utf8).write(to: URL(fileURLWithPath: notes))
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try quireOK(["backup", "--to", old], home: home)
        try quireOK(["backup", "--to", theirs], home: other)
        let before = try [notes, old, theirs].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }

        for (args, words) in [(["backup", "--to", notes], "not a quire backup"), (["backup", "--to", notes, "--replace"], "not a quire backup"),
                              (["backup", "--to", folder], "is a folder"), (["backup", "--to", old], "--replace"),
                              (["backup", "--to", theirs, "--replace"], "another device"),
                              (["repair", "--leave", "--backup-to", old], "--replace"),
                              (["repair", "--leave", "--backup-to", notes, "--replace"], "not a quire backup")] {
            let refused = try quire(args, home: home)
            XCTAssertEqual(refused.status, 1, "\(args): \(refused.stdout)")
            XCTAssertTrue(refused.stderr.contains(words), "\(args): \(refused.stderr)")
        }
        XCTAssertEqual(try [notes, old, theirs].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }, before, "a refused target was changed")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), [])

        try quireOK(["put", "notebook", "later"], home: home, stdin: Array("written after the first backup\n".utf8))
        let replaced = try quireOK(["backup", "--to", old, "--replace"], home: home).stdout
        XCTAssertTrue(replaced.contains("backed up device 'a'"), replaced)
        XCTAssertNotEqual(try Data(contentsOf: URL(fileURLWithPath: old)), before[1])
        try quireOK(["repair", "--leave", "--backup-to", old, "--replace"], home: home)
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: dir).contains { $0.contains(".tmp-") })
    }
}
