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
}
