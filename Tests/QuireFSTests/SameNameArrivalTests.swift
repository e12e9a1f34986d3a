import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// Two devices save one note the way shell scripts do (write `x.new`,
/// rename it over `x`) at the same moment: each device's `x.new` is a row
/// that syncs, and the other's can land between this device's write and its
/// rename. The rename takes the file this device wrote, whatever arrived.
final class SameNameArrivalTests: XCTestCase {
    private let smallestKey = RowKey(bytes: [UInt8](repeating: 0, count: 16))!

    /// A sibling's own `title` with `text`, under the smallest key (the one
    /// every device's listing gives the plain name), landed in the mount's store.
    @discardableResult
    private func siblingsFileLands(_ mount: DirectMount, _ title: String, _ text: String, like key: RowKey) throws -> ReplicaStore {
        let sibling = try ReplicaStore(path: mount.directory + "/sibling-\(UUID().uuidString.prefix(4)).sqlite",
                                       deviceID: DeviceID(bytes: [UInt8](repeating: 0xD2, count: 16))!, create: true)
        guard case .note(var note)? = try mount.store.row(.notebook, key)?.content else {
            XCTFail("no row \(key.hex)")
            return sibling
        }
        note.title = title
        note.body = Array(text.utf8)
        try sibling.put(.note(note), key: smallestKey)
        try mount.store.apply(try sibling.rows(.notebook, from: [], to: nil))
        mount.feed()
        return sibling
    }

    /// A mount holding the note `Plan`, where the sibling's own
    /// `Plan.md.new` ("theirs") has landed.
    private func mountWithSiblingsFile() throws -> (DirectMount, ReplicaStore) {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        try mount.writeFile("notebook/Spare.md.new", "spare\n")
        let sibling = try siblingsFileLands(mount, "Plan.md.new", "theirs\n", like: try XCTUnwrap(key(mount, "notebook/Spare.md.new")))
        return (mount, sibling)
    }

    /// The sibling deletes its file (renamed it over its note); the mount's
    /// store holds the deletion, and the change feed has not applied it yet.
    private func siblingDeletesItsFile(_ mount: DirectMount, _ sibling: ReplicaStore) throws {
        try sibling.delete(.notebook, smallestKey)
        try mount.store.apply(try sibling.tombstones(.notebook))
    }

    /// A sibling that pulled this mount's rows wrote `text` over the row
    /// `key`, having been shown `shown` of it; the mount's store holds its version.
    private func siblingWritesOver(_ mount: DirectMount, _ key: RowKey, _ text: String, shown: String = "",
                                   deleting: Bool = false) throws -> ReplicaStore {
        let sibling = try ReplicaStore(path: mount.directory + "/sibling.sqlite", deviceID: DeviceID(bytes: [UInt8](repeating: 0xD2, count: 16))!,
                                       create: true)
        try sibling.apply(try mount.store.rows(.notebook, from: [], to: nil))
        guard case .note(var note)? = try sibling.row(.notebook, key)?.content else {
            XCTFail("no row on the sibling")
            return sibling
        }
        note.body = Array(text.utf8)
        try sibling.saveProse(.note(note), key: key, shown: Array(shown.utf8))
        if deleting { try sibling.delete(.notebook, key) }
        try mount.store.apply(try sibling.rows(.notebook, from: [], to: nil) + (try sibling.tombstones(.notebook)))
        return sibling
    }

    /// A sibling that pulled this mount's rows deletes `keys`; the mount's
    /// store and tables then hold the deletions.
    @discardableResult
    private func siblingDeletes(_ mount: DirectMount, _ keys: [RowKey], sibling: ReplicaStore? = nil) throws -> ReplicaStore {
        let sibling = try sibling ?? ReplicaStore(path: mount.directory + "/sibling.sqlite",
                                                  deviceID: DeviceID(bytes: [UInt8](repeating: 0xD2, count: 16))!, create: true)
        try sibling.apply(try mount.store.rows(.notebook, from: [], to: nil))
        for key in keys { try sibling.delete(.notebook, key) }
        try mount.store.apply(try sibling.tombstones(.notebook))
        mount.feed()
        return sibling
    }

    private func key(_ mount: DirectMount, _ path: String) throws -> RowKey? {
        let inode = try mount.lookup(path).attributes.inode
        return mount.fileSystem.locked { Self.rowKey(mount.fileSystem.names.inodes.object(inode.rawValue)) }
    }

    private static func rowKey(_ object: NodeObject?) -> RowKey? {
        if case .row(let ref)? = object { return ref.key }
        return nil
    }

    func testAFileWrittenHereIsTheOneItsRenameMovesWhenASiblingsLandsBetween() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        try mount.writeFile("notebook/Plan.md.new", "one\n\nmine\n")
        let mine = try XCTUnwrap(key(mount, "notebook/Plan.md.new"))
        try siblingsFileLands(mount, "Plan.md.new", "one\n\ntheirs\n", like: mine)

        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), mine, "the plain name is still the file written here")
        XCTAssertEqual(try mount.text("notebook/Plan.md.new"), "one\n\nmine\n")
        let names = try mount.list("notebook")
        XCTAssertEqual(names.count, 3, "the note, this file and the sibling's beside it: \(names)")
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
        // The sibling's file is untouched, and takes the plain name now.
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), smallestKey)
        XCTAssertEqual(try mount.text("notebook/Plan.md.new"), "one\n\ntheirs\n")
    }

    func testAFileStillOpenKeepsItsNameWhenASiblingsLands() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        let file = try mount.create("notebook/Plan.md.new")
        try mount.write(file, "one\n\nmine\n")
        let mine = try XCTUnwrap(mount.fileSystem.locked { Self.rowKey(mount.fileSystem.names.inodes.object(file.inode.rawValue)) })
        // The sibling's row is a copy of this one's (same title and kind) once it is stored.
        try mount.close(file)
        let reopened = try mount.open("notebook/Plan.md.new", O_WRONLY | O_APPEND)
        try siblingsFileLands(mount, "Plan.md.new", "one\n\ntheirs\n", like: mine)
        try mount.write(reopened, "\nmore\n", at: 10)
        // Still open past the grace: the claim holds, and its grace starts at the close.
        mount.fileSystem.locked { mount.fileSystem.endClaims(at: Date().addingTimeInterval(ChangeFeed.claimGrace + 1)) }
        try mount.close(reopened)
        mount.fileSystem.locked { mount.fileSystem.endClaims(at: Date().addingTimeInterval(ChangeFeed.claimGrace - 1)) }
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), mine)
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n\nmore\n")
    }

    /// Created and written, not closed yet (not stored yet) when the sibling's lands.
    func testAFileNotStoredYetIsTheOneItsNameOpens() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        try mount.writeFile("notebook/Spare.md.new", "spare\n")
        let spare = try XCTUnwrap(key(mount, "notebook/Spare.md.new"))
        let file = try mount.create("notebook/Plan.md.new")
        try mount.write(file, "one\n\nmine\n")
        try siblingsFileLands(mount, "Plan.md.new", "one\n\ntheirs\n", like: spare)
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new").map { $0 == smallestKey }, false)
        try mount.close(file)
        XCTAssertEqual(try mount.text("notebook/Plan.md.new"), "one\n\nmine\n")
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
        XCTAssertEqual(try mount.text("notebook/Plan.md.new"), "one\n\ntheirs\n")
    }

    /// The sibling's file was here first, and the sibling saved it over its
    /// note (deleting it) between this device's lookup of the name and its
    /// open: the open answers ESTALE, so the kernel looks the name up again
    /// and an O_CREAT open creates this device's own file.
    func testOpeningASiblingsFileDeletedSinceItsLookupAsksTheKernelToLookAgain() throws {
        let (mount, sibling) = try mountWithSiblingsFile()
        let inode = try mount.lookup("notebook/Plan.md.new").attributes.inode
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), smallestKey)
        // The deletion is stored; the change feed has not applied it yet.
        try siblingDeletesItsFile(mount, sibling)
        XCTAssertThrowsError(try mount.fileSystem.open(inode, flags: FuseOpenFlags(rawValue: O_WRONLY | O_TRUNC), request: mount.caller)) {
            XCTAssertEqual($0 as? FuseError, .stale)
        }
        XCTAssertFalse(mount.exists("notebook/Plan.md.new"), "looked up again, the name is free")
        mount.feed()
        try mount.writeFile("notebook/Plan.md.new", "one\n\nmine\n")
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
    }

    /// The kernel found no file of the name and asks to create it; the
    /// sibling's file landed and was deleted meanwhile, and the change feed
    /// has applied only its landing: the create makes this device's file.
    func testCreatingANameWhoseSiblingsFileIsStoredDeletedMakesANewFile() throws {
        let (mount, sibling) = try mountWithSiblingsFile()
        try siblingDeletesItsFile(mount, sibling)
        let reply = try mount.fileSystem.create(parent: try mount.folderInode("notebook"), name: "Plan.md.new", mode: 0o100644,
                                                flags: FuseOpenFlags(rawValue: O_WRONLY | O_CREAT | O_TRUNC), request: mount.caller)
        let file = DirectMount.Descriptor(inode: reply.entry.attributes.inode, handle: reply.open.handle,
                                          flags: FuseOpenFlags(rawValue: O_WRONLY | O_CREAT | O_TRUNC), options: reply.open.options)
        try mount.write(file, "one\n\nmine\n")
        try mount.close(file)
        mount.feed()
        XCTAssertNotEqual(try key(mount, "notebook/Plan.md.new"), smallestKey)
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
        XCTAssertFalse(mount.exists("notebook/Plan.md.new"))
    }

    /// This device opened the sibling's file (it was there first) and is
    /// writing it when the sibling's save deletes it: the write goes on,
    /// and its rename moves this device's text over the note.
    func testASiblingsFileDeletedWhileWrittenHereIsSavedAndMoved() throws {
        let (mount, sibling) = try mountWithSiblingsFile()
        let file = try mount.create("notebook/Plan.md.new")
        try siblingDeletesItsFile(mount, sibling)
        mount.feed()
        try mount.write(file, "one\n\nmine\n")
        try mount.close(file)
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
    }

    /// The same, the deletion landing between the close and the rename.
    func testASiblingsFileDeletedBetweenItsSaveHereAndTheRenameIsMoved() throws {
        let (mount, sibling) = try mountWithSiblingsFile()
        try mount.writeFile("notebook/Plan.md.new", "one\n\nmine\n")
        try siblingDeletesItsFile(mount, sibling)
        mount.feed()
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
    }

    /// A program that keeps its own text (it read the note once) saves by
    /// writing `x.new`, and finds the sibling's `x.new` there (the sibling's
    /// whole text with its new paragraph): what it writes over that file
    /// deletes nothing of the sibling's, in the file or in the note.
    func testWritingOverASiblingsFileOfTheNameDeletesNoneOfItsParagraphs() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n\ntwo\n") }
        var buffer = try XCTUnwrap(mount.text("notebook/Plan.md"))
        buffer += "\nmine1\n"
        try mount.writeFile("notebook/Plan.md.new", buffer)
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        let noteKey = try XCTUnwrap(key(mount, "notebook/Plan.md"))
        // The sibling's paragraph lands, then the sibling's own x.new.
        guard case .note(var note)? = try mount.store.row(.notebook, noteKey)?.content else { return XCTFail("no note") }
        note.body = Array((buffer + "\ntheirs1\n").utf8)
        try mount.store.saveProse(.note(note), key: noteKey)
        mount.feed()
        try mount.writeFile("notebook/Spare.md.new", "spare\n")
        try siblingsFileLands(mount, "Plan.md.new", buffer + "\ntheirs1\n\ntheirs2\n", like: try XCTUnwrap(key(mount, "notebook/Spare.md.new")))
        buffer += "\nmine2\n"
        try mount.writeFile("notebook/Plan.md.new", buffer)
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        let text = try XCTUnwrap(mount.stored(.notebook, "Plan"))
        for word in ["one", "two", "mine1", "theirs1", "mine2"] { XCTAssertTrue(text.contains(word), "\(word) in \(text)") }
    }

    /// The other side of the same race: a sibling wrote its own text over
    /// this device's `x.new` (its program keeps its own text, without this
    /// device's paragraphs) between this device's write and its rename.
    /// The rename deletes from the note only what this device's program
    /// left out: neither the note's paragraphs the sibling's text lacks nor
    /// the paragraph written here are lost, and the sibling's is kept too.
    func testASiblingsTextWrittenOverThisDevicesFileBeforeItsRenameDeletesNothing() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n\ntwo\n") }
        let text = try XCTUnwrap(mount.text("notebook/Plan.md"))
        try mount.writeFile("notebook/Plan.md.new", text + "\nmine\n")
        let mine = try XCTUnwrap(key(mount, "notebook/Plan.md.new"))
        // The sibling opened this device's file and wrote its own text over it.
        _ = try siblingWritesOver(mount, mine, "one\n\ntheirs\n", shown: text + "\nmine\n")
        mount.feed()
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        let saved = try XCTUnwrap(mount.stored(.notebook, "Plan"))
        for word in ["one", "two", "mine", "theirs"] { XCTAssertTrue(saved.contains(word), "\(word) in \(saved)") }
    }

    /// The sibling opened this device's `x.new`, wrote its own text over
    /// it and renamed it over its note, deleting it, all before this
    /// device's rename: the rename still moves what this device wrote (its
    /// name stays while the claim lasts), and nothing of either is lost.
    func testAFileASiblingWroteOverAndDeletedBeforeThisDevicesRenameIsStillMoved() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        let text = try XCTUnwrap(mount.text("notebook/Plan.md"))
        try mount.writeFile("notebook/Plan.md.new", text + "\nmine\n")
        let mine = try XCTUnwrap(key(mount, "notebook/Plan.md.new"))
        let sibling = try siblingWritesOver(mount, mine, "one\n\ntheirs\n", deleting: true)
        mount.feed()
        try mount.rename("notebook/Plan.md.new", "notebook/Plan.md")
        XCTAssertEqual(try mount.stored(.notebook, "Plan"), "one\n\nmine\n")
        XCTAssertFalse(mount.exists("notebook/Plan.md.new"))

        // Not renamed: once the claim ends, the sibling's deletion shows.
        try mount.writeFile("notebook/Other.new", "other\n")
        let other = try XCTUnwrap(key(mount, "notebook/Other.new"))
        try sibling.apply(try mount.store.rows(.notebook, from: [], to: nil))
        try sibling.delete(.notebook, other)
        try mount.store.apply(try sibling.tombstones(.notebook))
        mount.feed()
        XCTAssertTrue(mount.exists("notebook/Other.new"), "claimed still")
        mount.fileSystem.locked { mount.fileSystem.endClaims(at: Date().addingTimeInterval(ChangeFeed.claimGrace + 1)) }
        XCTAssertFalse(mount.exists("notebook/Other.new"))
    }

    /// Only a write restarts the claim's grace: a program reading the file
    /// now and then (an indexer, a `cat` in a loop) must not keep this
    /// device's names apart from every other device's for ever.
    func testReadingTheFileDoesNotProlongTheClaim() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        try mount.writeFile("notebook/Plan.md.new", "mine\n")
        let mine = try XCTUnwrap(key(mount, "notebook/Plan.md.new"))
        let ref = RowRef(namespace: .notebook, key: mine)
        try siblingsFileLands(mount, "Plan.md.new", "theirs\n", like: mine)
        // Written 20 s ago, read now.
        mount.fileSystem.locked { _ = mount.fileSystem.names.claim(ref, at: Date(timeIntervalSinceNow: -20)) }
        let reader = try mount.open("notebook/Plan.md.new", O_RDONLY)
        try mount.close(reader)
        mount.fileSystem.locked { mount.fileSystem.endClaims(at: Date(timeIntervalSinceNow: ChangeFeed.claimGrace - 15)) }
        XCTAssertFalse(mount.fileSystem.locked { mount.fileSystem.names.isClaimed(ref) }, "the read did not start the grace again")
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), smallestKey, "the plain name is every device's again")
        // A close after writing does.
        let other = try mount.create("notebook/Other.md")
        try mount.write(other, "x\n")
        try mount.close(other)
        let otherRef = RowRef(namespace: .notebook, key: try XCTUnwrap(key(mount, "notebook/Other.md")))
        mount.fileSystem.locked { _ = mount.fileSystem.names.claim(otherRef, at: Date(timeIntervalSinceNow: -20)) }
        let writer = try mount.open("notebook/Other.md", O_WRONLY | O_APPEND)
        try mount.write(writer, "y\n", at: 2)
        try mount.close(writer)
        mount.fileSystem.locked { mount.fileSystem.endClaims(at: Date(timeIntervalSinceNow: ChangeFeed.claimGrace - 15)) }
        XCTAssertTrue(mount.fileSystem.locked { mount.fileSystem.names.isClaimed(otherRef) })
    }

    /// The claim is local and short: once it ends, every device lists the
    /// same names again (the smaller key plain).
    func testTheClaimEndsAfterItsGraceAndTheNamesAreEveryDevicesAgain() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        try mount.writeFile("notebook/Plan.md.new", "mine\n")
        let mine = try XCTUnwrap(key(mount, "notebook/Plan.md.new"))
        try siblingsFileLands(mount, "Plan.md.new", "theirs\n", like: mine)
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), mine)

        let invalidations = mount.fileSystem.locked { () -> [Invalidation] in
            mount.fileSystem.endClaims(at: Date().addingTimeInterval(1))
            XCTAssertTrue(mount.fileSystem.names.isClaimed(RowRef(namespace: .notebook, key: mine)), "within its grace")
            mount.fileSystem.endClaims(at: Date().addingTimeInterval(ChangeFeed.claimGrace + 1))
            XCTAssertFalse(mount.fileSystem.names.isClaimed(RowRef(namespace: .notebook, key: mine)))
            // File watchers hear of both names that changed hands.
            let news = mount.fileSystem.watcherNotices.take()
            XCTAssertEqual(news.count, 2, "\(news)")
            XCTAssertTrue(news.contains { if case .renamed(_, _, let name, _, _, _, _, _) = $0 { return name == CanonicalName("Plan.md.new") } else { return false } },
                          "this device's file moved to its marker name: \(news)")
            XCTAssertTrue(news.contains { if case .created(_, let name, _, _, _) = $0 { return name == CanonicalName("Plan.md.new") } else { return false } },
                          "the sibling's file came under the plain name: \(news)")
            return mount.fileSystem.kernelCache.take()
        }
        XCTAssertTrue(invalidations.contains { if case .entry(_, let name) = $0 { return name == CanonicalName("Plan.md.new") } else { return false } },
                      "the kernel forgets the name that changed hands: \(invalidations)")
        XCTAssertEqual(try key(mount, "notebook/Plan.md.new"), smallestKey)
        XCTAssertEqual(try mount.text("notebook/Plan.md.new"), "theirs\n")
        let other = try XCTUnwrap(try mount.list("notebook").first { $0 != "Plan.md" && $0 != "Plan.md.new" })
        XCTAssertEqual(try mount.text("notebook/" + other), "mine\n")
    }

    /// Files written here a moment ago (still claimed), deleted by a
    /// sibling; then a program saves each by renaming a new file over its
    /// name: the files are back where they were, under their names and
    /// kinds, with the new text (not a note without a title at the top).
    func testARenameOntoAClaimedFileASiblingDeletedKeepsItsNameFolderAndKind() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/att")
        try mount.writeFile("notebook/att/Loc.md", "a\n")
        try mount.writeFile("notebook/att/pic.jpg", "a\n")
        let keys = try ["notebook/att/Loc.md", "notebook/att/pic.jpg"].map { try XCTUnwrap(key(mount, $0)) }
        try siblingDeletes(mount, keys)
        for name in ["Loc.md", "pic.jpg"] {
            try mount.writeFile("notebook/att/\(name).new", "b\n")
            try mount.rename("notebook/att/\(name).new", "notebook/att/\(name)")
        }
        XCTAssertEqual(try mount.list("notebook/att"), ["Loc.md", "pic.jpg"])
        XCTAssertEqual(try mount.text("notebook/att/Loc.md"), "b\n")
        XCTAssertEqual(try mount.text("notebook/att/pic.jpg"), "b\n")
        let rows = try mount.store.summaries(.notebook).filter { $0.place.kind != .folder }
        XCTAssertEqual(Set(rows.map(\.name)), ["Loc", "pic.jpg"], "\(rows.map(\.name))")
        let att = try XCTUnwrap(mount.store.summaries(.notebook).first { $0.name == "att" }?.key)
        XCTAssertEqual(rows.map(\.place.folder), [att, att])
        XCTAssertEqual(rows.first { $0.name == "pic.jpg" }?.place.kind, .file)
    }

    /// A file created here and deleted by a sibling keeps its name only
    /// for its program's rename, a moment after its last close: then the
    /// deletion shows (a listing, `rm -r`), not after the whole claim.
    func testASiblingsDeletionOfAFileCreatedHereShowsAfterAMoment() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/att")
        try mount.writeFile("notebook/att/a.md", "a\n")
        try mount.writeFile("notebook/att/old.md", "old\n")
        let keys = try ["notebook/att/a.md", "notebook/att/old.md"].map { try XCTUnwrap(key(mount, $0)) }
        let old = RowRef(namespace: .notebook, key: keys[1])
        mount.fileSystem.locked { mount.fileSystem.names.renewClaim(old, at: Date(timeIntervalSinceNow: -10)) }
        let sibling = try siblingDeletes(mount, keys)
        XCTAssertEqual(try mount.list("notebook/att"), ["a.md"], "closed 10 s ago: its deletion shows at once")
        try mount.writeFile("notebook/att/b.md", "b\n")
        try siblingDeletes(mount, [try XCTUnwrap(key(mount, "notebook/att/b.md"))], sibling: sibling)
        XCTAssertEqual(try mount.list("notebook/att"), ["a.md", "b.md"])
        try mount.unlink("notebook/att/b.md")
        XCTAssertEqual(try mount.list("notebook/att"), ["a.md"], "rm of one kept for its program")
        XCTAssertNotNil(mount.fileSystem.locked { mount.fileSystem.ghosts.nextDeadline(grace: ChangeFeed.ghostGrace) })
        mount.fileSystem.locked { mount.fileSystem.endGhosts(at: Date(timeIntervalSinceNow: ChangeFeed.ghostGrace + 1)) }
        XCTAssertEqual(try mount.list("notebook/att"), [])
        try mount.rmdir("notebook/att")
        XCTAssertEqual(try mount.liveTitles(.notebook), [])
    }

    /// A backup of two notes that shared a title (`Ideas.md` and its twin
    /// `Ideas%~1a2b3c4d.md`) copied back into a quire folder: a name with a
    /// mark no file has is made only beside a first file of its title
    /// whose key sorts before the mark, where every device gives it that
    /// name; anywhere else every device would list it as `Ideas.md` (and
    /// this one too, once its claim ended), so it is refused at once with
    /// a line that says what to name it. (`cp` and `rsync` go twin first,
    /// `%` sorting before `.`: that copy of the twin fails, and says why.)
    func testACopiedNameWithAMarkKeepsItOnEveryDeviceOrIsRefused() throws {
        let mount = try DirectMount()
        XCTAssertThrowsError(try mount.writeFile("notebook/Ideas%~1a2b3c4d.md", "the twin\n")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertTrue(mount.fileSystem.log.recentProblems.contains { $0.contains("Ideas%~1a2b3c4d.md refused") && $0.contains("'Ideas%25~1a2b3c4d.md'") },
                      "\(mount.fileSystem.log.recentProblems)")
        XCTAssertThrowsError(try mount.writeFile("plans/Foo%~12345678.ics", "")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        // rsync's way: a temp file renamed to the name.
        try mount.writeFile("notebook/.Plan%~0badcafe.md.X1y2Z3", "plan twin\n")
        XCTAssertThrowsError(try mount.rename("notebook/.Plan%~0badcafe.md.X1y2Z3", "notebook/Plan%~0badcafe.md")) {
            XCTAssertEqual($0 as? FuseError, .invalid)
        }
        XCTAssertEqual(try mount.text("notebook/.Plan%~0badcafe.md.X1y2Z3"), "plan twin\n", "the text is where it was")
        try mount.unlink("notebook/.Plan%~0badcafe.md.X1y2Z3")
        XCTAssertEqual(try mount.list("notebook"), [])
        XCTAssertEqual(try mount.list("plans"), [])
        XCTAssertEqual(try mount.liveTitles(.notebook), [])
        // The name of a title that holds the mark's text is made, and kept.
        try mount.writeFile("plans/Foo%25~12345678.ics", "")
        XCTAssertEqual(try mount.liveTitles(.plans), ["Foo%~12345678"])

        // Beside its first file: a mark that sorts after the first's key
        // is every device's name for the twin; one before it is refused.
        try mount.writeFile("notebook/Ideas.md", "the first\n")
        XCTAssertThrowsError(try mount.writeFile("notebook/Ideas%~00000000.md", "before\n")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        try mount.writeFile("notebook/.Ideas%~ffffffff.md.Q9w8E7", "the twin\n")
        try mount.rename("notebook/.Ideas%~ffffffff.md.Q9w8E7", "notebook/Ideas%~ffffffff.md")
        try mount.writeFile("plans/Ship.ics", "")
        try mount.writeFile("plans/Ship%~ffffffff.ics", "")
        mount.fileSystem.locked { mount.fileSystem.endClaims(at: Date(timeIntervalSinceNow: ChangeFeed.claimGrace + 1)) }
        XCTAssertEqual(try mount.list("notebook"), ["Ideas%~ffffffff.md", "Ideas.md"])
        XCTAssertEqual(try mount.text("notebook/Ideas%~ffffffff.md"), "the twin\n")
        XCTAssertEqual(try mount.text("notebook/Ideas.md"), "the first\n")
        XCTAssertEqual(try mount.list("plans"), ["Foo%25~12345678.ics", "Ship%~ffffffff.ics", "Ship.ics"])
        // What every device lists: names made from the rows alone, no claim.
        var listing = NamespaceListing(namespace: .plans, summaries: try mount.store.summaries(.plans))
        XCTAssertEqual(listing.sortedNames(in: nil).map(\.text), ["Foo%25~12345678.ics", "Ship%~ffffffff.ics", "Ship.ics"])
    }
}
