import Foundation
import XCTest

/// Two devices of one account on a local relay, "a" (a new account) and
/// "b" (joined through an invite), each with a real `quire mount`.
class TwoMountedDevicesTestCase: XCTestCase {
    var dir = ""
    let env = ["QUIRE_PASSPHRASE": "a long shared secret"]

    override func setUp() { dir = makeShortDirectory() }

    override func tearDown() {
        for name in ["a", "b"] {
            _ = try? quire(["unmount", mount(name)], home: home(name))
            shell("fusermount3 -u -z '\(mount(name))' 2>/dev/null")
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    func home(_ name: String) -> String { dir + "/" + name }
    func mount(_ name: String) -> String { dir + "/mnt-" + name }
    var relay: String { "local:\(dir)/relay" }

    /// `syncing`: the mounts run the sync engine (else `-o nosync`, and
    /// the test syncs with daemons of its own).
    func makeTwoMountedDevices(syncing: Bool = true) throws {
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: env)
        for name in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: mount(name), withIntermediateDirectories: true)
            try quireOK(["mount", mount(name)] + (syncing ? [] : ["-o", "nosync"]), home: home(name))
        }
    }
}
