import XCTest

final class QuireCoreTestsPlaceholder: XCTestCase {}
