import Foundation
import QuireCore
import QuireStore
import QuireTestSupport
import XCTest

/// Issue 10, case 6, with real processes: one size limit (`RowLimits`)
/// for `quire put`, the mount and sync; a row larger than a response
/// travels alone, and a row that cannot travel is named in `quire status`
/// and the mount's `.quire/status` while every row after it syncs.
final class SizeLimitEndToEndTests: XCTestCase {
    var dir = ""
    var daemons: [SyncDaemon] = []
    var mountpoint: String { dir + "/mnt" }
    let env = ["QUIRE_PASSPHRASE": "a long shared secret"]
    let limit = RowLimits.maxBodyBytes

    override func setUp() { dir = makeShortDirectory() }

    override func tearDown() {
        for d in daemons { d.stop() }
        daemons = []
        if FileManager.default.fileExists(atPath: mountpoint) {
            _ = try? quire(["unmount", mountpoint], home: home("a"))
            shell("fusermount3 -u -z '\(mountpoint)' 2>/dev/null")
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    func home(_ name: String) -> String { dir + "/" + name }

    /// 00…00, 00…01, …: the n-th key in key order.
    func key(_ n: Int) -> String { String(repeating: "0", count: 28) + String(format: "%04x", n) }

    func testPutRefusesABodyOverTheLimitInOneLineAndWritesNothing() throws {
        try quireOK(["init", "--name", "a"], home: home("a"))
        let file = dir + "/big.txt"
        try Data(repeating: UInt8(ascii: "x"), count: limit + 1).write(to: URL(fileURLWithPath: file))
        let refused = try quire(["put", "notebook", "Big", "--file", file], home: home("a"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("notebook/Big not written") && refused.stderr.contains("16.1 MiB, over the 16 MiB limit"),
                      refused.stderr)
        // From standard input too (read no further than the limit).
        let piped = shell("head -c \(limit + 1) /dev/zero | '\(QuireBinary.path)' --home '\(home("a"))' put saga 2026-01-02; echo \"exit $?\"")
        XCTAssertTrue(piped.output.contains("saga/2026-01-02 not written: its text is over the 16 MiB limit"), piped.output)
        XCTAssertTrue(piped.output.hasSuffix("exit 1\n"), piped.output)
        XCTAssertEqual(try quire(["ls", "notebook"], home: home("a")).stdout, "")
        XCTAssertEqual(try quire(["ls", "saga"], home: home("a")).stdout, "")
        // At the limit exactly, it is written.
        try Data(repeating: UInt8(ascii: "x"), count: limit).write(to: URL(fileURLWithPath: file))
        try quireOK(["put", "notebook", "Big", "--file", file], home: home("a"))
        XCTAssertEqual(try quire(["get", "notebook", "Big"], home: home("a")).stdoutBytes.count, limit)
    }

    /// Device a holds a 3 MiB note (over the 2 MiB response budget) and a
    /// note over the limit (written before the limit existed) first in key
    /// order, then 30 small ones; b pulls. Everything but the one over the
    /// limit arrives; a's mount and `quire status` name it, with the reason;
    /// the mount answers EFBIG for a file over the limit and says so.
    func testRowsAfterABigRowAndOneOverTheLimitSyncBetweenRealProcesses() throws {
        let relay = "local:\(dir)/relay"
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: env)

        // Written the way an older quire could: straight into the replica.
        do {
            let (_, store) = try DeviceHome(path: home("a")).open()
            try store.put(.note(Note(title: "huge", body: [UInt8](repeating: UInt8(ascii: "w"), count: limit + 1),
                                     createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))),
                          key: RowKey(hex: key(0))!)
        }
        let big = dir + "/big.txt"
        var text = ""
        while text.utf8.count < 3 << 20 { text += "A paragraph of the big note, number \(text.utf8.count).\n\n" }
        try Data(text.utf8).write(to: URL(fileURLWithPath: big))
        try quireOK(["put", "notebook", "big", "--key", key(1), "--file", big], home: home("a"))
        for i in 0..<30 {
            try quireOK(["put", "notebook", "small \(i)", "--key", key(16 + i)], home: home("a"), stdin: Array("note \(i)\n".utf8))
        }

        // a syncs through its mount, b through a daemon.
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try quireOK(["mount", mountpoint], home: home("a"))
        daemons.append(try SyncDaemon(home: home("b"), relay: relay))
        var arrived: Set<String> = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let listed = try quire(["ls", "notebook", "--json"], home: home("b")).stdout
            arrived = Set(((try? jsonObject(listed)) as? [[String: Any]] ?? []).compactMap { $0["key"] as? String })
            if arrived.count >= 31 { break }
            usleep(250_000)
        }
        XCTAssertEqual(arrived, Set([key(1)] + (0..<30).map { key(16 + $0) }), daemons[0].output)
        XCTAssertEqual(try quire(["get", "notebook", "--key", key(1)], home: home("b")).stdoutBytes, Array(text.utf8))

        // Named where a person looks, with the reason.
        var status = ""
        _ = eventually(10) {
            status = (try? String(contentsOfFile: mountpoint + "/.quire/status", encoding: .utf8)) ?? ""
            return status.contains("CANNOT SYNC")
        }
        XCTAssertTrue(status.contains("1 row CANNOT SYNC"), status)
        XCTAssertTrue(status.contains("notebook/'huge' (\(key(0).prefix(12)))") && status.contains("16.1 MiB, over the 16 MiB limit"), status)
        let sync = try syncStatus(home("a"))
        let named = try XCTUnwrap(sync["unsyncableRows"] as? [[String: Any]])
        XCTAssertEqual(named.map { $0["key"] as? String }, [key(0)])
        XCTAssertNil(try syncStatus(home("b"))["unsyncableRows"].flatMap { ($0 as? [Any])?.first })
        XCTAssertEqual(try quire(["get", "notebook", "--key", key(0)], home: home("b")).status, 1, "a row over the limit travelled")

        // The mount refuses to grow a file past the limit: EFBIG, and a line in .quire/status.
        let chunk = [UInt8](repeating: UInt8(ascii: "y"), count: 1 << 20)
        let result = Syscall.writeFile(mountpoint + "/notebook/grows.md", chunks: Array(repeating: chunk, count: limit >> 20) + [[1]])
        XCTAssertEqual(result.errno, EFBIG, "\(result)")
        XCTAssertEqual(result.step, "write")
        XCTAssertEqual(truncate(mountpoint + "/notebook/grows.md", off_t(limit + 1)), -1)
        XCTAssertEqual(errno, EFBIG)
        status = try String(contentsOfFile: mountpoint + "/.quire/status", encoding: .utf8)
        XCTAssertTrue(status.contains("notebook/grows.md: would grow to 16.1 MiB, but a file here is at most 16 MiB"), status)

        // Cut down to size on a, it syncs and is no longer named.
        try quireOK(["put", "notebook", "huge", "--key", key(0)], home: home("a"), stdin: Array("smaller now\n".utf8))
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 60), daemons[0].output)
        let unnamed = eventually(10) { ((try? syncStatus(self.home("a")))?["unsyncableRows"] as? [Any])?.isEmpty == true }
        XCTAssertTrue(unnamed, "\((try? syncStatus(home("a"))) ?? [:])")
        XCTAssertEqual(try quire(["get", "notebook", "--key", key(0)], home: home("b")).stdout, "smaller now\n")
    }
}
