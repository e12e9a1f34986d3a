import Foundation
import XCTest
@testable import QuireStore

/// The power-loss VFS itself, on real SQLite files: what a sync made durable
/// survives `powerLoss()`, what it did not is gone, WAL mode works, and the
/// database that comes back is consistent.
final class PowerLossDiskTests: XCTestCase {
    func open(_ path: String, on disk: PowerLossDisk, synchronous: String = "FULL") throws -> Connection {
        let c = try Connection(path: path, vfs: disk)
        XCTAssertEqual(try c.queryOne("PRAGMA journal_mode=WAL") { $0.text(0) }, "wal")
        try c.execute("PRAGMA synchronous=\(synchronous)")
        return c
    }

    func values(_ c: Connection) throws -> [String] {
        try c.query("SELECT v FROM t ORDER BY rowid") { $0.text(0) ?? "" }
    }

    func integrity(_ c: Connection) throws -> String {
        try c.query("PRAGMA integrity_check") { $0.text(0) ?? "" }.joined(separator: "; ")
    }

    func testSyncedWritesSurviveAPowerCutAndUnsyncedOnesAreLost() throws {
        let disk = PowerLossDisk()
        let path = temporaryDirectory() + "/t.sqlite"
        var db: Connection? = try open(path, on: disk)
        try db!.execute("CREATE TABLE t(v TEXT)")
        try db!.run("INSERT INTO t(v) VALUES ('synced')")
        XCTAssertEqual(disk.unsyncedBytes, 0, "synchronous=FULL syncs the WAL at commit: \(disk.unsyncedFiles)")
        try db!.execute("PRAGMA synchronous=OFF")
        try db!.run("INSERT INTO t(v) VALUES ('unsynced')")
        XCTAssertGreaterThan(disk.unsyncedBytes, 0)
        XCTAssertEqual(Array(disk.unsyncedFiles.keys).map { $0.hasSuffix("-wal") }, [true], "only the WAL was written")
        XCTAssertEqual(try values(db!), ["synced", "unsynced"], "a write in the page cache is visible before the cut")
        let syncs = disk.syncCount

        try disk.powerLoss()
        XCTAssertEqual(disk.unsyncedBytes, 0)
        XCTAssertEqual(disk.syncCount, syncs)
        XCTAssertThrowsError(try values(db!), "a connection from before the cut is dead")
        XCTAssertThrowsError(try db!.run("INSERT INTO t(v) VALUES ('after the cut')"))
        XCTAssertGreaterThan(disk.deadFilesOpen, 0)
        XCTAssertThrowsError(try Connection(path: path, vfs: disk), "nothing opens while dead files are open") { e in
            XCTAssertTrue("\(e)".contains("before the power cut"), "\(e)")
        }
        db = nil
        XCTAssertEqual(disk.deadFilesOpen, 0)

        let again = try open(path, on: disk)
        XCTAssertEqual(try values(again), ["synced"])
        XCTAssertEqual(try integrity(again), "ok")
    }

    func testNormalSynchronousLosesATransactionWhoseCommitReturned() throws {
        let disk = PowerLossDisk()
        let path = temporaryDirectory() + "/t.sqlite"
        var db: Connection? = try open(path, on: disk)
        try db!.execute("CREATE TABLE t(v TEXT)")
        try db!.run("INSERT INTO t(v) VALUES ('full')")
        try db!.execute("PRAGMA synchronous=NORMAL")
        try db!.transaction { try db!.run("INSERT INTO t(v) VALUES ('normal')") }
        XCTAssertEqual(try values(db!), ["full", "normal"], "committed")
        XCTAssertGreaterThan(disk.unsyncedFiles.filter { $0.key.hasSuffix("-wal") }.count, 0, "NORMAL does not sync the WAL at commit")
        try disk.powerLoss()
        db = nil
        let again = try open(path, on: disk)
        XCTAssertEqual(try values(again), ["full"], "the NORMAL commit was in the page cache only")
        XCTAssertEqual(try integrity(again), "ok")
    }

    func testWALWorksAcrossConnectionsReadersAndCheckpoints() throws {
        let disk = PowerLossDisk()
        let path = temporaryDirectory() + "/t.sqlite"
        var writer: Connection? = try open(path, on: disk)
        var reader: Connection? = try open(path, on: disk)
        try writer!.execute("CREATE TABLE t(v TEXT)")
        for i in 0..<50 { try writer!.run("INSERT INTO t(v) VALUES (?)", [.text("a\(i)")]) }
        XCTAssertEqual(try values(reader!).count, 50, "the reader sees the writer's commits through the shared wal-index")
        try reader!.execute("BEGIN")
        XCTAssertEqual(try values(reader!).count, 50)
        for i in 0..<10 { try writer!.run("INSERT INTO t(v) VALUES (?)", [.text("b\(i)")]) }
        XCTAssertEqual(try values(reader!).count, 50, "a read transaction keeps its snapshot")
        try reader!.execute("COMMIT")
        XCTAssertEqual(try values(reader!).count, 60)
        XCTAssertEqual(try writer!.queryOne("PRAGMA wal_checkpoint(TRUNCATE)") { $0.int(0) }, 0, "not blocked")
        let walSize = { ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? -1 }
        XCTAssertEqual(walSize(), 0, "the WAL was truncated")
        for i in 0..<10 { try writer!.run("INSERT INTO t(v) VALUES (?)", [.text("c\(i)")]) }
        XCTAssertGreaterThan(walSize(), 0)
        try writer!.execute("PRAGMA synchronous=OFF")
        try writer!.run("INSERT INTO t(v) VALUES ('lost')")
        XCTAssertEqual(try values(reader!).last, "lost")

        try disk.powerLoss()
        writer = nil
        reader = nil
        let again = try open(path, on: disk)
        let rows = try values(again)
        XCTAssertEqual(rows.count, 70)
        XCTAssertEqual(rows.last, "c9")
        XCTAssertEqual(try integrity(again), "ok")
        XCTAssertEqual(try again.queryOne("PRAGMA journal_mode") { $0.text(0) }, "wal")
    }

    /// Random histories (seeded): transactions of random sizes under FULL or
    /// NORMAL, from two connections, with checkpoints and power cuts.
    /// After every cut the database is consistent and holds exactly the
    /// transactions 1...m, in order, for some m between the last one a sync
    /// covered and the last one committed.
    func testRandomHistoriesOfCommitsCheckpointsAndPowerCutsComeBackConsistent() throws {
        let random = SeededRandom(seed: 0x5EED_D15C)
        let disk = PowerLossDisk()
        let path = temporaryDirectory() + "/t.sqlite"
        func payload(_ n: Int) -> [UInt8] {
            let r = SeededRandom(seed: UInt64(n))
            return r.bytes(r.int(0..<3) == 0 ? r.int(2_000..<20_000) : r.int(10..<400))
        }
        var committed = 0, durable = 0, lostSomething = 0
        do {
            let c = try open(path, on: disk)
            try c.execute("CREATE TABLE log(n INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
            try c.execute("CREATE TABLE meta(k INTEGER PRIMARY KEY, last INTEGER NOT NULL)")
            try c.run("INSERT INTO meta VALUES (1, 0)")
        }
        for round in 0..<12 {
            var connections = [try open(path, on: disk), try open(path, on: disk)]
            for c in connections { try c.execute("PRAGMA wal_autocheckpoint=\(random.int(5..<60))") }
            for _ in 0..<random.int(5..<40) {
                let c = connections[random.int(0..<2)]
                switch random.int(0..<10) {
                // Not OFF: without the checkpoint's syncs a WAL restart can
                // overwrite frames whose database pages are not on disk yet,
                // and SQLite says OFF may corrupt on power loss (the disk
                // shows that too: try it).
                case 0: try c.execute("PRAGMA synchronous=\(["FULL", "NORMAL"][random.int(0..<2)])")
                case 1: _ = try c.queryOne("PRAGMA wal_checkpoint(\(["PASSIVE", "TRUNCATE", "RESTART"][random.int(0..<3)]))") { $0.int(0) }
                default:
                    let count = random.int(1..<6)
                    try c.transaction {
                        for n in (committed + 1)...(committed + count) {
                            try c.run("INSERT INTO log(n, payload) VALUES (?, ?)", [.int(Int64(n)), .blob(payload(n))])
                        }
                        try c.run("UPDATE meta SET last = ? WHERE k = 1", [.int(Int64(committed + count))])
                    }
                    committed += count
                    let mode = try c.queryOne("PRAGMA synchronous") { $0.int(0) }
                    // FULL (2) syncs the whole WAL at commit, earlier frames included.
                    if mode == 2 { durable = committed }
                }
            }
            if disk.unsyncedBytes == 0 { durable = committed }
            try disk.powerLoss()
            connections.removeAll()
            let c = try open(path, on: disk)
            XCTAssertEqual(try integrity(c), "ok", "round \(round)")
            let ns = try c.query("SELECT n FROM log ORDER BY n") { Int($0.int(0)) }
            let m = ns.count
            XCTAssertEqual(ns, Array(stride(from: 1, through: m, by: 1)), "round \(round): whole transactions, in order")
            XCTAssertEqual(try c.queryOne("SELECT last FROM meta") { Int($0.int(0)) }, m, "round \(round)")
            XCTAssertGreaterThanOrEqual(m, durable, "round \(round): a synced transaction was lost")
            XCTAssertLessThanOrEqual(m, committed, "round \(round)")
            for n in ns where n % 7 == 0 || n == m {
                XCTAssertEqual(try c.queryOne("SELECT payload FROM log WHERE n = ?", [.int(Int64(n))]) { $0.blob(0) }, payload(n), "round \(round) row \(n)")
            }
            if m < committed { lostSomething += 1 }
            committed = m
            durable = m
        }
        XCTAssertGreaterThan(lostSomething, 0, "some cut must have lost unsynced commits, or this test shows nothing")
    }

    /// The rollback journal too: a transaction cut half-way, with pages
    /// already spilled into the database file, is rolled back from its hot
    /// journal on the next open (the dead connection may not delete it).
    func testARollbackJournalTransactionCutHalfWayIsRolledBack() throws {
        let disk = PowerLossDisk()
        let path = temporaryDirectory() + "/t.sqlite"
        var db: Connection? = try Connection(path: path, vfs: disk)
        XCTAssertEqual(try db!.queryOne("PRAGMA journal_mode=DELETE") { $0.text(0) }, "delete")
        try db!.execute("PRAGMA synchronous=FULL")
        try db!.execute("PRAGMA cache_size=10")
        try db!.execute("CREATE TABLE t(v TEXT)")
        for i in 0..<20 { try db!.run("INSERT INTO t(v) VALUES (?)", [.text("kept \(i) " + String(repeating: "x", count: 500))]) }
        XCTAssertEqual(disk.unsyncedBytes, 0)
        try db!.execute("BEGIN")
        for i in 0..<400 { try db!.run("INSERT INTO t(v) VALUES (?)", [.text("cut \(i) " + String(repeating: "y", count: 500))]) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + "-journal"), "a transaction in progress")
        XCTAssertGreaterThan(disk.unsyncedFiles.keys.filter { !$0.hasSuffix("-journal") }.count, 0, "pages spilled into the database file")
        try disk.powerLoss()
        db = nil
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + "-journal"), "the hot journal outlives the dead connection")
        let again = try Connection(path: path, vfs: disk)
        XCTAssertEqual(try again.queryOne("SELECT count(*) FROM t") { $0.int(0) }, 20)
        XCTAssertEqual(try again.queryOne("SELECT count(*) FROM t WHERE v LIKE 'cut%'") { $0.int(0) }, 0)
        XCTAssertEqual(try integrity(again), "ok")
    }

    func testSeveralDisksCoexistAndTheDefaultVFSIsUntouched() throws {
        let a = PowerLossDisk(), b = PowerLossDisk(forwardsSync: false)
        XCTAssertNotEqual(a.name, b.name)
        let dir = temporaryDirectory()
        let ca = try open(dir + "/a.sqlite", on: a, synchronous: "OFF")
        let cb = try open(dir + "/b.sqlite", on: b)
        let plain = try Connection(path: dir + "/c.sqlite")
        for c in [ca, cb, plain] { try c.execute("CREATE TABLE t(v TEXT)"); try c.run("INSERT INTO t(v) VALUES ('x')") }
        XCTAssertGreaterThan(a.unsyncedBytes, 0)
        XCTAssertEqual(b.unsyncedBytes, 0, "a modelled sync counts even when the real fsync is skipped")
        XCTAssertGreaterThan(b.syncCount, 0)
        try a.powerLoss()
        XCTAssertEqual(try values(cb), ["x"], "another disk's connections live on")
        XCTAssertEqual(try values(plain), ["x"])
        XCTAssertThrowsError(try values(ca))
    }
}
