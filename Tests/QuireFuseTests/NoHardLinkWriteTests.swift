import Foundation
import QuireFuse
import QuireStore
import XCTest

/// `AtomicFile.write(replacing: false)` (a backup written with `quire
/// backup --to`) on a disk that has no hard links, as FAT and exFAT sticks
/// do not: the memory filesystem here answers link(2) as they do. The file
/// is still written, and a name already taken is still never replaced.
final class NoHardLinkWriteTests: XCTestCase {
    private var mounted: MountedFileSystem!

    override func setUpWithError() throws { mounted = try MountedFileSystem() }

    override func tearDown() {
        mounted?.close()
        mounted = nil
    }

    func testANewFileIsWrittenAndATakenNameIsNeverReplaced() throws {
        let target = mounted.path("backup.qbackup")
        try "probe".write(toFile: mounted.path("probe"), atomically: false, encoding: .utf8)
        XCTAssertNotEqual(link(mounted.path("probe"), mounted.path("probe-link")), 0, "this disk must have no hard links")
        try FileManager.default.removeItem(atPath: mounted.path("probe"))

        try AtomicFile.write(Array("first backup".utf8), to: target, mode: 0o600, replacing: false)
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "first backup")

        XCTAssertThrowsError(try AtomicFile.write(Array("second".utf8), to: target, mode: 0o600, replacing: false)) { error in
            XCTAssertTrue("\(error)".contains("already exists"), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "first backup")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mounted.mountpoint), ["backup.qbackup"],
                       "no temporary file is left beside it")
    }
}
