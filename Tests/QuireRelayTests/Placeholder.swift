import XCTest

final class QuireRelayTestsPlaceholder: XCTestCase {}
