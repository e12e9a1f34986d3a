import Foundation
import XCTest

/// Devices of one account on the local relay with a cloud folder, on the
/// barrier drill's short timings: the set-up the restore and revocation
/// end-to-end suites share.
class CloudDrillTestCase: XCTestCase {
    var dir = ""
    let env = ["QUIRE_PASSPHRASE": "correct horse battery staple"]
    let drill = ["QUIRE_BARRIER_MIN_TOMBSTONES": "1", "QUIRE_BARRIER_DEBOUNCE_MS": "300", "QUIRE_QUIET_WINDOW_MS": "500"]
    var relay: String { "local:\(dir)/relay" }
    var cloud: String { dir + "/cloud" }

    override func setUp() {
        super.setUp()
        dir = makeShortDirectory()
        try? FileManager.default.createDirectory(atPath: cloud, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
        super.tearDown()
    }

    func home(_ name: String) -> String { dir + "/" + name }

    /// The device's barrier generation, as `quire config --json` says it.
    func generation(_ name: String) throws -> Int {
        guard let o = try jsonObject(try quireOK(["config", "--json"], home: home(name)).stdout) as? [String: Any],
              let generation = o["generation"] as? Int else {
            throw MountTestError("quire config --json of \(name) names no generation")
        }
        return generation
    }
}
