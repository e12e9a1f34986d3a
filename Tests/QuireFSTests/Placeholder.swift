import XCTest

final class QuireFSTestsPlaceholder: XCTestCase {}
