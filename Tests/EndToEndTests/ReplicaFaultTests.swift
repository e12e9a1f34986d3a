import Foundation
import XCTest

/// Bad input and faults of the replica, through the real binary: a clear
/// one-line error, a non-zero exit, and nothing already written lost.
final class ReplicaFaultTests: XCTestCase {
    func makeDevice() throws -> String {
        let home = makeTemporaryDirectory() + "/home"
        let r = try quire(["init", "--name", "test"], home: home)
        XCTAssertEqual(r.status, 0, r.stderr)
        return home
    }

    func assertOneLineError(_ r: RunResult, contains text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 1, "stderr: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.hasPrefix("quire: "), r.stderr, file: file, line: line)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(text), "expected '\(text)' in: \(r.stderr)", file: file, line: line)
    }

    func testKillDuringBurstLosesNoCommittedWrite() throws {
        let home = try makeDevice()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: QuireBinary.path)
        p.arguments = ["--home", home, "debug", "burst", "--count", "1000000", "--size", "300"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        Thread.sleep(forTimeInterval: 1.5)
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationReason, .uncaughtSignal)
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n").map(String.init).filter { $0.count == 32 }   // a torn last line is not a promise
        XCTAssertGreaterThan(printed.count, 20, "the burst should have committed some writes")
        let ls = try quire(["ls", "notebook", "--json"], home: home)
        XCTAssertEqual(ls.status, 0, ls.stderr)
        let stored = Set(try (jsonObject(ls.stdout) as! [[String: Any]]).map { $0["key"] as! String })
        let missing = printed.filter { !stored.contains($0) }
        XCTAssertEqual(missing, [], "writes that returned success are gone after kill -9")
        let verify = try quire(["digest", "--verify"], home: home)
        XCTAssertEqual(verify.status, 0, "roots must equal a full recomputation after the crash: \(verify.stdout) \(verify.stderr)")
        // The store still takes writes.
        XCTAssertEqual(try quire(["put", "notebook", "after crash"], home: home, stdin: Array("ok".utf8)).status, 0)
    }

    func testDiskFullIsAClearErrorAndKeepsEarlierWrites() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a small tmpfs needs root") }
        let dir = makeTemporaryDirectory()
        let mountpoint = dir + "/small"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        XCTAssertEqual(shell("mount -t tmpfs -o size=3m tmpfs \(mountpoint)").status, 0)
        defer { shell("umount -l \(mountpoint)") }
        let home = mountpoint + "/home"
        XCTAssertEqual(try quire(["init", "--name", "small"], home: home).status, 0)
        // Random letters: bodies are stored deflated, and text that does
        // not compress is what fills a disk.
        var generator = SystemRandomNumberGenerator()
        let body = (0..<200_000).map { _ in UInt8(ascii: "a") + UInt8.random(in: 0..<26, using: &generator) }
        var written: [String] = []
        var failure: RunResult? = nil
        for i in 0..<40 {
            let r = try quire(["put", "notebook", "big \(i)"], home: home, stdin: body)
            if r.status != 0 { failure = r; break }
            written.append("big \(i)")
        }
        let f = try XCTUnwrap(failure, "a 3 MB filesystem must fill up")
        assertOneLineError(f, contains: "disk full")
        XCTAssertGreaterThan(written.count, 3)
        for title in written {
            let g = try quire(["get", "notebook", title], home: home)
            XCTAssertEqual(g.status, 0, "\(title): \(g.stderr)")
            XCTAssertEqual(g.stdoutBytes.count, body.count, title)
        }
        shell("rm -f \(mountpoint)/filler; true")
        XCTAssertEqual(try quire(["digest", "--verify"], home: home).status, 0)
    }

    func testCorruptAndForeignDatabasesAreRefused() throws {
        let home = try makeDevice()
        let db = home + "/replica.sqlite"
        shell("rm -f \(db)-wal \(db)-shm")
        let garbage = [UInt8](repeating: 0x5A, count: 16384)
        // Owner-only, as quire makes it (a readable one would add a line saying it was tightened).
        XCTAssertTrue(FileManager.default.createFile(atPath: db, contents: Data(garbage), attributes: [.posixPermissions: 0o600]))
        assertOneLineError(try quire(["status"], home: home), contains: "damaged or not a database")
        // The ways back, not 'move it aside' (which led to 'run quire init', which refuses).
        let damaged = try quire(["status"], home: home).stderr
        XCTAssertTrue(damaged.contains("'quire restore --from FILE'") && damaged.contains("'quire init --join'"), damaged)
        XCTAssertFalse(damaged.contains("move it aside"), damaged)
        XCTAssertEqual(Array(FileManager.default.contents(atPath: db)!), garbage, "the damaged file was not written to")
        try FileManager.default.removeItem(atPath: db)
        assertOneLineError(try quire(["status"], home: home), contains: "has this device's keys and prefs but no replica")
        XCTAssertEqual(shell("python3 -c \"import sqlite3; c=sqlite3.connect('\(db)'); c.execute('create table t(x)'); c.commit()\" && chmod 600 '\(db)'").status, 0)
        assertOneLineError(try quire(["ls", "notebook"], home: home), contains: "not a quire replica")
    }

    func testLockedDatabaseIsAClearError() throws {
        let home = try makeDevice()
        XCTAssertEqual(try quire(["put", "notebook", "before"], home: home, stdin: Array("kept".utf8)).status, 0)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", "-c", """
            import sqlite3, sys, time
            c = sqlite3.connect('\(home)/replica.sqlite', isolation_level=None)
            c.execute('BEGIN EXCLUSIVE')
            print('locked', flush=True)
            time.sleep(30)
            """]
        let out = Pipe()
        holder.standardOutput = out
        try holder.run()
        defer { holder.terminate(); holder.waitUntilExit() }
        _ = out.fileHandleForReading.availableData   // wait for "locked"
        let r = try quire(["put", "notebook", "blocked"], home: home, stdin: Array("x".utf8), env: ["QUIRE_BUSY_TIMEOUT_MS": "300"])
        assertOneLineError(r, contains: "locked by another process")
        holder.terminate(); holder.waitUntilExit()
        XCTAssertEqual(try quire(["get", "notebook", "before"], home: home).stdout, "kept")
    }

    func testWrongPermissionsAreClearErrors() throws {
        let home = try makeDevice()
        chmod(home, 0o000)
        assertOneLineError(try quire(["status"], home: home), contains: "chmod 700")
        chmod(home, 0o700)
        chmod(home + "/keys/device-sign.key", 0o644)
        assertOneLineError(try quire(["status"], home: home), contains: "accessible by other users")
        chmod(home + "/keys/device-sign.key", 0o600)
        XCTAssertEqual(try quire(["status"], home: home).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home + "/keys/account.key"), "no device keeps the account key")
        let st = try FileManager.default.attributesOfItem(atPath: home + "/keys/device-sign.key")
        XCTAssertEqual((st[.posixPermissions] as? Int), 0o600, "keys are created with mode 0600")
    }

    func testInitOnAFreshAccountCreatesTheDefaultHomeAndItsParents() throws {
        let fakeHome = makeTemporaryDirectory() + "/user"
        try FileManager.default.createDirectory(atPath: fakeHome, withIntermediateDirectories: true)
        let r = try quire(["init", "--name", "fresh"], env: ["HOME": fakeHome, "XDG_DATA_HOME": ""])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: fakeHome + "/.local/share/quire/prefs.json"))
        let st = try FileManager.default.attributesOfItem(atPath: fakeHome + "/.local/share/quire")
        XCTAssertEqual(st[.posixPermissions] as? Int, 0o700)
        XCTAssertEqual(try quire(["status"], env: ["HOME": fakeHome, "XDG_DATA_HOME": ""]).status, 0)
    }

    func testUsageErrorsExitTwoAndHelpIsOnStdout() throws {
        XCTAssertEqual(try quire(["frobnicate"]).status, 2)
        XCTAssertEqual(try quire(["put"]).status, 2)
        XCTAssertEqual(try quire(["put", "nonsense", "x"]).status, 2)
        let help = try quire(["put", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("usage: quire put"))
        let global = try quire(["--help"])
        for command in ["init", "put", "get", "ls", "rm", "digest", "status"] {
            XCTAssertTrue(global.stdout.contains("  \(command) "), "global help lists \(command)")
            XCTAssertEqual(try quire([command, "--help"]).status, 0, command)
        }
    }

    func testRoundTripOfEveryNamespace() throws {
        let home = try makeDevice()
        let binary: [UInt8] = [0, 1, 2, 255, 254, 10, 13]
        XCTAssertEqual(try quire(["put", "notebook", "bin"], home: home, stdin: binary).status, 0)
        XCTAssertEqual(try quire(["get", "notebook", "bin"], home: home).stdoutBytes, binary)
        XCTAssertEqual(try quire(["put", "saga", "2026-12-01"], home: home, stdin: Array("a quiet day\n".utf8)).status, 0)
        XCTAssertEqual(try quire(["get", "saga", "2026-12-01"], home: home).stdout, "a quiet day\n")
        XCTAssertEqual(try quire(["put", "saga", "2026-02-30"], home: home, stdin: []).status, 2)
        XCTAssertEqual(try quire(["put", "plans", "ship", "--due", "2026-12-24", "--notes", "v1"], home: home).status, 0)
        XCTAssertTrue(try quire(["get", "plans", "ship"], home: home).stdout.contains("due: 2026-12-24"))
        XCTAssertEqual(try quire(["put", "contacts", "Ada", "--email", "ada@example.org", "--phone", "+1 555"], home: home).status, 0)
        let c = try jsonObject(try quire(["get", "contacts", "Ada", "--json"], home: home).stdout) as! [String: Any]
        XCTAssertEqual(c["emails"] as? [String], ["ada@example.org"])
        XCTAssertEqual(try quire(["put", "settings", "theme", "dark"], home: home).status, 0)
        XCTAssertEqual(try quire(["get", "settings", "theme"], home: home).stdout, "dark\n")
        XCTAssertEqual(try quire(["put", "memory", "talk"], home: home, stdin: Array("said hi".utf8)).status, 0)
        XCTAssertEqual(try quire(["rm", "memory", "talk"], home: home).status, 1, "memory is append-only")
        // Two notes with one title: both kept, and the name is ambiguous until --key.
        XCTAssertEqual(try quire(["put", "notebook", "dup", "--new"], home: home, stdin: Array("1".utf8)).status, 0)
        XCTAssertEqual(try quire(["put", "notebook", "dup", "--new"], home: home, stdin: Array("2".utf8)).status, 0)
        let amb = try quire(["get", "notebook", "dup"], home: home)
        XCTAssertEqual(amb.status, 1)
        XCTAssertTrue(amb.stderr.contains("pass --key"))
        // The key prefixes the message prints are enough for --key.
        let prefixes = amb.stderr.split(whereSeparator: { !$0.isHexDigit }).map(String.init).filter { $0.count == 12 }
        XCTAssertEqual(prefixes.count, 2, amb.stderr)
        let texts = try prefixes.map { try quire(["get", "notebook", "--key", $0], home: home).stdout }
        XCTAssertEqual(Set(texts), ["1", "2"])
        XCTAssertEqual(try quire(["get", "notebook", "--key", "zz"], home: home).status, 2)
        // A file name as the mount shows it reaches its row; one with a key
        // marker reaches only the row whose key the marker starts.
        let keys = prefixes.sorted()
        XCTAssertEqual(try quire(["get", "notebook", "dup%~\(keys[1].prefix(8)).md"], home: home).stdout,
                       try quire(["get", "notebook", "--key", keys[1]], home: home).stdout)
        XCTAssertEqual(try quire(["get", "notebook", "dup%~\(keys[0].prefix(8))"], home: home).stdout,
                       try quire(["get", "notebook", "--key", keys[0]], home: home).stdout)
        XCTAssertEqual(try quire(["get", "notebook", "dup.md"], home: home).status, 1, "still two of that title")
        XCTAssertEqual(try quire(["get", "notebook", "dup%~00000000.md"], home: home).status, 1, "no row has that key")
        // A slash is a folder path: note b in folder a (made on the way).
        XCTAssertEqual(try quire(["put", "notebook", "a/b"], home: home, stdin: Array("slashed".utf8)).status, 0)
        XCTAssertEqual(try quire(["get", "notebook", "a/b.md"], home: home).stdout, "slashed")
        XCTAssertEqual(try quire(["get", "notebook", "a%2Fb.md"], home: home).status, 1, "no title holds the slash")
        XCTAssertEqual(try quire(["get", "notebook", "saga.md"], home: home).status, 1)
        let digest = try jsonObject(try quire(["digest", "--json"], home: home).stdout) as! [String: Any]
        XCTAssertEqual(digest["size"] as? Int, 1 + 32 * 7 + 8)
        XCTAssertEqual(try quire(["rm", "notebook", "bin"], home: home).status, 0)
        let ls = try jsonObject(try quire(["ls", "notebook", "--tombstones", "--json"], home: home).stdout) as! [[String: Any]]
        XCTAssertEqual(ls.filter { $0["tombstone"] as? Bool == true }.count, 1)
        XCTAssertEqual(try quire(["digest", "--verify"], home: home).status, 0)
    }
}
