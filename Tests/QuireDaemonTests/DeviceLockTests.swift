import Foundation
import XCTest
@testable import QuireDaemon

/// The device's sync lock names the process that holds it, even to one
/// that asks in the moment between the holder taking the lock and writing
/// its pid (two mounts of one device started at once said "process ?").
/// The holders here are real processes holding a real flock (util-linux
/// `flock`), paused in that moment.
final class DeviceLockTests: XCTestCase {
    var dir = ""
    var holders: [Process] = []

    override func setUp() {
        dir = NSTemporaryDirectory() + "quire-lock-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for p in holders where p.isRunning { p.terminate(); p.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: dir)
    }

    var lockPath: String { dir + "/sync.lock" }

    /// A shell that takes the lock, says so, waits `pause` seconds, then
    /// does `then` (in sh) and stays (the same pid, holding the lock)
    /// unless `then` exits.
    func holdLock(pause: Double, then: String) throws -> Process {
        let ready = dir + "/ready-\(holders.count)"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", """
            exec 9<>"$LOCK"
            flock -x 9 || exit 9
            : > "$READY"
            sleep \(pause)
            \(then)
            exec sleep 30
            """]
        p.environment = ["LOCK": lockPath, "READY": ready, "PATH": "/usr/bin:/bin"]
        try p.run()
        holders.append(p)
        XCTAssertTrue(waitFor(5) { FileManager.default.fileExists(atPath: ready) }, "the holder never took the lock")
        return p
    }

    func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline { if condition() { return true }; usleep(10_000) }
        return condition()
    }

    func heldError(_ body: () throws -> DeviceLock) -> DeviceLockHeld? {
        do {
            let lock = try body()
            lock.release()
            XCTFail("the lock was taken while another process held it")
            return nil
        } catch let held as DeviceLockHeld {
            return held
        } catch {
            XCTFail("\(error)")
            return nil
        }
    }

    /// Quire's order: truncate, then write the pid.
    let writesPid = #": > "$LOCK"; printf '%s\n' $$ > "$LOCK""#

    func testAHolderThatHasNotWrittenItsPidYetIsNamedOnceItHas() throws {
        let holder = try holdLock(pause: 0.3, then: writesPid)
        let held = try XCTUnwrap(heldError { try DeviceLock.acquire(path: lockPath) })
        XCTAssertEqual(held.holder, holder.processIdentifier)
        XCTAssertTrue(held.description.contains("(process \(holder.processIdentifier))"), held.description)
    }

    func testTheHolderBeforeItIsNotNamedForTheOneThatHoldsItNow() throws {
        // The file still names a holder that has exited.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        try Data("\(gone.processIdentifier)\n".utf8).write(to: URL(fileURLWithPath: lockPath))
        let holder = try holdLock(pause: 0.3, then: writesPid)
        let held = try XCTUnwrap(heldError { try DeviceLock.acquire(path: lockPath) })
        XCTAssertEqual(held.holder, holder.processIdentifier)

        // Nor this process, which held it before and let go.
        holder.terminate()
        holder.waitUntilExit()
        let mine = try DeviceLock.acquire(path: lockPath)
        mine.release()
        let next = try holdLock(pause: 0.3, then: writesPid)
        XCTAssertEqual(heldError { try DeviceLock.acquire(path: lockPath) }?.holder, next.processIdentifier)
    }

    func testALockLetGoWhileItsHolderIsUnknownIsTaken() throws {
        let holder = try holdLock(pause: 0.3, then: "exit 0")
        let lock = try DeviceLock.acquire(path: lockPath)
        defer { lock.release() }
        holder.waitUntilExit()
        XCTAssertEqual(try String(contentsOfFile: lockPath, encoding: .utf8), "\(getpid())\n")
    }

    func testAHolderThatNeverSaysItsPidIsCalledUnknownAfterASecond() throws {
        _ = try holdLock(pause: 0, then: ":")
        let started = Date()
        let held = try XCTUnwrap(heldError { try DeviceLock.acquire(path: lockPath) })
        XCTAssertNil(held.holder)
        XCTAssertTrue(held.description.contains("another process, whose pid could not be read"), held.description)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }

    /// A command's anchor check holds the lock a moment only: a sync or a
    /// mount starting meanwhile waits for it instead of failing with "sync
    /// is already running" (`quire status` run beside a starting sync made
    /// it fail); a brief holder itself waits for nobody.
    func testAStartWaitsOutABriefHolderAndABriefHolderWaitsForNone() throws {
        let briefWritesPid = #": > "$LOCK"; printf '%s brief\n' $$ > "$LOCK""#
        let brief = try holdLock(pause: 0, then: briefWritesPid + "; sleep 1; exit 0")
        let started = Date()
        let lock = try DeviceLock.acquire(path: lockPath)
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.5, "taken while the brief holder still held it")
        brief.waitUntilExit()
        lock.release()

        let steady = try holdLock(pause: 0, then: writesPid)
        let asked = Date()
        XCTAssertEqual(heldError { try DeviceLock.acquire(path: lockPath, brief: true) }?.holder, steady.processIdentifier)
        XCTAssertLessThan(Date().timeIntervalSince(asked), 3)
    }
}
