import QuireFuse
@testable import QuireFS
import XCTest

/// `.quire/status` lists recent problems; a burst of one kind shows once.
final class MountLogTests: XCTestCase {
    func testABurstOfOneKindTakesOneLine() {
        let log = MountLog(path: nil)
        log.problem("a row could not be saved")
        for n in 1...60 { log.problem("link to object \(n) refused", kind: "link") }
        log.problem("symlink refused", kind: "symlink")
        let problems = log.recentProblems
        XCTAssertEqual(problems.count, 3, "\(problems)")
        XCTAssertTrue(problems[0].hasSuffix("a row could not be saved"), "the other problem is still there")
        XCTAssertTrue(problems[1].hasSuffix("link to object 60 refused (and 59 more like it before)"), problems[1])
        XCTAssertTrue(problems[2].hasSuffix("symlink refused"))
        for n in 1...60 { log.problem("problem \(n)") }
        XCTAssertEqual(log.recentProblems.count, 50, "at most 50 kept")
    }
}

/// Refusals the user should hear of, and one that is part of a program's
/// normal work.
final class RefusalReportTests: XCTestCase {
    func testEmacsLockSymlinkIsRefusedWithoutAProblem() throws {
        let mount = try DirectMount { try $0.putNote("Note", "text\n") }
        let notebook = try mount.folderInode("notebook")
        // Emacs falls back to a plain lock file on EPERM: refused, not reported.
        XCTAssertThrowsError(try mount.fileSystem.makeSymbolicLink(parent: notebook, name: ".#Note.md", target: "me@host.1:1", request: mount.caller)) {
            XCTAssertEqual($0 as? FuseError, .notPermitted)
        }
        XCTAssertEqual(mount.fileSystem.configuration.log.recentProblems, [])
        try mount.writeFile("notebook/.#Note.md", "me@host.1:1")
        XCTAssertEqual(try mount.text("notebook/.#Note.md"), "me@host.1:1", "the plain lock file works, on this device")
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Note"])
        // Any other symlink is a problem the status names.
        XCTAssertThrowsError(try mount.fileSystem.makeSymbolicLink(parent: notebook, name: "link.md", target: "Note.md", request: mount.caller))
        XCTAssertEqual(mount.fileSystem.configuration.log.recentProblems.count, 1)
        XCTAssertTrue(mount.fileSystem.configuration.log.recentProblems[0].contains("symlink notebook/link.md refused"),
                      "\(mount.fileSystem.configuration.log.recentProblems)")
    }
}
