import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// A working copy's change number is the number of the version its text
/// came from, with versions landing all the while (a sibling's, through
/// the sync engine's commits on the same store). The kernel keeps an
/// inode's pages while the number an open gives is the one its pages were
/// read at, and what a reader is shown is recorded under it: a text paired
/// with a newer version's number had the kernel serve the older pages
/// while the newer text became the reader's baseline, and a save by rename
/// from those pages deleted the newer paragraphs.
final class CopyVersionTests: XCTestCase {
    /// Versions of one note stored as fast as the store takes them, each
    /// text naming its own number in the order written. `landed` counts
    /// them so far; `finish` waits for the writer and returns what each
    /// change number stored.
    private func storeVersions(of key: RowKey, in store: ReplicaStore, until done: @escaping @Sendable () -> Bool)
        -> (landed: () -> Int, finish: () -> [Int64: String]) {
        let texts = Guarded<[Int64: String]>([:])
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var n = 0
            while !done() {
                n += 1
                let text = "version \(n)\n\nwritten elsewhere \(n)\n"
                guard (try? store.put(.note(Note(title: "Busy", body: Array(text.utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                                                 updatedAt: Timestamp(seconds: 1_700_000_000 + Int64(n)))), key: key)) != nil,
                      let seq = try? store.changeNumber(.notebook, key) else { continue }
                texts.withLock { $0[seq] = text }
            }
            finished.signal()
        }.start()
        return (landed: { texts.withLock { $0.count } },
                finish: {
                    finished.wait()
                    return texts.withLock { $0 }
                })
    }

    /// Runs `step` at least `times` times and on until `enough` versions
    /// landed meanwhile (a slow machine's writer may store only a few in
    /// the first thousand steps), for at most a minute.
    private func repeatWhileVersionsLand(times: Int, enough: Int, landed: () -> Int, _ step: () throws -> Void) rethrows {
        let deadline = Date().addingTimeInterval(60)
        var done = 0
        while done < times || (landed() <= enough && Date() < deadline) {
            try step()
            done += 1
        }
    }

    func testAnOpenPairsItsTextWithThatVersionsNumber() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Busy", "version 0\n").key }
        let ref = RowRef(namespace: .notebook, key: key!)
        let stop = Guarded(false)
        let versions = storeVersions(of: key!, in: mount.store) { stop.withLock { $0 } }
        var seen: [(seq: Int64, text: String)] = []
        try repeatWhileVersionsLand(times: 1_500, enough: 20, landed: versions.landed) {
            let file = try mount.open("notebook/Busy.md", O_RDONLY)
            if let copy = mount.fileSystem.locked({ mount.fileSystem.openFiles.copy(ref) }) {
                seen.append((copy.storedSeq, String(decoding: copy.content, as: UTF8.self)))
            }
            try mount.close(file)
        }
        stop.withLock { $0 = true }
        let stored = versions.finish()
        XCTAssertGreaterThan(stored.count, 20, "versions landed while the file was opened")
        var checked = 0
        for (seq, text) in seen {
            guard let storedText = stored[seq] else { continue }   // the first version, or the seed's
            checked += 1
            XCTAssertEqual(text, storedText, "an open's text and change number are one version's (\(seq))")
        }
        XCTAssertGreaterThan(checked, 1_000)
    }

    func testTheFeedPairsAFollowedTextWithThatVersionsNumber() throws {
        var key: RowKey?
        let mount = try DirectMount { key = try $0.putNote("Busy", "version 0\n").key }
        let ref = RowRef(namespace: .notebook, key: key!)
        // Open to be written (and not written yet): its clean copy follows
        // each version (a reader keeps the text it was reading).
        let file = try mount.open("notebook/Busy.md", O_RDWR)
        defer { try? mount.close(file) }
        let stop = Guarded(false)
        let versions = storeVersions(of: key!, in: mount.store) { stop.withLock { $0 } }
        var seen: [(seq: Int64, text: String)] = []
        repeatWhileVersionsLand(times: 1_500, enough: 20, landed: versions.landed) {
            mount.feed()
            if let copy = mount.fileSystem.locked({ mount.fileSystem.openFiles.copy(ref) }) {
                seen.append((copy.storedSeq, String(decoding: copy.content, as: UTF8.self)))
            }
        }
        stop.withLock { $0 = true }
        let stored = versions.finish()
        XCTAssertGreaterThan(stored.count, 20, "versions landed while the feed ran")
        var checked = 0
        for (seq, text) in seen {
            guard let storedText = stored[seq] else { continue }
            checked += 1
            XCTAssertEqual(text, storedText, "a followed text and its change number are one version's (\(seq))")
        }
        XCTAssertGreaterThan(checked, 100)
    }
}

/// A value shared with a thread of the test.
private final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
