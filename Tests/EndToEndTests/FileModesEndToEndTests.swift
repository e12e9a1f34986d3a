import Foundation
import QuireTestSupport
import XCTest

/// Other local users read nothing: every file quire makes in the device
/// directory is 0600 and every folder 0700 under `umask 000`, a directory
/// left readable by others is tightened with a message, key files replaced
/// by garbage are refused by name, and one-character relative paths work.
final class FileModesEndToEndTests: XCTestCase {
    var dir = ""
    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// Runs quire in `dir` under umask 000.
    @discardableResult
    func run(_ args: String, env: String = "") -> (status: Int32, output: String) {
        shell("cd '\(dir)' && umask 000 && \(env) '\(QuireBinary.path)' \(args)")
    }

    func modes(_ path: String) -> [String: String] {
        var out: [String: String] = [:]
        for line in shell("find '\(path)' -exec stat -c '%a %n' {} \\;").output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            out[String(parts[1])] = String(parts[0])
        }
        return out
    }

    func testEveryFileIsOwnerOnlyUnderUmask000AndOneCharacterPathsWork() throws {
        XCTAssertEqual(run("--home h init --name one").status, 0)
        XCTAssertEqual(run("--home h put notebook First", env: "echo words |").status, 0)
        let invited = run("--home h invite --out i --kdf interactive", env: "QUIRE_PASSPHRASE='a long shared secret'")
        XCTAssertEqual(invited.status, 0, invited.output)
        // A running sync (WAL, SHM, lock, socket, logs, state files) and a backup.
        let old = umask(0)  // the daemon inherits umask 000 too
        let daemon = try SyncDaemon(home: dir + "/h", relay: "local:\(dir)/relay", waitsForControlChannel: true)
        umask(old)
        XCTAssertEqual(run("--home h put notebook Second", env: "echo more |").status, 0)
        XCTAssertEqual(run("--home h backup --to b").status, 0)
        let whileRunning = modes(dir + "/h")
        daemon.stop()
        XCTAssertNotNil(whileRunning[dir + "/h/replica.sqlite-wal"], "the WAL exists while the replica is open")
        let all = whileRunning.merging(modes(dir + "/h"), uniquingKeysWith: { a, _ in a })
        for (path, mode) in all {
            if path.hasSuffix(".sock") { continue }  // a socket's mode is not what guards it (the 0700 folder is)
            var isDir: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
            XCTAssertEqual(mode, isDir.boolValue ? "700" : "600", path)
        }
        XCTAssertEqual(modes(dir + "/i")[dir + "/i"], "600")
        XCTAssertEqual(modes(dir + "/b")[dir + "/b"], "600")
    }

    func testADirectoryReadableByOthersIsTightenedWithAMessage() throws {
        XCTAssertEqual(run("--home h init --name one").status, 0)
        XCTAssertEqual(shell("chmod 755 '\(dir)/h' && chmod 644 '\(dir)/h/prefs.json' '\(dir)/h/replica.sqlite'").status, 0)
        let listed = run("--home h ls notebook")
        XCTAssertEqual(listed.status, 0, listed.output)
        XCTAssertTrue(listed.output.contains("made owner-only"), listed.output)
        let after = modes(dir + "/h")
        XCTAssertEqual(after[dir + "/h"], "700")
        XCTAssertEqual(after[dir + "/h/prefs.json"], "600")
        XCTAssertEqual(after[dir + "/h/replica.sqlite"], "600")
    }

    func testAKeyFileReplacedByGarbageOrAnotherKeyIsRefused() throws {
        XCTAssertEqual(run("--home h init --name one").status, 0)
        XCTAssertEqual(run("--home g init --name two").status, 0)
        XCTAssertEqual(shell("cp '\(dir)/g/keys/device-sign.key' '\(dir)/g/keys/device-box.key' '\(dir)/h/keys/'").status, 0)
        let swapped = run("--home h ls notebook")
        XCTAssertEqual(swapped.status, 1)
        XCTAssertTrue(swapped.output.contains("a key file was replaced"), swapped.output)
        XCTAssertEqual(shell("head -c 20 /dev/urandom > '\(dir)/g/keys/device-box.key'").status, 0)
        let garbage = run("--home g ls notebook")
        XCTAssertEqual(garbage.status, 1)
        XCTAssertTrue(garbage.output.contains("device-box.key") && garbage.output.contains("replaced"), garbage.output)
    }
}
