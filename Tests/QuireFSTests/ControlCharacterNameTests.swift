import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import XCTest

/// A note's, plan's or card's name is its title escaped, and escaping
/// writes a control character as `%XX` (and `%~` as `%25~`): a file made
/// through the mount under a name holding one (`new\nline.md`, copied
/// from elsewhere) would be listed under another name than the one its
/// program made.
final class ControlCharacterNameTests: XCTestCase {
    private func refusal(_ mount: DirectMount, naming listed: String) -> Bool {
        mount.fileSystem.log.recentProblems.contains { $0.contains("control character (U+000A)") && $0.contains("'\(listed)'") }
    }

    /// Made by create or by a temp file renamed to it (rsync), or given to
    /// a note by a rename: refused with EINVAL and a line that says how the
    /// file would be listed. An `rsync --delete` mirror of a folder with
    /// such a file deleted it and made it again at every run (a tombstone
    /// and a new row each time, on every device).
    func testANoteNamedWithAControlCharacterIsRefused() throws {
        let mount = try DirectMount()
        XCTAssertThrowsError(try mount.writeFile("notebook/new\nline.md", "x\n")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertTrue(refusal(mount, naming: "new%0Aline.md"), "\(mount.fileSystem.log.recentProblems)")
        try mount.writeFile("notebook/.new\nline.md.X1y2Z3", "from rsync\n")
        XCTAssertThrowsError(try mount.rename("notebook/.new\nline.md.X1y2Z3", "notebook/new\nline.md")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertEqual(try mount.text("notebook/.new\nline.md.X1y2Z3"), "from rsync\n", "the text is where it was")
        try mount.unlink("notebook/.new\nline.md.X1y2Z3")
        try mount.writeFile("notebook/a.md", "a\n")
        XCTAssertThrowsError(try mount.rename("notebook/a.md", "notebook/tab\there.md")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertThrowsError(try mount.writeFile("plans/x\ty.ics", "")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        // `%~` that is no key mark is shown as `%25~`: the same.
        XCTAssertThrowsError(try mount.writeFile("notebook/50%~ off.md", "x\n")) { XCTAssertEqual($0 as? FuseError, .invalid) }
        XCTAssertTrue(mount.fileSystem.log.recentProblems.contains { $0.contains("'50%25~ off.md'") }, "\(mount.fileSystem.log.recentProblems)")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["a"])
        XCTAssertEqual(try mount.liveTitles(.plans), [])

        // The names the mount lists for those titles are made, and kept.
        try mount.writeFile("notebook/new%0Aline.md", "escaped\n")
        try mount.rename("notebook/a.md", "notebook/tab%09here.md")
        try mount.writeFile("notebook/50%25~ off.md", "y\n")
        XCTAssertEqual(try mount.list("notebook"), ["50%25~ off.md", "new%0Aline.md", "tab%09here.md"])
        XCTAssertEqual(try mount.liveTitles(.notebook), ["50%~ off", "new\nline", "tab\there"])
    }

    /// Attachments and folders are listed under their names as they are
    /// (macOS's `Icon\r`, a folder with a tab): nothing is refused.
    func testAttachmentsAndFoldersKeepControlCharacters() throws {
        let mount = try DirectMount()
        try mount.writeFile("notebook/Icon\r", "")
        try mount.mkdir("notebook/dir\tx")
        try mount.writeFile("notebook/dir\tx/photo\t1.jpg", "bytes")
        XCTAssertEqual(try mount.list("notebook"), ["Icon\r", "dir\tx"])
        XCTAssertEqual(try mount.list("notebook/dir\tx"), ["photo\t1.jpg"])
    }
}
