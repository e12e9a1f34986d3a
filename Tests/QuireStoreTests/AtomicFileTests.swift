import Foundation
import XCTest
import QuireCore
@testable import QuireStore

/// Whole-file reads of folders other programs write to (a cloud folder):
/// regular files only, never a read that blocks.
final class AtomicFileTests: XCTestCase {
    func testARegularFileIsReadWholeOrUpToTheLimit() throws {
        let dir = temporaryDirectory()
        let path = dir + "/file"
        let bytes = (0..<200_000).map { UInt8($0 % 251) }
        try AtomicFile.write(bytes, to: path, mode: 0o600)
        XCTAssertEqual(try AtomicFile.readRegular(path), bytes)
        XCTAssertEqual(try AtomicFile.readRegular(path, upTo: 10), Array(bytes[0..<10]))
        try AtomicFile.write([], to: dir + "/empty", mode: 0o600)
        XCTAssertEqual(try AtomicFile.readRegular(dir + "/empty"), [])
        XCTAssertThrowsError(try AtomicFile.readRegular(dir + "/missing")) { e in
            XCTAssertEqual((e as? StoreError)?.kind, .notFound, "\(e)")
        }
    }

    /// A FIFO or a folder under the name is refused at once: a FIFO opened
    /// for reading would wait for a writer forever.
    func testAFIFOOrAFolderIsRefusedWithoutBlocking() throws {
        let dir = temporaryDirectory()
        let fifo = dir + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let outcome = try readWithin(seconds: 5, fifo)
        XCTAssertNotNil(outcome, "the read returned")
        XCTAssertTrue(outcome?.contains("not a regular file") ?? false, outcome ?? "")
        XCTAssertThrowsError(try AtomicFile.readRegular(dir)) { e in
            XCTAssertTrue("\(e)".contains("not a regular file"), "\(e)")
        }
    }
}

/// Runs `AtomicFile.readRegular` on another thread; nil if it has not
/// returned within `seconds` (then a writer is opened to free it).
func readWithin(seconds: Double, _ path: String) throws -> String? {
    let done = DispatchSemaphore(value: 0)
    let result = LockedBox<String>()
    Thread.detachNewThread {
        do { result.set("read \(try AtomicFile.readRegular(path).count) bytes") } catch { result.set("\(error)") }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else {
        let writer = open(path, O_WRONLY)
        if writer >= 0 { close(writer) }
        return nil
    }
    return result.get()
}

final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    func set(_ v: T) { lock.lock(); value = v; lock.unlock() }
    func get() -> T? { lock.lock(); defer { lock.unlock() }; return value }
}
