@testable import QuireFuse
import XCTest

final class MountTableTests: XCTestCase {
    func testParsesProcMountsAndDecodesOctalEscapes() {
        let table = """
        proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
        my\\040notes /home/ann/My\\040Notes\\011tab\\134x fuse.quire rw,nosuid,nodev,relatime,user_id=0,group_id=0,default_permissions 0 0

        """
        let entries = FuseMounts.parse(table)
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(entries[1].source, "my notes")
        XCTAssertEqual(entries[1].mountpoint, "/home/ann/My Notes\ttab\\x")
        XCTAssertEqual(entries[1].type, "fuse.quire")
        XCTAssertEqual(entries[1].subtype, "quire")
        XCTAssertTrue(entries[1].isFuse)
        XCTAssertFalse(entries[0].isFuse)
        XCTAssertTrue(entries[1].options.contains("default_permissions"))
        // A backslash not followed by three octal digits stays as written.
        XCTAssertEqual(FuseMounts.decodeOctalEscapes("a\\9b\\04"), "a\\9b\\04")
    }

    func testAbsolutePathMatchesTheMountTableSpelling() {
        XCTAssertEqual(FuseMounts.absolutePath("/tmp/./x/"), (FuseMounts.absolutePath("/tmp")) + "/x")
        XCTAssertEqual(FuseMounts.absolutePath("/"), "/")
        XCTAssertTrue(FuseMounts.absolutePath("relative").hasPrefix("/"))
    }

    func testRootIsMountedAndAPlainDirectoryIsNot() {
        XCTAssertTrue(FuseMounts.isMounted("/"))
        XCTAssertFalse(FuseMounts.isMounted(NSTemporaryDirectory() + "surely-not-a-mountpoint"))
    }

    func testErrnoNamesAndConversion() {
        XCTAssertEqual(FuseError.noEntry.rawValue, ENOENT)
        XCTAssertEqual(FuseError.notSupported.rawValue, ENOSYS)
        XCTAssertEqual(FuseError.noData.rawValue, ENODATA)
        XCTAssertTrue(FuseError.noEntry.description.contains("No such file"))
        struct Other: Error {}
        struct Mapped: FuseErrorConvertible { var fuseError: FuseError { .readOnly } }
        XCTAssertEqual(FuseError.replying(to: Other()), .io)
        XCTAssertEqual(FuseError.replying(to: Mapped()), .readOnly)
        XCTAssertEqual(FuseError.replying(to: FuseError.exists), .exists)
    }

    func testOptionsRenderAsOneEscapedDashO() {
        var options = FuseSession.Options()
        options.fileSystemName = "notes,of ann"
        options.isReadOnly = true
        options.extraOptions = ["max_read=65536"]
        XCTAssertEqual(options.arguments, [
            "quire", "-o", "fsname=notes\\,of ann,subtype=quire,default_permissions,ro,max_read=65536",
        ])
    }

    func testBadOptionIsRejectedBeforeMounting() {
        var options = FuseSession.Options()
        options.extraOptions = ["no_such_option_quire"]
        XCTAssertThrowsError(try FuseSession(fileSystem: MemoryFileSystem(), mountpoint: "/tmp", options: options)) {
            guard case .invalidOptions = $0 as? FuseSessionError else { return XCTFail("\($0)") }
        }
    }
}
