import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// An attachment edited on two devices at once: the later version keeps
/// the name, the other shows beside it as a conflict copy, and no edit
/// here drops a version the user has not seen go.
final class ConflictCopyTests: XCTestCase {
    let sibling = DeviceID(bytes: [UInt8](repeating: 0x5B, count: 16))!

    /// The mount with `photo.jpg` written here and, concurrently, by a sibling.
    func mountWithConflict(ours: String = "ours", theirs: String = "theirs") throws -> (DirectMount, RowKey) {
        let mount = try DirectMount()
        try mount.writeFile("notebook/photo.jpg", ours)
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first?.key)
        let stored = try XCTUnwrap(mount.store.row(.notebook, key))
        // The sibling's version: made without seeing ours, later by the clock.
        guard case .note(var note)? = stored.content else { throw XCTSkip("no note") }
        note.body = Array(theirs.utf8)
        note.updatedAt = Timestamp(seconds: note.updatedAt.seconds + 60)
        note.editedBy = sibling
        let dot = Dot(actor: Actor(device: sibling, incarnation: 1), counter: 1)
        _ = try mount.store.apply([Row.single(.notebook, key, dot: dot, context: VersionVector(), content: .note(note))])
        _ = mount.feed()
        return (mount, key)
    }

    func copyName(_ mount: DirectMount) throws -> String {
        let names = try mount.list("notebook")
        return try XCTUnwrap(names.first { $0.contains(".sync-conflict-") }, "\(names)")
    }

    /// Concurrent versions with the same bytes (two devices saving one
    /// loser of a conflict as a file of their own) show no copy, and the
    /// status does not list the file as edited on two devices at once.
    func testEqualVersionsAreNoConflictAnywhere() throws {
        let (mount, key) = try mountWithConflict(ours: "same", theirs: "same")
        XCTAssertEqual(try mount.store.row(.notebook, key)?.heads.count, 2)
        XCTAssertFalse(try mount.list("notebook").contains { $0.contains(".sync-conflict-") })
        XCTAssertTrue(try mount.store.conflictedAttachments().isEmpty)
        let (other, otherKey) = try mountWithConflict()
        XCTAssertEqual(try other.store.conflictedAttachments().map(\.key), [otherKey])
    }

    func testTheLaterVersionKeepsTheNameAndTheOtherShowsBesideIt() throws {
        let (mount, _) = try mountWithConflict()
        XCTAssertEqual(try mount.text("notebook/photo.jpg"), "theirs")
        let name = try copyName(mount)
        XCTAssertTrue(name.hasPrefix("photo.sync-conflict-") && name.hasSuffix(".jpg"), name)
        XCTAssertTrue(name.contains("-d1d1d1d1."), "written by this device (d1…): \(name)")
        XCTAssertEqual(try mount.text("notebook/" + name), "ours")
        XCTAssertThrowsError(try mount.open("notebook/" + name, O_WRONLY)) { XCTAssertEqual($0 as? FuseError, .permissionDenied) }
    }

    /// The sibling's version (which saw ours) of an attachment, as a sync stores it.
    func siblingWrites(_ mount: DirectMount, _ key: RowKey, _ text: String) throws {
        let stored = try XCTUnwrap(mount.store.row(.notebook, key))
        guard case .note(var note)? = stored.content else { return XCTFail("no note") }
        note.body = Array(text.utf8)
        note.contentHash = Note.bodyDigest(note.body!)
        note.updatedAt = Timestamp(seconds: note.updatedAt.seconds + 60)
        note.editedBy = sibling
        _ = try mount.store.apply([stored.edited(by: Actor(device: sibling, incarnation: 1), to: .note(note))])
        _ = mount.feed()
    }

    /// A program here patches an attachment in place, and before it closes
    /// the file a sibling's whole new version syncs in: the close writes
    /// the program's text, and the sibling's version, which it never saw,
    /// is kept as a file of its own (it disappeared on both devices).
    func testAnAttachmentPatchedHereWhileASiblingReplacedItKeepsBothVersions() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/f.bin", "version one, as both devices had it")
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first?.key)
        let file = try mount.open("notebook/f.bin", O_RDWR)
        try mount.write(file, "PATCHED", at: 8)
        try siblingWrites(mount, key, "version two, the sibling's")
        try mount.close(file)
        let names = try mount.list("notebook")
        XCTAssertEqual(names.count, 2, "\(names)")
        XCTAssertEqual(try mount.text("notebook/f.bin"), "version PATCHED both devices had it")
        let kept = try XCTUnwrap(names.first { $0.hasPrefix("f.sync-conflict-") && $0.hasSuffix(".bin") }, "\(names)")
        XCTAssertTrue(kept.contains("-5b5b5b5b."), "named for the sibling that wrote it: \(kept)")
        XCTAssertEqual(try mount.text("notebook/" + kept), "version two, the sibling's")
        // The same over a file truncated at open (cp onto it).
        let again = try mount.open("notebook/f.bin", O_WRONLY | O_TRUNC)
        try siblingWrites(mount, key, "version three, the sibling's")
        _ = try mount.write(again, "copied over it")
        try mount.close(again)
        XCTAssertEqual(try mount.text("notebook/f.bin"), "copied over it")
        XCTAssertTrue(try mount.list("notebook").contains { $0.hasPrefix("f.sync-conflict-") && (try? mount.text("notebook/" + $0)) == "version three, the sibling's" })
    }

    /// With no version synced in meanwhile, writing over an attachment
    /// (cp onto it, a patch in place) keeps no copy of what it replaced.
    func testWritingOverAnAttachmentNobodyElseChangedKeepsNoCopy() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/f.bin", "first")
        try mount.writeFile("notebook/f.bin", "second, over it")
        let file = try mount.open("notebook/f.bin", O_RDWR)
        try mount.write(file, "SECOND", at: 0)
        try mount.close(file)
        XCTAssertEqual(try mount.list("notebook"), ["f.bin"])
        XCTAssertEqual(try mount.text("notebook/f.bin"), "SECOND, over it")
    }

    /// A save of the file here keeps the other version as a file of its own.
    func testASaveHereKeepsTheLosingVersionAsAFile() throws {
        let (mount, key) = try mountWithConflict()
        let name = try copyName(mount)
        try mount.writeFile("notebook/photo.jpg", "edited")
        _ = mount.feed()
        XCTAssertEqual(try mount.text("notebook/photo.jpg"), "edited")
        XCTAssertEqual(try mount.text("notebook/" + name), "ours", "kept as a row now")
        XCTAssertEqual(try mount.store.row(.notebook, key)?.heads.count, 1)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["photo.jpg", name].sorted())
        // Deleting the file keeps nothing more: there is no other version left.
        try mount.unlink("notebook/photo.jpg")
        XCTAssertEqual(try mount.liveTitles(.notebook), [name])
    }

    func testDeletingTheCopyDropsThatVersionOnly() throws {
        let (mount, key) = try mountWithConflict()
        let name = try copyName(mount)
        try mount.unlink("notebook/" + name)
        XCTAssertEqual(try mount.list("notebook"), ["photo.jpg"])
        XCTAssertEqual(try mount.text("notebook/photo.jpg"), "theirs")
        XCTAssertEqual(try mount.store.row(.notebook, key)?.heads.count, 1)
        XCTAssertEqual(try mount.liveTitles(.notebook), ["photo.jpg"])
    }

    func testRenamingTheCopyKeepsItOrChoosesIt() throws {
        let (mount, _) = try mountWithConflict()
        try mount.rename("notebook/" + (try copyName(mount)), "notebook/photo (mine).jpg")
        XCTAssertEqual(try mount.list("notebook"), ["photo (mine).jpg", "photo.jpg"])
        XCTAssertEqual(try mount.text("notebook/photo (mine).jpg"), "ours")
        XCTAssertEqual(try mount.text("notebook/photo.jpg"), "theirs")

        let (other, key) = try mountWithConflict()
        try other.rename("notebook/" + (try copyName(other)), "notebook/photo.jpg")
        XCTAssertEqual(try other.list("notebook"), ["photo.jpg"])
        XCTAssertEqual(try other.text("notebook/photo.jpg"), "ours", "the copy was chosen over the later version")
        XCTAssertEqual(try other.store.row(.notebook, key)?.heads.count, 1)
    }

    /// Equal bytes from two devices are no conflict.
    func testTwoEqualVersionsShowNoCopy() throws {
        let (mount, _) = try mountWithConflict(ours: "same", theirs: "same")
        XCTAssertEqual(try mount.list("notebook"), ["photo.jpg"])
    }
}
