import XCTest

final class QuireStoreTestsPlaceholder: XCTestCase {}
