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
