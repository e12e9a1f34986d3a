import Glibc
import QuireFuse
import XCTest

/// `FuseAttributes.permits` decides as the kernel's `default_permissions`
/// check does.
final class PermissionTests: XCTestCase {
    func testOwnerGroupAndOthersGetTheirOwnBitsAndRootNeedsAnXToExecute() {
        let file = FuseAttributes(inode: 7, kind: .regular, permissions: 0o640, uid: 1000, gid: 100)
        let owner = FuseRequest(uid: 1000, gid: 100, pid: 1)
        let group = FuseRequest(uid: 1001, gid: 100, pid: 1)
        let other = FuseRequest(uid: 1002, gid: 200, pid: 1)
        let root = FuseRequest(uid: 0, gid: 0, pid: 1)
        XCTAssertTrue(file.permits([.read, .write], for: owner))
        XCTAssertFalse(file.permits(.execute, for: owner))
        XCTAssertTrue(file.permits(.read, for: group))
        XCTAssertFalse(file.permits([.read, .write], for: group), "every bit asked must be granted")
        XCTAssertFalse(file.permits(.read, for: other))
        XCTAssertTrue(file.permits([], for: other), "F_OK asks for nothing")
        XCTAssertTrue(file.permits([.read, .write], for: root))
        XCTAssertFalse(file.permits(.execute, for: root))

        var readOnly = file
        readOnly.permissions = 0o444
        XCTAssertFalse(readOnly.permits(.write, for: owner), "the owner's own bits count, not the others'")
        XCTAssertTrue(readOnly.permits(.write, for: root))

        var script = file
        script.permissions = 0o701
        XCTAssertTrue(script.permits(.execute, for: root), "root executes a file with any x bit")
        XCTAssertTrue(script.permits(.execute, for: other))
        XCTAssertFalse(script.permits(.execute, for: group), "the group's bits, not the others'")

        let folder = FuseAttributes(inode: 8, kind: .directory, permissions: 0o555, uid: 1000, gid: 100)
        XCTAssertFalse(folder.permits(.write, for: owner))
        XCTAssertTrue(folder.permits([.read, .execute], for: owner))
        XCTAssertTrue(folder.permits([.write, .execute], for: root))
    }
}
