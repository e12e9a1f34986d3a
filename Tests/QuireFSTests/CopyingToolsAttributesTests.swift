import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// Copying tools write back every attribute they read: `cp -a` and `mv`
/// across filesystems onto the note, `rsync -X` onto its temp file before
/// renaming it over the note. None of them fails on Quire's attributes,
/// the tags travel, and writing back what a note has makes no version.
final class CopyingToolsAttributesTests: XCTestCase {
    private func setAttribute(_ mount: DirectMount, _ path: String, _ name: String, _ value: String) throws {
        let inode = try mount.lookup(path).attributes.inode
        try mount.fileSystem.setExtendedAttribute(inode, name: name, value: Array(value.utf8), flags: [], request: mount.caller)
    }

    private func attribute(_ mount: DirectMount, _ path: String, _ name: String) throws -> String {
        let inode = try mount.lookup(path).attributes.inode
        return String(decoding: try mount.fileSystem.extendedAttribute(inode, name: name, request: mount.caller), as: UTF8.self)
    }

    private func tags(_ mount: DirectMount, _ title: String) throws -> [String] {
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == title }?.key)
        guard case .note(let note)? = try mount.store.row(.notebook, key)?.content else { XCTFail("no note \(title)"); return [] }
        return note.tags
    }

    func testWritingBackANotesAttributesChangesNothing() throws {
        let mount = try DirectMount { try $0.putNote("A", "text\n") }
        try setAttribute(mount, "notebook/A.md", "user.quire.tags", "b, a")
        XCTAssertEqual(try tags(mount, "A"), ["a", "b"])
        let key = try attribute(mount, "notebook/A.md", "user.quire.key")
        let sequence = try mount.store.changeSequence()
        try setAttribute(mount, "notebook/A.md", "user.quire.tags", "a,b,a")
        for name in ["user.quire.key", "user.quire.tags", "user.quire.contentHash", "user.quire.resident"] {
            try setAttribute(mount, "notebook/A.md", name, try attribute(mount, "notebook/A.md", name))
        }
        try setAttribute(mount, "notebook/A.md", "user.quire.key", "00112233445566778899aabbccddeeff")
        try setAttribute(mount, "notebook/A.md", "user.quire.holder", "elsewhere")
        XCTAssertEqual(try mount.store.changeSequence(), sequence, "no new version")
        XCTAssertEqual(try attribute(mount, "notebook/A.md", "user.quire.key"), key)
        XCTAssertThrowsError(try attribute(mount, "notebook/A.md", "user.quire.holder"), "a resident note has no holder")
    }

    /// rsync -X: the temp file gets the attributes, then is renamed over
    /// the note (or onto a new name); its tags become the note's.
    func testATempFilesTagsBecomeTheNotesAtTheRename() throws {
        let mount = try DirectMount { try $0.putNote("A", "text\n") }
        for (temp, target, written) in [(".A.md.x1Y2z3", "A.md", "work,home"), (".B.md.q9W8e7", "B.md", "new")] {
            try mount.writeFile("notebook/" + temp, "copied\n")
            try setAttribute(mount, "notebook/" + temp, "user.quire.key", "00112233445566778899aabbccddeeff")
            try setAttribute(mount, "notebook/" + temp, "user.quire.tags", written)
            XCTAssertEqual(try attribute(mount, "notebook/" + temp, "user.quire.tags"), written, "kept for the session")
            try mount.rename("notebook/" + temp, "notebook/" + target)
            XCTAssertEqual(try mount.text("notebook/" + target), "copied\n")
            XCTAssertEqual(try tags(mount, String(target.dropLast(3))), written.split(separator: ",").map(String.init).sorted())
        }
        // Without tags on the temp file, a note keeps its own.
        try mount.writeFile("notebook/.A.md.k3J4h5", "again\n")
        try mount.rename("notebook/.A.md.k3J4h5", "notebook/A.md")
        XCTAssertEqual(try tags(mount, "A"), ["home", "work"])
    }
}
