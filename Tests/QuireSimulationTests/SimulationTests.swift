import XCTest
import QuireSimulation

final class SimulationTests: XCTestCase {
    func testOneSeedRuns() throws {
        let result = Simulation(seed: 1).run()
        print(result.trace ?? "passed")
    }
}
