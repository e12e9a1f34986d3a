import QuireCore
@testable import QuireFS
import XCTest

/// The change feed reads what changed outside the lock, so what it read can
/// be older than a write of ours that landed meanwhile.
final class ChangeFeedOrderTests: XCTestCase {
    func testASummaryReadBeforeOurWriteDoesNotUndoIt() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n")
        let stale = try mount.store.changes(since: 0)
        XCTAssertEqual(stale.map(\.name), ["A"])
        try mount.rename("notebook/A.md", "notebook/B.md")
        mount.fileSystem.locked { for summary in stale { mount.fileSystem.applyExternal(summary) } }
        XCTAssertFalse(mount.exists("notebook/A.md"), "the rename stands")
        XCTAssertEqual(try mount.text("notebook/B.md"), "one\n")
        // And the feed's next round, which brings the rename itself, changes nothing.
        mount.feed()
        XCTAssertFalse(mount.exists("notebook/A.md"))
        XCTAssertTrue(mount.exists("notebook/B.md"))
    }
}

/// What a write of ours leaves for the kernel to drop.
final class OwnWriteInvalidationTests: XCTestCase {
    /// A file created through the mount and committed under the name it was
    /// created with: the kernel's entry is right, so it stays cached. A
    /// rename through the mount drops the names that changed.
    func testACreatedFileKeepsItsEntry() throws {
        let mount = try DirectMount()
        let notebook = InodeTable.folderInode(.notebook)
        try mount.writeFile("notebook/New.md", "new\n")
        XCTAssertFalse(mount.feed().contains(.entry(parent: notebook, name: CanonicalName("New.md"))))
        try mount.rename("notebook/New.md", "notebook/Newer.md")
        let work = mount.feed()
        XCTAssertTrue(work.contains(.entry(parent: notebook, name: CanonicalName("New.md"))), "\(work)")
        XCTAssertTrue(work.contains(.entry(parent: notebook, name: CanonicalName("Newer.md"))), "\(work)")
    }
}
