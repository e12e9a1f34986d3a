import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// A mount only its owner reaches is mounted without `default_permissions`,
/// so access(2) and chdir ask the filesystem: it answers from the same
/// permission bits stat shows.
final class AccessTests: XCTestCase {
    func testAccessAnswersFromThePermissionBitsStatShows() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "one\n") }
        let note = try mount.lookup("notebook/Plan.md").attributes
        let notebook = try mount.lookup("notebook").attributes
        let memory = try mount.lookup("memory").attributes
        XCTAssertEqual(note.permissions, 0o644)
        XCTAssertEqual(memory.permissions, 0o555)

        let root = FuseRequest(uid: 0, gid: 0, pid: getpid())
        XCTAssertNoThrow(try mount.fileSystem.access(note.inode, mask: [.read, .write], request: root))
        XCTAssertNoThrow(try mount.fileSystem.access(notebook.inode, mask: [.write, .execute], request: root))
        XCTAssertThrowsError(try mount.fileSystem.access(note.inode, mask: .execute, request: root), "a note has no x bit") {
            XCTAssertEqual($0 as? FuseError, .permissionDenied)
        }

        let other = FuseRequest(uid: 4242, gid: 4242, pid: getpid())
        XCTAssertNoThrow(try mount.fileSystem.access(note.inode, mask: .read, request: other))
        XCTAssertNoThrow(try mount.fileSystem.access(notebook.inode, mask: [.read, .execute], request: other))
        for (inode, mask) in [(note.inode, FuseAccessMask.write), (notebook.inode, .write), (memory.inode, .write)] {
            XCTAssertThrowsError(try mount.fileSystem.access(inode, mask: mask, request: other), "\(inode) \(mask)") {
                XCTAssertEqual($0 as? FuseError, .permissionDenied)
            }
        }
        XCTAssertThrowsError(try mount.fileSystem.access(FuseInode(999_999), mask: .read, request: root)) {
            XCTAssertEqual($0 as? FuseError, .noEntry)
        }
    }
}
