import Foundation
import Glibc
import XCTest

/// inotify on a mount: a sibling's changes raise the events an editor or
/// an indexer watching the folder waits for (`WatcherNotices`), and telling
/// them writes nothing.
final class WatcherNoticesEndToEndTests: TwoMountedDevicesTestCase {
    func testASiblingsChangesRaiseInotifyEventsAndWriteNothing() throws {
        try makeTwoMountedDevices()
        let a = mount("a") + "/notebook", b = mount("b") + "/notebook"
        for (name, text) in [("Kept", "kept\n"), ("Gone", "gone\n"), ("Moved", "moved\n")] {
            XCTAssertEqual(Syscall.writeFile("\(a)/\(name).md", text).errno, 0)
        }
        XCTAssertTrue(eventually(15) { ["Kept", "Gone", "Moved"].allSatisfy { FileManager.default.fileExists(atPath: "\(b)/\($0).md") } })
        // An editor that shows the folder has looked its files up.
        for name in ["Kept", "Gone", "Moved"] { XCTAssertEqual(try String(contentsOfFile: "\(b)/\(name).md", encoding: .utf8).isEmpty, false) }

        let watch = try InotifyWatch(b)
        XCTAssertEqual(Syscall.writeFile("\(a)/Kept.md", "kept, edited on a\n").errno, 0)
        XCTAssertEqual(Syscall.writeFile("\(a)/New.md", "new on a\n").errno, 0)
        XCTAssertEqual(unlink("\(a)/Gone.md"), 0)
        XCTAssertEqual(rename("\(a)/Moved.md", "\(a)/Moved again.md"), 0)
        XCTAssertTrue(eventually(15) {
            (try? String(contentsOfFile: "\(b)/Kept.md", encoding: .utf8)) == "kept, edited on a\n"
                && FileManager.default.fileExists(atPath: "\(b)/New.md") && FileManager.default.fileExists(atPath: "\(b)/Moved again.md")
                && !FileManager.default.fileExists(atPath: "\(b)/Gone.md") && !FileManager.default.fileExists(atPath: "\(b)/Moved.md")
        })
        var events: [String: UInt32] = [:]
        XCTAssertTrue(eventually(10) {
            for (name, mask) in watch.read() { events[name, default: 0] |= mask }
            return events["Kept.md", default: 0] & UInt32(IN_ATTRIB | IN_MODIFY) != 0
                && events["New.md", default: 0] & UInt32(IN_CREATE) != 0
                && events["Gone.md", default: 0] & UInt32(IN_DELETE) != 0
                && events["Moved.md", default: 0] & UInt32(IN_MOVED_FROM) != 0
                && events["Moved again.md", default: 0] & UInt32(IN_MOVED_TO) != 0
        }, "events seen: \(events)")
        // A rename, told as one (an editor follows it): one cookie for both names.
        XCTAssertEqual(events["Moved.md", default: 0] & UInt32(IN_DELETE), 0, "\(events)")
        XCTAssertEqual(events["Moved again.md", default: 0] & UInt32(IN_CREATE), 0, "\(events)")
        XCTAssertNotNil(watch.cookies["Moved.md"])
        XCTAssertEqual(watch.cookies["Moved.md"], watch.cookies["Moved again.md"])

        // A sibling's new folder and its removal are announced too (an
        // explorer such as Obsidian's shows the folder and watches it), and
        // its folder moves and deletes leave the mount whole.
        XCTAssertEqual(mkdir("\(a)/Box", 0o755), 0)
        XCTAssertEqual(Syscall.writeFile("\(a)/Box/In.md", "in the box\n").errno, 0)
        XCTAssertTrue(eventually(15) { FileManager.default.fileExists(atPath: "\(b)/Box/In.md") })
        XCTAssertEqual(try String(contentsOfFile: "\(b)/Box/In.md", encoding: .utf8), "in the box\n")
        let folderCreated = UInt32(IN_CREATE) | UInt32(IN_ISDIR), folderDeleted = UInt32(IN_DELETE) | UInt32(IN_ISDIR)
        XCTAssertTrue(eventually(10) {
            for (name, mask) in watch.read() { events[name, default: 0] |= mask }
            return events["Box", default: 0] & folderCreated == folderCreated
        }, "events seen: \(events)")
        // A shell on b keeps the folder as its working folder meanwhile.
        let pin = open("\(b)/Box", O_RDONLY | O_DIRECTORY)
        XCTAssertGreaterThanOrEqual(pin, 0)
        defer { close(pin) }
        XCTAssertEqual(rename("\(a)/Box/In.md", "\(a)/Out.md"), 0)
        XCTAssertEqual(rmdir("\(a)/Box"), 0)
        XCTAssertTrue(eventually(15) { FileManager.default.fileExists(atPath: "\(b)/Out.md") && !FileManager.default.fileExists(atPath: "\(b)/Box") })
        XCTAssertEqual(try String(contentsOfFile: "\(b)/Out.md", encoding: .utf8), "in the box\n")
        XCTAssertTrue(eventually(10) {
            for (name, mask) in watch.read() { events[name, default: 0] |= mask }
            return events["Out.md", default: 0] & UInt32(IN_CREATE | IN_MOVED_TO) != 0 && events["Box", default: 0] & folderDeleted == folderDeleted
        }, "events seen: \(events)")
        XCTAssertNil(events["In.md"], "nothing of the name that was in the folder, which never was in this one: \(events)")
        // Made again under its name (the same row key): the folder works on
        // b although the kernel keeps the removed one's inode for the shell.
        XCTAssertEqual(mkdir("\(a)/Box", 0o755), 0)
        XCTAssertEqual(Syscall.writeFile("\(a)/Box/Again.md", "back\n").errno, 0)
        XCTAssertTrue(eventually(15) { (try? String(contentsOfFile: "\(b)/Box/Again.md", encoding: .utf8)) == "back\n" })
        XCTAssertEqual(Syscall.writeFile("\(b)/Box/From b.md", "typed on b\n").errno, 0)
        XCTAssertTrue(eventually(15) { (try? String(contentsOfFile: "\(a)/Box/From b.md", encoding: .utf8)) == "typed on b\n" })
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "\(b)/Box").sorted(), ["Again.md", "From b.md"])

        // A write made on b itself raises the kernel's own events only.
        XCTAssertEqual(Syscall.writeFile("\(b)/Local.md", "typed on b\n").errno, 0)
        Thread.sleep(forTimeInterval: 1)
        var local: UInt32 = 0
        for (name, mask) in watch.read() where name == "Local.md" { local |= mask }
        XCTAssertNotEqual(local & UInt32(IN_CLOSE_WRITE), 0)
        XCTAssertEqual(local & UInt32(IN_ATTRIB), 0, "the feed told of b's own write")

        // Telling wrote nothing: both devices hold the same rows, the new
        // note once, and b's mount shows exactly what a's does.
        XCTAssertTrue(eventually(15) {
            (try? quire(["digest"], home: self.home("a")).stdout) == (try? quire(["digest"], home: self.home("b")).stdout)
        })
        let rows = try quire(["ls", "notebook", "--tombstones"], home: home("b")).stdout
        XCTAssertEqual(rows.split(separator: "\n").filter { $0.hasSuffix("  New") }.count, 1, rows)
        XCTAssertEqual(rows.split(separator: "\n").filter { $0.contains("deleted") }.count, 1, "Gone's tombstone alone (Box came back): \(rows)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: b).sorted(),
                       try FileManager.default.contentsOfDirectory(atPath: a).sorted())
        XCTAssertEqual(try String(contentsOfFile: "\(b)/New.md", encoding: .utf8), "new on a\n")

        // Saves by rename on b through a temp file that is a row for a
        // moment (its name is not one that waits in scratch), each read back
        // at once, as an editor does: the feed tells nothing of the temp
        // files (its unlink of one reached the note's inode, with a size of
        // 0, and a read racing it came back empty).
        var text = "saved by rename\n"
        for round in 0..<30 {
            text += "round \(round)\n"
            let temp = "\(b)/Local.md.tmp\(1000 + round)"
            XCTAssertEqual(Syscall.writeFile(temp, text).errno, 0)
            XCTAssertEqual(rename(temp, "\(b)/Local.md"), 0)
            XCTAssertEqual(try String(contentsOfFile: "\(b)/Local.md", encoding: .utf8), text, "round \(round)")
        }
        Thread.sleep(forTimeInterval: 1)
        var removedTemps: [String] = []
        for (name, mask) in watch.read() where name.hasPrefix("Local.md.tmp") && mask & UInt32(IN_DELETE) != 0 { removedTemps.append(name) }
        XCTAssertEqual(removedTemps, [], "the kernel moved each temp file itself: nothing to tell")
    }
}

/// An inotify watch on one folder, read without blocking.
private final class InotifyWatch {
    let descriptor: Int32
    /// The cookie of each name's last move event (IN_MOVED_FROM, IN_MOVED_TO).
    private(set) var cookies: [String: UInt32] = [:]

    init(_ folder: String) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0, inotify_add_watch(descriptor, folder, 0xfff /* IN_ALL_EVENTS */) >= 0 else {
            throw MountTestError("inotify on \(folder): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// The events queued now: (name, mask) in order.
    func read() -> [(String, UInt32)] {
        var events: [(String, UInt32)] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            var at = 0
            while at + 16 <= count {
                func word(_ offset: Int) -> UInt32 { buffer[(at + offset)..<(at + offset + 4)].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
                let mask = word(4), length = Int(word(12))
                let name = String(decoding: buffer[(at + 16)..<(at + 16 + length)].prefix { $0 != 0 }, as: UTF8.self)
                events.append((name, mask))
                if mask & UInt32(IN_MOVED_FROM | IN_MOVED_TO) != 0 { cookies[name] = word(8) }
                at += 16 + length
            }
        }
    }
}
