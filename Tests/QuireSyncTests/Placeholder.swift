import XCTest

final class QuireSyncTestsPlaceholder: XCTestCase {}
