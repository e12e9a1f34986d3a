@testable import QuireFuse
import Synchronization
import XCTest

/// The session's count of the kernel's references, without a mount.
final class LookupCountsTests: XCTestCase {
    final class Forgetful: FuseFileSystem {
        let forgotten = Mutex<[UInt64]>([])
        func forgotten(_ inode: FuseInode) { forgotten.withLock { $0.append(inode.rawValue) } }
        var list: [UInt64] { forgotten.withLock { $0 } }
    }

    func testZeroIsReportedOnceAndOnlyAtZero() {
        let counts = LookupCounts(), fileSystem = Forgetful()
        counts.beginHandingOut()
        counts.endHandingOut([7, 7, 8], fileSystem: fileSystem)
        XCTAssertEqual(counts.count(of: 7), 2)
        counts.forget(7, 1, fileSystem: fileSystem)
        XCTAssertEqual(fileSystem.list, [])
        counts.forget(7, 1, fileSystem: fileSystem)
        XCTAssertEqual(fileSystem.list, [7])
        counts.forget(7, 1, fileSystem: fileSystem)
        counts.forget(1, 1, fileSystem: fileSystem)
        XCTAssertEqual(fileSystem.list, [7], "never counted: not reported")
        counts.forget(8, 5, fileSystem: fileSystem)
        XCTAssertEqual(fileSystem.list, [7, 8], "a forget of more than was counted ends at zero")
        XCTAssertEqual(counts.count, 0)
    }

    /// A zero reached while a request is handing entries out waits for it:
    /// if that request hands the inode out again, nothing is forgotten.
    func testAZeroWaitsForRequestsInFlight() {
        let counts = LookupCounts(), fileSystem = Forgetful()
        counts.beginHandingOut()
        counts.endHandingOut([3, 4], fileSystem: fileSystem)
        counts.beginHandingOut()                      // a lookup that will answer 3 again
        counts.forget(3, 1, fileSystem: fileSystem)
        counts.forget(4, 1, fileSystem: fileSystem)
        XCTAssertEqual(fileSystem.list, [], "held while the lookup is in flight")
        counts.endHandingOut([3], fileSystem: fileSystem)
        XCTAssertEqual(fileSystem.list, [4], "3 was handed out again; 4 was not")
        XCTAssertEqual(counts.count(of: 3), 1)
    }
}
