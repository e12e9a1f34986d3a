import Foundation
import Glibc
import XCTest

/// Issue 15: the notebook as a vault. Two devices of one account, each with
/// a real `quire mount`; an Obsidian-style vault (nested folders, a hidden
/// `.obsidian/` folder of settings, images, notes linking each other) is
/// copied into one device's notebook with cp -r, tar x and rsync -a, and
/// the sibling shows the same tree, bytes and (where the copy keeps them)
/// times.
final class VaultEndToEndTests: TwoMountedDevicesTestCase {
    var vault: String { dir + "/vault" }

    /// A vault as Obsidian keeps one, every file with its own old time.
    func makeVault() throws {
        var files: [String: [UInt8]] = [
            "Welcome.md": Array("# Welcome\n\nSee [[Projects/2026/Plan]] and ![[attachments/image 0.png]].\n".utf8),
            "Projects/2026/Plan.md": Array("# Plan\n\n- ship the vault\n".utf8),
            "Projects/Ideas.md": Array("Ideas, one per paragraph.\n\nAnother.\n".utf8),
            "Daily/2026-12-01.md": Array("A day.\n".utf8),
            ".obsidian/app.json": Array("{\"attachmentFolderPath\":\"attachments\"}".utf8),
            ".obsidian/workspace.json": Array("{\"main\":{}}".utf8),
            ".obsidian/plugins/calendar/data.json": Array("{}".utf8),
            "attachments/notes.pdf": Array("%PDF-1.4 not really\n".utf8),
        ]
        var generator = SplitMix(seed: 15)
        for i in 0..<10 { files["attachments/image \(i).png"] = [0x89, 0x50, 0x4E, 0x47] + (0..<(1500 + 97 * i)).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
        try FileManager.default.createDirectory(atPath: vault + "/Empty folder", withIntermediateDirectories: true)
        for (index, (path, bytes)) in files.sorted(by: { $0.key < $1.key }).enumerated() {
            let full = vault + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            XCTAssertTrue(FileManager.default.createFile(atPath: full, contents: Data(bytes)))
            XCTAssertEqual(shell("touch -d '2025-0\(1 + index % 9)-1\(index % 10) 10:2\(index % 10):33.123456789' '\(full)'").status, 0)
        }
    }

    struct Entry: Equatable, CustomStringConvertible {
        var isFolder: Bool
        var bytes: [UInt8]
        var mtime: timespec
        static func == (a: Entry, b: Entry) -> Bool { a.isFolder == b.isFolder && a.bytes == b.bytes }
        var description: String { isFolder ? "folder" : "\(bytes.count) bytes" }
    }

    /// Every folder and file under `root`, by path.
    func tree(_ root: String) -> [String: Entry] {
        var out: [String: Entry] = [:]
        guard let walker = FileManager.default.enumerator(atPath: root) else { return out }
        while let relative = walker.nextObject() as? String {
            var info = stat()
            guard lstat(root + "/" + relative, &info) == 0 else { continue }
            let isFolder = info.st_mode & S_IFMT == S_IFDIR
            out[relative] = Entry(isFolder: isFolder, bytes: isFolder ? [] : (FileManager.default.contents(atPath: root + "/" + relative).map(Array.init) ?? []),
                                  mtime: info.st_mtim)
        }
        return out
    }

    func waitForSameTree(_ relative: String, timeout: TimeInterval = 60) -> Bool {
        eventually(timeout) {
            let a = self.tree(self.mount("a") + "/" + relative), b = self.tree(self.mount("b") + "/" + relative)
            return !a.isEmpty && a == b
        }
    }

    func testAVaultCopiedInWithCpTarAndRsyncShowsWholeOnTheSibling() throws {
        try makeTwoMountedDevices()
        try makeVault()
        let source = tree(vault)
        XCTAssertEqual(source.count, 26)

        // cp -r: the tree and every byte.
        XCTAssertEqual(shell("cp -r '\(vault)' '\(mount("a"))/notebook/cp'").status, 0)
        XCTAssertEqual(tree(mount("a") + "/notebook/cp"), source)
        XCTAssertTrue(waitForSameTree("notebook/cp"), "\(tree(mount("b") + "/notebook/cp").keys.sorted())")
        XCTAssertEqual(tree(mount("b") + "/notebook/cp"), source)

        // tar x: times too (tar keeps whole seconds).
        XCTAssertEqual(shell("tar -C '\(vault)' -cf '\(dir)/vault.tar' . && mkdir '\(mount("a"))/notebook/tar' && tar -C '\(mount("a"))/notebook/tar' -xf '\(dir)/vault.tar'").status, 0)
        XCTAssertTrue(waitForSameTree("notebook/tar"))
        let untarred = tree(mount("b") + "/notebook/tar")
        XCTAssertEqual(untarred, source)
        for (path, entry) in source where !entry.isFolder {
            XCTAssertEqual(untarred[path]?.mtime.tv_sec, entry.mtime.tv_sec, path)
        }

        // rsync -a: times to the nanosecond, and a second run copies nothing.
        let first = shell("rsync -a --stats '\(vault)/' '\(mount("a"))/notebook/rsync/'")
        XCTAssertEqual(first.status, 0, first.output)
        XCTAssertTrue(waitForSameTree("notebook/rsync"))
        let synced = tree(mount("b") + "/notebook/rsync")
        XCTAssertEqual(synced, source)
        for (path, entry) in source where !entry.isFolder {
            XCTAssertEqual(synced[path].map { [$0.mtime.tv_sec, $0.mtime.tv_nsec] }, [entry.mtime.tv_sec, entry.mtime.tv_nsec], path)
        }
        let again = shell("rsync -a --stats '\(vault)/' '\(mount("a"))/notebook/rsync/'")
        XCTAssertEqual(again.status, 0, again.output)
        XCTAssertTrue(again.output.contains("Number of regular files transferred: 0"), again.output)
        // And from the sibling too: what it shows is what was copied.
        let fromSibling = shell("rsync -a --stats '\(vault)/' '\(mount("b"))/notebook/rsync/'")
        XCTAssertTrue(fromSibling.output.contains("Number of regular files transferred: 0"), fromSibling.output)

        // Obsidian saves its settings by temp file and rename; the temp file
        // is a local one, so a save leaves no tombstone.
        let tombstones = try quire(["ls", "notebook", "--tombstones"], home: home("a")).stdout.components(separatedBy: " deleted ").count
        let settings = mount("a") + "/notebook/rsync/.obsidian/workspace.json"
        XCTAssertEqual(Syscall.writeFile(settings + ".tmp", "{\"main\":{\"new\":1}}").errno, 0)
        XCTAssertEqual(Syscall.rename(settings + ".tmp", settings), 0)
        XCTAssertTrue(eventually(30) {
            FileManager.default.contents(atPath: self.mount("b") + "/notebook/rsync/.obsidian/workspace.json") == Data("{\"main\":{\"new\":1}}".utf8)
        })
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount("b") + "/notebook/rsync/.obsidian/workspace.json.tmp"))
        XCTAssertEqual(try quire(["ls", "notebook", "--tombstones"], home: home("a")).stdout.components(separatedBy: " deleted ").count, tombstones)
    }

    /// A folder renamed on one device while a note inside it is edited on
    /// the other: both devices show the note, edited, under the new name.
    func testAFolderRenamedWhileANoteInsideIsEditedElsewhere() throws {
        try makeTwoMountedDevices()
        let a = mount("a") + "/notebook", b = mount("b") + "/notebook"
        XCTAssertEqual(mkdir(a + "/Drafts", 0o755), 0)
        XCTAssertEqual(Syscall.writeFile(a + "/Drafts/Letter.md", "Dear reader,\n").errno, 0)
        XCTAssertTrue(eventually(30) { FileManager.default.contents(atPath: b + "/Drafts/Letter.md") == Data("Dear reader,\n".utf8) })
        XCTAssertEqual(Syscall.rename(a + "/Drafts", a + "/Sent"), 0)
        XCTAssertEqual(Syscall.writeFile(b + "/Drafts/Letter.md", "Dear reader,\n\nA second paragraph.\n").errno, 0)
        for side in [a, b] {
            XCTAssertTrue(eventually(30) {
                FileManager.default.contents(atPath: side + "/Sent/Letter.md") == Data("Dear reader,\n\nA second paragraph.\n".utf8)
                    && !FileManager.default.fileExists(atPath: side + "/Drafts")
            }, "\(side): \(tree(side).keys.sorted())")
        }
        // rmdir of a folder that is not empty is refused; empty, it syncs away.
        XCTAssertEqual(rmdir(b + "/Sent"), -1)
        XCTAssertEqual(errno, ENOTEMPTY)
        XCTAssertEqual(unlink(b + "/Sent/Letter.md"), 0)
        XCTAssertEqual(rmdir(b + "/Sent"), 0)
        XCTAssertTrue(eventually(30) { !FileManager.default.fileExists(atPath: a + "/Sent") })
    }
}

/// A small deterministic generator for test bytes.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
