import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// A note a sibling moved while an editor here had it read: the editor's
/// save by rename onto the old name is a new version of the moved note.
final class MovedAwayTests: XCTestCase {
    /// A sibling's move of `title` into `folder` (as the store holds it after a join).
    /// `key`: which of the rows titled so (the only one if nil).
    private func movedElsewhere(_ mount: DirectMount, _ title: String, key: RowKey? = nil, into folder: String?, retitled: String? = nil) throws {
        let rows = try mount.store.summaries(.notebook)
        let titled = rows.filter { $0.name == title && !$0.isTombstone }
        if key == nil { XCTAssertEqual(titled.count, 1, title) }
        let key = try XCTUnwrap(key ?? titled.first?.key)
        guard case .note(var note)? = try mount.store.row(.notebook, key)?.content else { return XCTFail("no note \(title)") }
        note.folder = folder.map { name in rows.first { $0.name == name && $0.place.kind == .folder }!.key }
        if let retitled { note.title = retitled }
        note.updatedAt = Timestamp(seconds: note.updatedAt.seconds + 100)
        _ = try mount.store.put(.note(note), key: key)
        mount.feed()
    }

    private func saveByRename(_ mount: DirectMount, _ path: String, _ text: String) throws {
        try mount.writeFile(path + ".aB3dE9", text)
        try mount.rename(path + ".aB3dE9", path)
    }

    /// khard saves by rename too: a card renamed by a sibling (vdir file
    /// names are handles) gets the edit, and no second card of its UID.
    func testASaveByRenameOntoTheOldNameOfARenamedCardWritesThatCard() throws {
        let mount = try DirectMount()
        let card = "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:r1\r\nFN:Ren One\r\nTEL:111\r\nEND:VCARD\r\n"
        try mount.writeFile("contacts/r1.vcf", card)
        let key = try XCTUnwrap(mount.store.summaries(.contacts).first { $0.name == "r1" }?.key)
        XCTAssertEqual(try mount.text("contacts/r1.vcf"), card, "the program reads it")
        guard case .contact(var contact)? = try mount.store.row(.contacts, key)?.content else { return XCTFail("no card") }
        contact.title = "r1-moved"
        contact.updatedAt = Timestamp(seconds: contact.updatedAt.seconds + 100)
        _ = try mount.store.put(.contact(contact), key: key)
        mount.feed()
        XCTAssertEqual(try mount.list("contacts"), ["r1-moved.vcf"])
        try saveByRename(mount, "contacts/r1.vcf", card.replacingOccurrences(of: "TEL:111", with: "TEL:222"))
        XCTAssertEqual(try mount.list("contacts"), ["r1-moved.vcf"], "one card, under the sibling's name")
        XCTAssertEqual(try mount.text("contacts/r1-moved.vcf"), card.replacingOccurrences(of: "TEL:111", with: "TEL:222"))
        XCTAssertEqual(try mount.store.summaries(.contacts).filter { !$0.isTombstone }.map(\.key), [key])
    }

    func testASaveByRenameOntoTheOldNameOfAMovedNoteWritesTheMovedNote() throws {
        let mount = try DirectMount { try $0.putNote("Ideas", "one\n\ntwo\n") }
        try mount.mkdir("notebook/Archive")
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "Ideas" }?.key)
        XCTAssertEqual(try mount.text("notebook/Ideas.md"), "one\n\ntwo\n", "the editor reads it")
        try movedElsewhere(mount, "Ideas", into: "Archive")
        XCTAssertFalse(mount.exists("notebook/Ideas.md"))
        _ = mount.fileSystem.locked { mount.fileSystem.kernelCache.take() }
        try saveByRename(mount, "notebook/Ideas.md", "one\n\ntwo, edited\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Archive", "Ideas"], "one note")
        XCTAssertEqual(try mount.text("notebook/Archive/Ideas.md"), "one\n\ntwo, edited\n")
        XCTAssertEqual(try mount.list("notebook"), ["Archive"], "where the sibling put it")
        XCTAssertEqual(try mount.store.summaries(.notebook).first { $0.name == "Ideas" }?.key, key)
        let queued = mount.fileSystem.locked { mount.fileSystem.kernelCache.take() }
        XCTAssertTrue(queued.contains(.entry(parent: InodeTable.folderInode(.notebook), name: CanonicalName("Ideas.md"))),
                      "the kernel forgets the old name: \(queued)")

        // The editor's next save goes the same way.
        try saveByRename(mount, "notebook/Ideas.md", "one\n\ntwo, edited again\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Archive", "Ideas"])
        XCTAssertEqual(try mount.text("notebook/Archive/Ideas.md"), "one\n\ntwo, edited again\n")

        // Renamed by the sibling as well: the note keeps the sibling's title.
        try movedElsewhere(mount, "Ideas", into: nil, retitled: "Thoughts")
        try saveByRename(mount, "notebook/Archive/Ideas.md", "one\n\ntwo, edited twice\n")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Archive", "Thoughts"])
        XCTAssertEqual(try mount.text("notebook/Thoughts.md"), "one\n\ntwo, edited twice\n")
    }

    /// A program never shown the note, or a name made anew, is a new note.
    func testOnlyAProgramShownTheNoteFollowsIt() throws {
        let mount = try DirectMount { store in
            try store.putNote("Unread", "never read here\n")
            try store.putNote("Read", "read here\n")
        }
        try mount.mkdir("notebook/Archive")
        try movedElsewhere(mount, "Unread", into: "Archive")
        try saveByRename(mount, "notebook/Unread.md", "a new note\n")
        XCTAssertEqual(try mount.text("notebook/Unread.md"), "a new note\n")
        XCTAssertEqual(try mount.text("notebook/Archive/Unread.md"), "never read here\n")

        XCTAssertEqual(try mount.text("notebook/Read.md"), "read here\n")
        let read = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "Read" }?.key)
        try movedElsewhere(mount, "Read", into: "Archive")
        try mount.writeFile("notebook/Read.md", "made anew by name\n")
        try saveByRename(mount, "notebook/Read.md", "saved over the new one\n")
        XCTAssertEqual(try mount.text("notebook/Read.md"), "saved over the new one\n")
        XCTAssertEqual(try mount.text("notebook/Archive/Read.md"), "read here\n")
        // RENAME_NOREPLACE onto the old name makes a new note too.
        try mount.mkdir("notebook/Other")
        XCTAssertEqual(try mount.text("notebook/Archive/Read.md"), "read here\n")
        try movedElsewhere(mount, "Read", key: read, into: "Other")
        try mount.writeFile("notebook/Archive/Read.md.aB3dE9", "not replacing\n")
        try mount.rename("notebook/Archive/Read.md.aB3dE9", "notebook/Archive/Read.md", flags: .noReplace)
        XCTAssertEqual(try mount.text("notebook/Archive/Read.md"), "not replacing\n")
        XCTAssertEqual(try mount.text("notebook/Other/Read.md"), "read here\n")
    }
}
