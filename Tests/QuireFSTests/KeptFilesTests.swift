import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// `.quire/trash/` and `.quire/versions/`, driven directly (no mount).
final class KeptFilesTests: XCTestCase {
    func testADeletedNoteIsReadBackFromTheTrash() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Ideas.md", "a thought worth keeping\n")
        try mount.unlink("notebook/Ideas.md")
        XCTAssertFalse(mount.exists("notebook/Ideas.md"))
        XCTAssertEqual(try mount.list(".quire"), ["digest", "status", "status.json", "trash", "versions"])
        XCTAssertEqual(try mount.list(".quire/trash"), ["Ideas.md"])
        XCTAssertEqual(try mount.list(".quire/versions"), [])
        XCTAssertEqual(try mount.text(".quire/trash/Ideas.md"), "a thought worth keeping\n")
        let file = try mount.lookup(".quire/trash/Ideas.md").attributes
        XCTAssertEqual(file.permissions, 0o444)
        XCTAssertEqual(file.size, 24)
        XCTAssertEqual(file.kind, .regular)
        XCTAssertEqual(try mount.lookup(".quire/trash").attributes.permissions, 0o555)
    }

    func testAnEditLeavesTheOldTextInVersionsNamedByTime() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Plan.md", "version one\n")
        try mount.writeFile("notebook/Plan.md", "version two\n")
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "version two\n")
        let kept = try XCTUnwrap(try mount.store.keptVersions().first)
        let name = "Plan " + KeptLayout.stamp(kept.keptAt.seconds) + ".md"
        XCTAssertTrue(name.range(of: #"^Plan \d{4}-\d{2}-\d{2} \d{6}\.md$"#, options: .regularExpression) != nil, name)
        XCTAssertEqual(try mount.list(".quire/versions"), [name])
        XCTAssertEqual(try mount.text(".quire/versions/" + name), "version one\n")
        XCTAssertEqual(try mount.list(".quire/trash"), [], "nothing was deleted")
    }

    func testTheTreeFollowsTheNotebooksFoldersAndAttachmentsKeepTheirNames() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Projects")
        try mount.mkdir("notebook/Projects/2026")
        try mount.writeFile("notebook/Projects/2026/idea.md", "an idea\n")
        try mount.writeFile("notebook/Projects/sketch.png", "\u{89}PNG bytes")
        try mount.unlink("notebook/Projects/2026/idea.md")
        try mount.unlink("notebook/Projects/sketch.png")
        try mount.rmdir("notebook/Projects/2026")
        XCTAssertEqual(try mount.list(".quire/trash"), ["Projects"], "folders are not kept themselves")
        XCTAssertEqual(try mount.list(".quire/trash/Projects"), ["2026", "sketch.png"])
        XCTAssertEqual(try mount.list(".quire/trash/Projects/2026"), ["idea.md"])
        XCTAssertEqual(try mount.text(".quire/trash/Projects/sketch.png"), "\u{89}PNG bytes")
        XCTAssertEqual(try mount.lookup(".quire/trash/Projects/2026").attributes.kind, .directory)
        let layout = try mount.fileSystem.locked { try mount.fileSystem.keptLayout() }
        let idea = try XCTUnwrap(layout.version(atPath: "trash/Projects/2026/idea.md"))
        XCTAssertEqual(KeptLayout.notebookPathText(idea), "Projects/2026/idea.md")
        XCTAssertEqual(layout.latest(atNotebookPath: "Projects/2026/idea.md")?.id, idea.id)
    }

    func testTwoDeletionsOfOneNameAreBothShownTheLastUnderThePlainName() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Todo.md", "first list\n")
        try mount.unlink("notebook/Todo.md")
        // Another row of the name (a sibling's: created or renamed onto the
        // name here, it is the same row again, RemovedAndCreatedAgainTests).
        _ = try mount.store.putNote("Todo", "second list\n")
        mount.feed()
        try mount.unlink("notebook/Todo.md")
        let names = try mount.list(".quire/trash")
        XCTAssertEqual(names.count, 2)
        XCTAssertEqual(try mount.text(".quire/trash/Todo.md"), "second list\n")
        let older = try XCTUnwrap(names.first { $0 != "Todo.md" })
        XCTAssertTrue(older.range(of: #"^Todo \(deleted \d{4}-\d{2}-\d{2} \d{6}\)\.md$"#, options: .regularExpression) != nil, older)
        XCTAssertEqual(try mount.text(".quire/trash/" + older), "first list\n")
    }

    func testEveryChangeIsRefusedWithALogLine() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Keep.md", "kept\n")
        try mount.unlink("notebook/Keep.md")
        func refused(_ body: () throws -> Void, _ line: UInt = #line) {
            XCTAssertThrowsError(try body(), line: line) { XCTAssertEqual($0 as? FuseError, .readOnly, line: line) }
        }
        refused { _ = try mount.open(".quire/trash/Keep.md", O_WRONLY) }
        refused { _ = try mount.open(".quire/trash/Keep.md", O_RDWR) }
        refused { try mount.unlink(".quire/trash/Keep.md") }
        refused { try mount.rename(".quire/trash/Keep.md", "notebook/Keep.md") }
        refused { try mount.rename("notebook", ".quire/trash/x") }
        refused { _ = try mount.create(".quire/trash/New.md") }
        refused { try mount.mkdir(".quire/versions/x") }
        let inode = try mount.lookup(".quire/trash/Keep.md").attributes.inode
        refused { _ = try mount.fileSystem.setAttributes(inode, FuseAttributeChanges(fields: [.size], size: 0), handle: nil, request: mount.caller) }
        refused { try mount.fileSystem.setExtendedAttribute(inode, name: "user.x", value: [1], flags: [], request: mount.caller) }
        XCTAssertTrue(mount.fileSystem.log.recentProblems.contains { $0.contains(".quire/trash/Keep.md") && $0.contains("read-only") },
                      "\(mount.fileSystem.log.recentProblems)")
        XCTAssertEqual(try mount.text(".quire/trash/Keep.md"), "kept\n", "still there")
        XCTAssertEqual(try mount.liveTitles(.notebook), [])
    }

    func testInodesAreStableAndApartFromRows() throws {
        let mount = try DirectMount()
        for i in 0..<20 {
            try mount.writeFile("notebook/n\(i).md", "one \(i)\n")
            try mount.writeFile("notebook/n\(i).md", "two \(i)\n")
        }
        try mount.unlink("notebook/n3.md")
        var seen: Set<UInt64> = []
        for name in try mount.list("notebook") { XCTAssertTrue(seen.insert(try mount.lookup("notebook/" + name).attributes.inode.rawValue).inserted) }
        for name in try mount.list(".quire/versions") {
            let inode = try mount.lookup(".quire/versions/" + name).attributes.inode.rawValue
            XCTAssertTrue(seen.insert(inode).inserted, "no two entries share a number")
            XCTAssertEqual(try mount.lookup(".quire/versions/" + name).attributes.inode.rawValue, inode, "the same while held")
        }
        XCTAssertEqual(seen.count, 19 + 20)
        let trashed = try mount.lookup(".quire/trash/n3.md").attributes.inode
        mount.fileSystem.forgotten(trashed)
        XCTAssertEqual(try mount.lookup(".quire/trash/n3.md").attributes.inode, trashed, "the same number after the kernel forgot it")
    }

    func testAnUndeletedNoteLeavesTheTrashAndIsBackInItsFolder() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Work")
        try mount.writeFile("notebook/Work/Report.md", "the report\n")
        try mount.unlink("notebook/Work/Report.md")
        let trashed = try mount.lookup(".quire/trash/Work/Report.md").attributes.inode
        let layout = try mount.fileSystem.locked { try mount.fileSystem.keptLayout() }
        let version = try XCTUnwrap(layout.version(atPath: "trash/Work/Report.md"))
        let restored = try mount.store.restoreKept(version.id)
        mount.feed()
        XCTAssertEqual(restored.outcome, .revived)
        XCTAssertEqual(try mount.text("notebook/Work/Report.md"), "the report\n")
        XCTAssertEqual(try mount.list(".quire/trash"), [])
        XCTAssertThrowsError(try mount.fileSystem.getAttributes(trashed, handle: nil, request: mount.caller),
                             "the trash's number stands for nothing now")
        // The kept text is now an earlier version of a live row.
        XCTAssertEqual(try mount.list(".quire/versions/Work").count, 1)
    }
}
