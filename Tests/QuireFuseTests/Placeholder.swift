import XCTest

final class QuireFuseTestsPlaceholder: XCTestCase {}
