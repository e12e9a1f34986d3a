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

    /// A save by rename whose temp file was committed as a row (its name is
    /// not one that waits in scratch), with the feed's round read between
    /// the temp file's close and the rename. The temp row's tombstone is the
    /// rename's own: its name comes back in no listing and watchers are told
    /// of no removal (the feed's unlink of it reached the kernel's inode of
    /// the note, with a size of 0, and a reader racing it read nothing).
    func testASaveByRenameReadByTheFeedMidwayTellsWatchersNothing() throws {
        let mount = try DirectMount { try $0.putNote("A", "one\n") }
        let note = try mount.lookup("notebook/A.md").attributes.inode
        mount.feed()
        try mount.writeFile("notebook/A.md.new", "one\n\ntwo\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["A", "A.md.new"], "the temp file is a row of its own")
        let since = mount.fileSystem.locked { mount.fileSystem.lastSeenSequence }
        let stale = try mount.store.changes(since: since)
        XCTAssertEqual(stale.map(\.name), ["A.md.new"])
        let temp = try mount.lookup("notebook/A.md.new").attributes.inode
        try mount.rename("notebook/A.md.new", "notebook/A.md")
        mount.fileSystem.locked { for summary in stale { mount.fileSystem.applyExternal(summary) } }
        XCTAssertEqual(try mount.list("notebook"), ["A.md"], "the temp name stays gone")
        let round = mount.fileSystem.takeChanges()
        XCTAssertEqual(round.news, [], "the kernel made the rename: nothing to tell")
        XCTAssertEqual(try mount.list("notebook"), ["A.md"])
        XCTAssertEqual(try mount.lookup("notebook/A.md").attributes.inode, temp, "the kernel moved the temp file's inode to the note's name")
        XCTAssertNotEqual(temp, note)
        XCTAssertEqual(try mount.lookup("notebook/A.md").attributes.size, 9)
        XCTAssertEqual(try mount.text("notebook/A.md"), "one\n\ntwo\n")
    }
}

/// The feed's own calls that raise watchers' events are answered with the
/// file as it is, and only for the file the news is about.
final class AnnouncedLookupTests: XCTestCase {
    private func announce(_ mount: DirectMount, _ what: WatcherNotices.Announcement, as name: String) {
        let slot = WatcherNotices.Slot(parent: InodeTable.folderInode(.notebook), name: CanonicalName(name))
        mount.fileSystem.locked { mount.fileSystem.watcherNotices.begin(what, slot, thread: mount.caller.pid) }
    }

    private func done(_ mount: DirectMount, _ name: String) {
        let slot = WatcherNotices.Slot(parent: InodeTable.folderInode(.notebook), name: CanonicalName(name))
        mount.fileSystem.locked { mount.fileSystem.watcherNotices.end(slot) }
    }

    func testTheOldNameOfARenamedFileShowsItsSize() throws {
        let mount = try DirectMount { try $0.putNote("A", "one two three\n") }
        let entry = try mount.lookup("notebook/A.md")
        guard case .row(let row)? = mount.fileSystem.locked({ mount.fileSystem.names.inodes.object(entry.attributes.inode.rawValue) }) else {
            return XCTFail("no row")
        }
        announce(mount, .renaming(child: entry.attributes.inode.rawValue, row: row), as: "Old.md")
        defer { done(mount, "Old.md") }
        let old = try mount.lookup("notebook/Old.md")
        XCTAssertEqual(old.attributes.inode, entry.attributes.inode)
        XCTAssertEqual(old.attributes.size, 14, "the kernel applies these to the file it holds: never a size of 0")
        XCTAssertEqual(old.attributeTimeout, 0)
    }

    func testANumberThatStandsForAnotherFileIsNotTheOneThatWent() throws {
        let mount = try DirectMount { store in
            try store.putNote("A", "alive\n")
            try store.putNote("Gone", "gone\n")
        }
        let alive = try mount.lookup("notebook/A.md").attributes.inode.rawValue
        let goneInode = try mount.lookup("notebook/Gone.md").attributes.inode.rawValue
        guard case .row(let gone)? = mount.fileSystem.locked({ mount.fileSystem.names.inodes.object(goneInode) }) else { return XCTFail("no row") }
        announce(mount, .removing(child: alive, row: gone, isFolder: false), as: "Gone.md")
        XCTAssertThrowsError(try mount.lookup("notebook/Gone.md"), "the kernel must not unlink A.md's inode under another name")
        done(mount, "Gone.md")
        XCTAssertEqual(try mount.text("notebook/A.md"), "alive\n")
    }
}

/// What a write of ours leaves for the kernel to drop.
final class OwnWriteInvalidationTests: XCTestCase {
    /// A file or folder created through the mount and committed under the
    /// name it was created with: the kernel's entry is right, so it stays
    /// cached. A rename through the mount drops the old name and keeps the
    /// new one, which the kernel moved its entry to (a program whose working
    /// folder it is keeps its path).
    func testACreatedFileKeepsItsEntry() throws {
        let mount = try DirectMount()
        let notebook = InodeTable.folderInode(.notebook)
        try mount.writeFile("notebook/New.md", "new\n")
        XCTAssertFalse(mount.feed().contains(.entry(parent: notebook, name: CanonicalName("New.md"))))
        try mount.rename("notebook/New.md", "notebook/Newer.md")
        var work = mount.feed()
        XCTAssertTrue(work.contains(.entry(parent: notebook, name: CanonicalName("New.md"))), "\(work)")
        XCTAssertFalse(work.contains(.entry(parent: notebook, name: CanonicalName("Newer.md"))), "\(work)")
        try mount.mkdir("notebook/d")
        XCTAssertFalse(mount.feed().contains(.entry(parent: notebook, name: CanonicalName("d"))))
        try mount.rename("notebook/d", "notebook/e")
        work = mount.feed()
        XCTAssertTrue(work.contains(.entry(parent: notebook, name: CanonicalName("d"))), "\(work)")
        XCTAssertFalse(work.contains(.entry(parent: notebook, name: CanonicalName("e"))), "\(work)")
    }
}
