import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// khard and todoman read a card, the user edits it in `$EDITOR`, and the
/// tool writes it back whole (in place or by a rename): a change another
/// device made meanwhile, which synced in, survives the write.
final class CardsWrittenBackTests: XCTestCase {
    private func card(_ lines: [String]) -> String { lines.map { $0 + "\r\n" }.joined() }

    /// Another writer's version of the card (a sibling's, as the store holds it after a sync).
    private func changedElsewhere(_ mount: DirectMount, _ namespace: Namespace, _ title: String, to text: String) throws {
        let key = try XCTUnwrap(mount.store.summaries(namespace).first { $0.name == title }?.key)
        let previous = try mount.store.row(namespace, key)?.content
        _ = try mount.store.put(try RowFormat.parse(namespace, title: title, bytes: Array(text.utf8), previous: previous, key: key), key: key)
        mount.feed()
    }

    func testAContactWrittenBackInPlaceKeepsAPhoneChangedMeanwhile() throws {
        let mount = try DirectMount()
        let uid = "UID:urn:uuid:6f1c3a52-0000-4000-8000-000000000001"
        try mount.writeFile("contacts/Pat.vcf", card(["BEGIN:VCARD", "VERSION:4.0", uid, "FN:Pat", "TEL:+44 9999", "NOTE:old", "END:VCARD"]))
        let read = try XCTUnwrap(mount.text("contacts/Pat.vcf"), "the tool reads the card")
        try changedElsewhere(mount, .contacts, "Pat", to: read.replacingOccurrences(of: "TEL:+44 9999", with: "TEL:+44 2222"))
        let file = try mount.open("contacts/Pat.vcf", O_WRONLY | O_TRUNC)
        try mount.write(file, read.replacingOccurrences(of: "NOTE:old", with: "NOTE:new"))
        try mount.close(file)
        let stored = try XCTUnwrap(mount.stored(.contacts, "Pat"))
        XCTAssertTrue(stored.contains("TEL:+44 2222"), stored)
        XCTAssertFalse(stored.contains("9999"), stored)
        XCTAssertTrue(stored.contains("NOTE:new"), stored)
        XCTAssertEqual(try mount.text("contacts/Pat.vcf"), stored, "the file shows what is stored")
    }

    func testATodoSavedByRenameKeepsALocationChangedMeanwhile() throws {
        let mount = try DirectMount()
        try mount.writeFile("plans/Ship.ics", card(["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", "BEGIN:VTODO",
                                                    "UID:ship-1", "SUMMARY:Ship", "LOCATION:Dock", "END:VTODO", "END:VCALENDAR"]))
        let read = try XCTUnwrap(mount.text("plans/Ship.ics"))
        try changedElsewhere(mount, .plans, "Ship", to: read.replacingOccurrences(of: "LOCATION:Dock", with: "LOCATION:Pier 4"))
        try mount.writeFile("plans/Ship.ics.new", read.replacingOccurrences(of: "SUMMARY:Ship", with: "SUMMARY:Ship v1"))
        try mount.rename("plans/Ship.ics.new", "plans/Ship.ics")
        let stored = try XCTUnwrap(mount.stored(.plans, "Ship"))
        XCTAssertTrue(stored.contains("LOCATION:Pier 4"), stored)
        XCTAssertFalse(stored.contains("Dock"), stored)
        XCTAssertTrue(stored.contains("SUMMARY:Ship v1"), stored)
    }

    /// `printf … > card.vcf`: the redirection's first close saves no stub
    /// for the text to land on; the card is the text written.
    func testAShellRedirectionIntoACardStoresTheText() throws {
        let mount = try DirectMount()
        try mount.writeFile("plans/Ship.ics", card(["BEGIN:VCALENDAR", "VERSION:2.0", "BEGIN:VTODO", "UID:ship-1", "SUMMARY:Ship",
                                                    "RRULE:FREQ=WEEKLY", "END:VTODO", "END:VCALENDAR"]))
        let text = card(["BEGIN:VCALENDAR", "VERSION:2.0", "BEGIN:VTODO", "UID:ship-1", "SUMMARY:Ship", "END:VTODO", "END:VCALENDAR"])
        let file = try mount.open("plans/Ship.ics", O_WRONLY | O_TRUNC)
        try mount.fileSystem.flush(file.inode, handle: file.handle, request: mount.caller)
        try mount.write(file, text)
        try mount.close(file)
        XCTAssertEqual(try mount.stored(.plans, "Ship"), text)
    }

    /// `: > card.vcf`, then the card written into it: the lines quire
    /// filled the empty card with (VERSION, UID, FN) are no edit of the
    /// program's, which was shown an empty file and wrote the whole card.
    func testACardWrittenIntoAFileMadeEmptyFirstIsTheCardWritten() throws {
        let mount = try DirectMount()
        try mount.writeFile("contacts/e1.vcf", "")
        XCTAssertTrue(try XCTUnwrap(mount.stored(.contacts, "e1")).contains("FN:e1"), "an empty card holds its name")
        let text = "BEGIN:VCARD\nVERSION:3.0\nUID:e1\nFN:Written\nEND:VCARD\n"
        let file = try mount.open("contacts/e1.vcf", O_WRONLY | O_TRUNC)
        try mount.write(file, text)
        try mount.close(file)
        XCTAssertEqual(try mount.stored(.contacts, "e1"), text)
    }

    /// A card with no VERSION line is refused at close() as a card of
    /// another version is (which one was meant is not guessed): the text
    /// is kept beside it as `.rejected`, the stored card is left as it was.
    func testACardWithoutAVersionIsRefusedAndKeptBesideIt() throws {
        let mount = try DirectMount()
        let stored = card(["BEGIN:VCARD", "VERSION:4.0", "UID:nover-1", "FN:NoVer", "END:VCARD"])
        try mount.writeFile("contacts/nover.vcf", stored)
        let unversioned = "BEGIN:VCARD\nFN:NoVer\nEMAIL:n@x\nEND:VCARD\n"
        XCTAssertThrowsError(try mount.writeFile("contacts/nover.vcf", unversioned)) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertEqual(try mount.stored(.contacts, "nover"), stored)
        XCTAssertEqual(try mount.text("contacts/nover.vcf.rejected"), unversioned)
        XCTAssertTrue(mount.fileSystem.log.recentProblems.contains { $0.contains("contacts/nover.vcf") && $0.contains("has no VERSION line") },
                      "\(mount.fileSystem.log.recentProblems)")
        // A new file holding such a card is refused too, and nothing is stored.
        XCTAssertThrowsError(try mount.writeFile("contacts/fresh.vcf", unversioned)) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertNil(try mount.stored(.contacts, "fresh"))
        XCTAssertEqual(try mount.text("contacts/fresh.vcf.rejected"), unversioned)
    }
}
