import Foundation
import XCTest

/// Real programs on one note through a real `quire mount`, in one shell:
/// `echo … >` is a builtin, so every redirection is the shell's own write.
final class ShellRedirectionEndToEndTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    /// A shell writes a note with `>`, vim and then `git checkout` rewrite
    /// it, and the same shell writes it with `>` after each: the note is
    /// what the shell wrote last. The other program's text had been kept
    /// beside it (`final version` then `brand new`), as if a sibling's
    /// paragraph the shell was never shown.
    func testAShellsRedirectionAfterVimOrGitRewroteTheNoteIsTheNewTextAlone() throws {
        device = try MountedDevice()
        let note = device.path("notebook/S.md"), afterVim = device.directory + "/after-vim.md"
        let git = "git -c user.email=q@example.org -c user.name=q --git-dir='\(device.directory)/repo.git' --work-tree='\(device.path("notebook"))'"
        let script = """
            set -e
            echo draft > '\(note)'
            vim -u NONE -es -c '%s/draft/final version/' -c wq '\(note)'
            echo 'brand new' > '\(note)'
            cp '\(note)' '\(afterVim)'
            \(git) init -q && \(git) add S.md && \(git) commit -qm one
            echo 'edit 1' > '\(note)'
            \(git) checkout -q -- S.md
            echo 'edit 2' > '\(note)'
            """
        let run = shell(script)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(try String(contentsOfFile: afterVim, encoding: .utf8), "brand new\n")
        XCTAssertEqual(try device.text("notebook/S.md"), "edit 2\n")
    }
}
