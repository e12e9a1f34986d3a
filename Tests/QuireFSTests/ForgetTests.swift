import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import XCTest

/// `forgotten`, driven directly: the tables shrink when the kernel lets go.
final class ForgetTests: XCTestCase {
    func sizes(_ mount: DirectMount) -> MountTableSizes { mount.fileSystem.locked { mount.fileSystem.tableSizes() } }

    func testForgottenRowsLeaveTheTablesAndComeBackOnLookup() throws {
        let mount = try DirectMount { store in
            for index in 0..<300 { try store.putNote("note \(index)", "text \(index)\n") }
        }
        let baseline = sizes(mount).inodes
        // A listing with attributes hands out every entry, as lookups do.
        var entries: [FuseInode] = []
        for index in 0..<300 {
            let entry = try mount.lookup("notebook/note \(index).md")
            entries.append(entry.attributes.inode)
            _ = try mount.text("notebook/note \(index).md")
        }
        XCTAssertEqual(sizes(mount).inodes, baseline + 300)
        XCTAssertEqual(sizes(mount).cachedPageVersions, 300, "each read file's page version is tracked")
        for inode in entries { mount.fileSystem.forgotten(inode) }
        XCTAssertEqual(sizes(mount).inodes, baseline)
        XCTAssertEqual(sizes(mount).cachedPageVersions, 0)
        XCTAssertThrowsError(try mount.fileSystem.getAttributes(entries[5], handle: nil, request: mount.caller)) {
            XCTAssertEqual($0 as? FuseError, .noEntry, "a forgotten number stands for nothing")
        }
        // Looked up again: the same (derived) number, working.
        let again = try mount.lookup("notebook/note 5.md")
        XCTAssertEqual(again.attributes.inode, entries[5])
        XCTAssertEqual(try mount.text("notebook/note 5.md"), "text 5\n")
        try mount.writeFile("notebook/note 5.md", "five\n")
        XCTAssertEqual(try mount.stored(.notebook, "note 5"), "five\n")
    }

    func testAnOpenFileKeepsItsInodeUntilReleased() throws {
        let mount = try DirectMount { try $0.putNote("Held", "held\n") }
        let file = try mount.open("notebook/Held.md", O_RDWR)
        let baseline = sizes(mount).inodes
        mount.fileSystem.forgotten(file.inode)
        XCTAssertEqual(sizes(mount).inodes, baseline, "kept while open")
        try mount.write(file, "HELD\n")
        XCTAssertEqual(try mount.size(file), 5)
        try mount.close(file)
        XCTAssertEqual(sizes(mount).inodes, baseline - 1, "dropped at release")
        XCTAssertEqual(try mount.stored(.notebook, "Held"), "HELD\n")
    }

    func testFixedInodesAreNeverDropped() throws {
        let mount = try DirectMount()
        let baseline = sizes(mount).inodes
        for inode in [FuseInode.root, try mount.lookup("notebook").attributes.inode, try mount.lookup(".quire").attributes.inode,
                      try mount.lookup(".quire/status.json").attributes.inode] {
            mount.fileSystem.forgotten(inode)
        }
        XCTAssertEqual(sizes(mount).inodes, baseline)
        XCTAssertEqual(try mount.liveTitles(.notebook), [])
        XCTAssertNotNil(try mount.text(".quire/status"))
    }

    /// Session attributes of a row outlive its inode being forgotten (the
    /// number comes back with the next lookup); a scratch file's go with it.
    func testSessionAttributesOfARowSurviveForgetting() throws {
        let mount = try DirectMount { try $0.putNote("Tagged", "x\n") }
        let inode = try mount.lookup("notebook/Tagged.md").attributes.inode
        try mount.fileSystem.setExtendedAttribute(inode, name: "user.mime_type", value: Array("text/markdown".utf8), flags: [], request: mount.caller)
        try mount.writeFile("notebook/.Tagged.md.swp", "swap")
        let swap = try mount.lookup("notebook/.Tagged.md.swp").attributes.inode
        try mount.fileSystem.setExtendedAttribute(swap, name: "user.x", value: [1], flags: [], request: mount.caller)
        mount.fileSystem.forgotten(inode)
        mount.fileSystem.forgotten(swap)
        XCTAssertEqual(sizes(mount).transientAttributes, 1)
        let again = try mount.lookup("notebook/Tagged.md").attributes.inode
        XCTAssertEqual(try mount.fileSystem.extendedAttribute(again, name: "user.mime_type", request: mount.caller), Array("text/markdown".utf8))
    }

    /// Opening a folder allocates no row inode: a plain readdir hands the
    /// kernel no reference, so nothing would ever forget one (readdirplus
    /// allocates as it hands out; the real-mount test covers it).
    func testOpeningAFolderAllocatesNoRowInodes() throws {
        let mount = try DirectMount { store in
            for index in 0..<50 { try store.putNote("note \(index)", "text\n") }
        }
        let folder = try mount.folderInode("notebook")
        let baseline = sizes(mount).inodes
        let handle = try mount.fileSystem.openDirectory(folder, flags: FuseOpenFlags(rawValue: O_RDONLY), request: mount.caller).handle
        XCTAssertEqual(sizes(mount).inodes, baseline, "opendir allocates no row inode")
        try mount.fileSystem.releaseDirectory(folder, handle: handle, request: mount.caller)
        let entry = try mount.lookup("notebook/note 1.md")
        mount.fileSystem.forgotten(entry.attributes.inode)
        XCTAssertEqual(sizes(mount).inodes, baseline)
        XCTAssertEqual(sizes(mount).directorySnapshots, 0)
    }
}

extension ForgetTests {
    /// A save by rename gives the note the temp file's inode (and its
    /// session attributes, as on any filesystem); when the kernel forgets
    /// that number, the attributes wait under the note's own number.
    func testSessionAttributesOfASavedNoteSurviveItsTempInodeBeingForgotten() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        let noteInode = try mount.lookup("notebook/Plan.md").attributes.inode
        try mount.writeFile("notebook/.Plan.md.tmp", "two\n")
        let temp = try mount.lookup("notebook/.Plan.md.tmp").attributes.inode
        try mount.fileSystem.setExtendedAttribute(temp, name: "user.origin", value: Array("editor".utf8), flags: [], request: mount.caller)
        try mount.rename("notebook/.Plan.md.tmp", "notebook/Plan.md")
        XCTAssertEqual(try mount.lookup("notebook/Plan.md").attributes.inode, temp)
        mount.fileSystem.forgotten(noteInode)
        mount.fileSystem.forgotten(temp)
        let again = try mount.lookup("notebook/Plan.md").attributes.inode
        XCTAssertEqual(again, noteInode, "the note's own number again")
        XCTAssertEqual(try mount.fileSystem.extendedAttribute(again, name: "user.origin", request: mount.caller), Array("editor".utf8))
        XCTAssertEqual(try mount.text("notebook/Plan.md"), "two\n")
    }
}
