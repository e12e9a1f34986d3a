import Foundation
import XCTest

/// Trash and earlier versions through a real `quire mount` and the `quire`
/// binary: `rm` in the mount, read it back from `.quire/trash/`, `quire
/// undelete`, and the old text of an edit in `.quire/versions/`.
final class TrashEndToEndTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    func testRemovedNoteIsReadFromTheTrashAndUndeletedIntoItsFolder() throws {
        device = try MountedDevice()
        let fm = FileManager.default
        try fm.createDirectory(atPath: device.path("notebook/Projects"), withIntermediateDirectories: false)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Projects/idea.md"), "an idea worth keeping\n").errno, 0)
        XCTAssertEqual(shell("rm '\(device.path("notebook/Projects/idea.md"))'").status, 0)
        XCTAssertFalse(fm.fileExists(atPath: device.path("notebook/Projects/idea.md")))

        XCTAssertEqual(try fm.contentsOfDirectory(atPath: device.path(".quire/trash/Projects")), ["idea.md"])
        XCTAssertEqual(try device.text(".quire/trash/Projects/idea.md"), "an idea worth keeping\n")
        // Read-only, whoever asks: the kernel refuses others by the modes
        // (EACCES), and root, whom it would let write, gets EROFS from us.
        let refusals = [EROFS, EACCES]
        XCTAssertTrue(refusals.contains(Syscall.writeFile(device.path(".quire/trash/Projects/idea.md"), "overwritten\n").errno))
        XCTAssertTrue(refusals.contains(unlink(device.path(".quire/trash/Projects/idea.md")) == 0 ? 0 : errno))
        XCTAssertTrue(refusals.contains(Syscall.rename(device.path(".quire/trash/Projects/idea.md"), device.path("notebook/idea.md"))))
        XCTAssertEqual(Syscall.status(device.path(".quire/trash/Projects/idea.md"))?.size, 22)

        let listed = try quire(["trash", "--json"], home: device.home)
        XCTAssertEqual(listed.status, 0, listed.stderr)
        let kept = try XCTUnwrap((try jsonObject(listed.stdout) as? [String: Any])?["kept"] as? [[String: Any]])
        XCTAssertEqual(kept.map { $0["path"] as? String }, [".quire/trash/Projects/idea.md"])
        XCTAssertEqual(kept.first?["why"] as? String, "deleted-here")

        // A path that is not kept: a clear error, nothing changed.
        let missing = try quire(["undelete", ".quire/trash/nothing.md"], home: device.home)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("nothing is kept at .quire/trash/nothing.md"), missing.stderr)

        // Named by its path inside the mount, as a shell in it would.
        let undeleted = try quire(["undelete", device.path(".quire/trash/Projects/idea.md")], home: device.home)
        XCTAssertEqual(undeleted.status, 0, undeleted.stderr)
        XCTAssertTrue(undeleted.stdout.contains("brought back notebook/Projects/idea.md"), undeleted.stdout)
        XCTAssertTrue(eventually(3) { (try? self.device.text("notebook/Projects/idea.md")) == "an idea worth keeping\n" },
                      "back in its folder")
        XCTAssertTrue(eventually(3) { ((try? fm.contentsOfDirectory(atPath: self.device.path(".quire/trash"))) ?? ["?"]).isEmpty })
        // A new edit that syncs: it waits in the outbox like any other.
        let status = try jsonObject(quire(["status", "--json"], home: device.home).stdout) as! [String: Any]
        XCTAssertGreaterThan(status["outboxPending"] as! Int, 0)
        XCTAssertEqual((status["kept"] as? [String: Any])?["trashFiles"] as? Int, 0)
    }

    func testAnEditThroughTheMountLeavesTheOldTextInVersions() throws {
        device = try MountedDevice()
        let fm = FileManager.default
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Plan.md"), "the first plan\n").errno, 0)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Plan.md"), "a better plan\n").errno, 0)
        let names = try fm.contentsOfDirectory(atPath: device.path(".quire/versions"))
        XCTAssertEqual(names.count, 1)
        let name = try XCTUnwrap(names.first)
        XCTAssertTrue(name.range(of: #"^Plan \d{4}-\d{2}-\d{2} \d{6}\.md$"#, options: .regularExpression) != nil, name)
        XCTAssertEqual(try device.text(".quire/versions/" + name), "the first plan\n")
        let statusText = try device.text(".quire/status")
        XCTAssertTrue(statusText.contains("versions: 1 earlier text"), statusText)

        // By its notebook path: the latest earlier text becomes the text again.
        let restored = try quire(["undelete", "notebook/Plan.md"], home: device.home)
        XCTAssertEqual(restored.status, 0, restored.stderr)
        XCTAssertTrue(eventually(3) { (try? self.device.text("notebook/Plan.md")) == "the first plan\n" })
        XCTAssertTrue(eventually(3) { ((try? fm.contentsOfDirectory(atPath: self.device.path(".quire/versions"))) ?? []).count == 2 },
                      "the text it replaced is an earlier version in turn")
        let text = try quire(["trash"], home: device.home)
        XCTAssertTrue(text.stdout.contains("edited here"), text.stdout)
        XCTAssertTrue(text.stdout.contains("kept 30 days, at most 512.0 MB"), text.stdout)
    }

    /// The commands alone (no mount): limits through `quire config`, prune,
    /// undelete by notebook path, and the errors of bad input.
    func testTheCommandsKeepPruneAndRefuseBadInput() throws {
        let home = makeTemporaryDirectory() + "/home"
        XCTAssertEqual(try quire(["init", "--name", "cli"], home: home).status, 0)
        XCTAssertEqual(try quire(["put", "notebook", "Letter"], home: home, stdin: Array("dear ann\n".utf8)).status, 0)
        XCTAssertEqual(try quire(["put", "notebook", "Letter"], home: home, stdin: Array("dear ann, hello\n".utf8)).status, 0)
        XCTAssertEqual(try quire(["rm", "notebook", "Letter"], home: home).status, 0)
        var listed = try quire(["trash"], home: home)
        XCTAssertTrue(listed.stdout.contains(".quire/trash/Letter.md  16 B"), listed.stdout)
        XCTAssertTrue(listed.stdout.contains("trash: 1 deleted file (16 B), versions: 1 earlier text (9 B)"), listed.stdout)

        let back = try quire(["undelete", "Letter.md"], home: home)
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertEqual(try quire(["get", "notebook", "Letter"], home: home).stdout, "dear ann, hello\n")
        XCTAssertEqual(try quire(["undelete", "notebook/Nothing.md"], home: home).status, 1)
        XCTAssertEqual(try quire(["undelete"], home: home).status, 2)
        XCTAssertEqual(try quire(["config", "trash-days", "soon"], home: home).status, 2)
        XCTAssertEqual(try quire(["trash", "--help"], home: home).status, 0)

        XCTAssertEqual(try quire(["config", "trash-size", "0"], home: home).status, 0)
        let config = try jsonObject(quire(["config", "--json"], home: home).stdout) as! [String: Any]
        XCTAssertEqual(config["trashBytes"] as? Int, 0)
        let pruned = try quire(["trash", "prune"], home: home)
        XCTAssertEqual(pruned.status, 0, pruned.stderr)
        XCTAssertTrue(pruned.stdout.contains("keeping is off: dropped all 2 kept texts (25 B)"), pruned.stdout)
        listed = try quire(["trash", "--json"], home: home)
        XCTAssertEqual(((try jsonObject(listed.stdout) as? [String: Any])?["kept"] as? [Any])?.count, 0)
        XCTAssertEqual(try quire(["get", "notebook", "Letter"], home: home).stdout, "dear ann, hello\n", "pruning drops kept texts only")
    }
}
