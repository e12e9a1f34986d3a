import Foundation
import XCTest

/// The name rule of the mount (mount/README.md, "Names"), through a real
/// `quire mount`: names are stored and listed in NFC, and a name in any
/// canonically equivalent form (NFD from a macOS client, a sync tool, a
/// Python round trip) reaches the same file.
///
/// Swift compares `String`s by canonical equivalence, so these tests
/// compare bytes (`Array(name.utf8)`); the paths go to the kernel byte for
/// byte.
final class MountNameFormTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    /// The names in a folder as the kernel lists them, byte for byte.
    func listing(_ relative: String) -> [[UInt8]] {
        guard let directory = opendir(device.path(relative)) else { return [] }
        defer { closedir(directory) }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix { $0 != 0 })
            }
            if name != Array(".".utf8) && name != Array("..".utf8) { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

    func live(_ namespace: String) throws -> [(key: String, name: String, isTombstone: Bool)] {
        try device.rows(namespace).filter { !$0.isTombstone }
    }

    /// open(O_CREAT | O_EXCL): its errno, 0 if it created the file.
    func createExclusive(_ relative: String) -> Int32 {
        let descriptor = open(device.path(relative), O_WRONLY | O_CREAT | O_EXCL, 0o644)
        if descriptor < 0 { return errno }
        close(descriptor)
        return 0
    }

    func gone(_ relative: String) -> Bool { eventually(2) { Syscall.status(device.path(relative)) == nil } }

    /// Create in one form, then open, stat, write, tag, rename and unlink by
    /// the other: one file, one row, one listed name (NFC) throughout.
    func testANameCreatedInOneFormIsReachedByTheOther() throws {
        device = try MountedDevice()
        let pairs = [(made: "Caf\u{E9} one", other: "Cafe\u{301} one", nfc: "Caf\u{E9} one"),
                     (made: "Zoe\u{308} two", other: "Zo\u{EB} two", nfc: "Zo\u{EB} two")]
        for (index, pair) in pairs.enumerated() {
            let made = "notebook/\(pair.made).md", other = "notebook/\(pair.other).md"
            XCTAssertNotEqual(utf8(made), utf8(other))
            XCTAssertEqual(Syscall.writeFile(device.path(made), "first\n").errno, 0)

            // stat and read by the other form: the same file.
            let status = try XCTUnwrap(Syscall.status(device.path(other)), pair.other)
            XCTAssertEqual(status.inode, Syscall.status(device.path(made))?.inode)
            XCTAssertEqual(status.size, 6)
            XCTAssertEqual(try device.text(other), "first\n")
            // Listed once, in NFC; stored in NFC whatever form made it.
            XCTAssertEqual(listing("notebook").filter { String(decoding: $0, as: UTF8.self).hasSuffix(index == 0 ? "one.md" : "two.md") },
                           [utf8(pair.nfc + ".md")])
            XCTAssertEqual(shell("ls '\(device.path("notebook"))' | grep -c '\(index == 0 ? "one" : "two").md'").output, "1\n")
            let rows = try live("notebook").filter { $0.name.hasSuffix(index == 0 ? " one" : " two") }
            XCTAssertEqual(rows.count, 1)
            XCTAssertEqual(rows.first.map { utf8($0.name) }, utf8(pair.nfc))
            let key = try XCTUnwrap(rows.first?.key)

            // Creating the other form opens the file that exists.
            XCTAssertEqual(createExclusive(other), EEXIST)
            XCTAssertEqual(Syscall.writeFile(device.path(other), "second\n").errno, 0)
            XCTAssertEqual(try device.text(made), "second\n")
            XCTAssertEqual(try live("notebook").filter { $0.key == key }.count, 1)
            XCTAssertEqual(try live("notebook").count, index + 1, "no twin row")

            // xattrs by either form are the same file's.
            XCTAssertEqual(Syscall.setAttribute(device.path(other), "user.quire.tags", "x,y"), 0)
            XCTAssertEqual(Syscall.attribute(device.path(made), "user.quire.tags").value, "x,y")
            XCTAssertEqual(Syscall.attribute(device.path(other), "user.quire.key").value, key)
            XCTAssertEqual(Syscall.setAttribute(device.path(made), "user.editor", "kept"), 0)
            XCTAssertEqual(Syscall.attribute(device.path(other), "user.editor").value, "kept")
            // Session attribute names follow the rule too.
            XCTAssertEqual(Syscall.setAttribute(device.path(made), "user.cafe\u{301}", "nfd"), 0)
            XCTAssertEqual(Syscall.attribute(device.path(other), "user.caf\u{E9}").value, "nfd")

            // Rename by the other form: both forms of the old name are gone.
            let moved = "notebook/Moved \(index).md"
            XCTAssertEqual(Syscall.rename(device.path(other), device.path(moved)), 0)
            XCTAssertTrue(gone(made), "stale \(pair.made)")
            XCTAssertTrue(gone(other), "stale \(pair.other)")
            XCTAssertEqual(try device.text(moved), "second\n")
            XCTAssertEqual(try live("notebook").first { $0.key == key }?.name, "Moved \(index)")

            // Rename back to the other form: stored and listed in NFC.
            XCTAssertEqual(Syscall.rename(device.path(moved), device.path(other)), 0)
            XCTAssertTrue(gone(moved))
            XCTAssertEqual(try live("notebook").first { $0.key == key }.map { utf8($0.name) }, utf8(pair.nfc))
            XCTAssertEqual(listing("notebook").filter { $0 == utf8(pair.nfc + ".md") }.count, 1)
            XCTAssertEqual(try device.text(made), "second\n")

            // A rename to the name in another form is a rename to itself.
            XCTAssertEqual(Syscall.rename(device.path(made), device.path(other)), 0)
            XCTAssertEqual(try device.text(made), "second\n")
            XCTAssertEqual(try live("notebook").first { $0.key == key }.map { utf8($0.name) }, utf8(pair.nfc))

            // Unlink by the form not used last: both forms are gone.
            XCTAssertEqual(unlink(device.path(index == 0 ? made : other)), 0)
            XCTAssertTrue(gone(made), "stale \(pair.made)")
            XCTAssertTrue(gone(other), "stale \(pair.other)")
            XCTAssertEqual(try device.rows("notebook").first { $0.key == key }?.isTombstone, true)
            // Leave a live row for the count above.
            XCTAssertEqual(Syscall.writeFile(device.path(made), "again\n").errno, 0)
        }
        // NFC can be longer than the typed form (U+0958 is U+0915 U+093C):
        // the stored form must fit in 255 bytes.
        let long = String(repeating: "\u{958}", count: 80)
        XCTAssertEqual(createExclusive("notebook/\(long).md"), ENAMETOOLONG)
        XCTAssertEqual(Syscall.rename(device.path("notebook/Caf\u{E9} one.md"), device.path("notebook/\(long).md")), ENAMETOOLONG)
    }

    /// Rows whose titles are not NFC (`quire put`, a sibling, an older
    /// build) are listed once under the NFC name and reached by both forms;
    /// editing them keeps the stored title.
    func testRowsNamedInAnotherFormElsewhereAreListedOnceAndReachedByBoth() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Cafe\u{301}"], home: home, stdin: Array("from put\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "settings", "the\u{300}me", "dark"], home: home).status, 0)
        }
        XCTAssertEqual(listing("notebook"), [utf8("Caf\u{E9}.md")])
        XCTAssertEqual(listing("settings"), [utf8("th\u{E8}me.txt")])
        XCTAssertEqual(try device.text("notebook/Caf\u{E9}.md"), "from put\n")
        XCTAssertEqual(try device.text("notebook/Cafe\u{301}.md"), "from put\n")
        XCTAssertEqual(try device.text("settings/the\u{300}me.txt"), "dark\n")

        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Caf\u{E9}.md"), "edited\n").errno, 0)
        XCTAssertEqual(Syscall.writeFile(device.path("settings/th\u{E8}me.txt"), "light\n").errno, 0)
        let notes = try live("notebook"), settings = try live("settings")
        XCTAssertEqual(notes.count, 1, "no NFC twin: \(notes)")
        XCTAssertEqual(settings.count, 1, "no NFC twin (settings keys come from the name): \(settings)")
        XCTAssertEqual(notes.first.map { utf8($0.name) }, utf8("Cafe\u{301}"), "writing the text does not retitle")
        XCTAssertEqual(try device.text("notebook/Cafe\u{301}.md"), "edited\n")
        XCTAssertEqual(try device.text("settings/the\u{300}me.txt"), "light\n")

        // One that arrives while mounted.
        XCTAssertEqual(try quire(["put", "notebook", "Zoe\u{308}"], home: device.home, stdin: Array("late\n".utf8)).status, 0)
        XCTAssertTrue(eventually(2) { self.listing("notebook") == [self.utf8("Caf\u{E9}.md"), self.utf8("Zo\u{EB}.md")] },
                      "\(listing("notebook").map { String(decoding: $0, as: UTF8.self).unicodeScalars.map(\.value) })")
        XCTAssertEqual(try device.text("notebook/Zoe\u{308}.md"), "late\n")
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Zo\u{EB}.md"), "more\n", flags: O_WRONLY | O_CREAT | O_APPEND).errno, 0)
        XCTAssertEqual(try device.text("notebook/Zoe\u{308}.md"), "late\nmore\n")
        XCTAssertEqual(try live("notebook").count, 2)

        // Two rows whose titles differ only in form are two files that do
        // not look alike: one keeps the plain name, the other is marked.
        // (`quire put` of a name in another form writes the row the mount
        // opens under it, as a save there would; --new makes the twin.)
        XCTAssertEqual(try quire(["put", "notebook", "Caf\u{E9}", "--new"], home: device.home, stdin: Array("twin\n".utf8)).status, 0)
        XCTAssertTrue(eventually(2) { self.listing("notebook").count == 3 })
        let names = listing("notebook").map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(names.filter { $0.hasPrefix("Caf\u{E9}%~") }.count, 1, "\(names)")
        XCTAssertEqual(listing("notebook").filter { $0 == utf8("Caf\u{E9}.md") }.count, 1)
    }

    /// Two programs create the same name at once, one in NFC, one in NFD:
    /// one row. With O_EXCL exactly one of them creates it.
    func testBothFormsWrittenConcurrentlyEndInOneRow() throws {
        device = try MountedDevice()
        let rounds = 12
        for round in 0..<rounds {
            let forms = ["notebook/Caf\u{E9} \(round).md", "notebook/Cafe\u{301} \(round).md"]
            let paths = forms.map(device.path)
            var results = [Int32](repeating: -1, count: 2)
            results.withUnsafeMutableBufferPointer { slots in
                let slots = UncheckedSendableBuffer(slots)
                DispatchQueue.concurrentPerform(iterations: 2) { writer in
                    // Every other round the NFD writer tends to come first.
                    if (round + writer) % 2 == 0 { usleep(500) }
                    slots.buffer[writer] = Syscall.writeFile(paths[writer], "writer \(writer)\n").errno
                }
            }
            XCTAssertEqual(results, [0, 0], "round \(round)")
            // One file: one writer's text, or both as paragraphs when the
            // saves overlapped (a note merges concurrent saves: no word lost).
            let paragraphs = try device.text(forms[1]).split(separator: "\n").map(String.init)
            XCTAssertFalse(paragraphs.isEmpty, "round \(round)")
            XCTAssertTrue(Set(paragraphs).isSubset(of: ["writer 0", "writer 1"]), "round \(round): \(paragraphs)")
            XCTAssertEqual(Syscall.status(paths[0])?.inode, Syscall.status(paths[1])?.inode)

            let exclusive = ["notebook/Ol\u{E9} \(round).md", "notebook/Ole\u{301} \(round).md"].map(device.path)
            var created = [Int32](repeating: -1, count: 2)
            created.withUnsafeMutableBufferPointer { slots in
                let slots = UncheckedSendableBuffer(slots)
                DispatchQueue.concurrentPerform(iterations: 2) { writer in
                    if (round + writer) % 2 == 0 { usleep(500) }
                    slots.buffer[writer] = Syscall.writeFile(exclusive[writer], "excl \(writer)\n",
                                                             flags: O_WRONLY | O_CREAT | O_EXCL).errno
                }
            }
            XCTAssertEqual(created.sorted(), [0, EEXIST], "round \(round)")
        }
        let rows = try live("notebook")
        XCTAssertEqual(rows.count, 2 * rounds, "\(rows.map(\.name))")
        XCTAssertTrue(rows.allSatisfy { utf8($0.name) == utf8($0.name.precomposedStringWithCanonicalMapping) }, "stored in NFC")
        let names = listing("notebook")
        XCTAssertEqual(names.count, 2 * rounds)
        XCTAssertEqual(Set(names).count, names.count)
        XCTAssertTrue(names.allSatisfy { $0 == utf8(String(decoding: $0, as: UTF8.self).precomposedStringWithCanonicalMapping) })
    }

    /// Files that are not rows (editor junk, other extensions) follow the
    /// same rule: kept under their NFC name, reached by either form.
    func testLocalFilesAnswerToEitherForm() throws {
        device = try MountedDevice()
        XCTAssertEqual(Syscall.writeFile(device.path("plans/Cafe\u{301}.txt"), "local\n").errno, 0)
        XCTAssertEqual(Syscall.writeFile(device.path("plans/.Cafe\u{301}.md.swp"), "swap").errno, 0)
        XCTAssertEqual(try device.text("plans/Caf\u{E9}.txt"), "local\n")
        XCTAssertEqual(try device.text("plans/.Caf\u{E9}.md.swp"), "swap")
        XCTAssertEqual(listing("plans"), [utf8(".Caf\u{E9}.md.swp"), utf8("Caf\u{E9}.txt")])
        XCTAssertTrue(FileManager.default.fileExists(atPath: device.home + "/scratch/plans/Caf\u{E9}.txt"))
        XCTAssertEqual(createExclusive("plans/Caf\u{E9}.txt"), EEXIST)
        XCTAssertEqual(Syscall.rename(device.path("plans/Caf\u{E9}.txt"), device.path("plans/Other.txt")), 0)
        XCTAssertTrue(gone("plans/Cafe\u{301}.txt"))
        XCTAssertEqual(unlink(device.path("plans/.Caf\u{E9}.md.swp")), 0)
        XCTAssertTrue(gone("plans/.Cafe\u{301}.md.swp"))
        XCTAssertEqual(listing("plans"), [utf8("Other.txt")])
        XCTAssertEqual(try live("plans").count, 0)
    }

    /// Local files an older build kept under a name in another form are
    /// renamed to NFC when mounting; a file whose NFC twin is there too is
    /// kept beside it, renamed, and the status says so.
    func testLocalFilesLeftInAnotherFormAreRenamedToNFCAtMount() throws {
        device = try MountedDevice { home in
            let folder = home + "/scratch/plans/"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (name, text) in [("Cafe\u{301}.txt", "old\n"), ("Zo\u{EB}.txt", "nfc\n"), ("Zoe\u{308}.txt", "nfd\n")] {
                XCTAssertEqual(Syscall.writeFile(folder + name, text).errno, 0)
            }
        }
        XCTAssertEqual(listing("plans"), [utf8("Caf\u{E9}.txt"), utf8("Zo\u{EB}.txt"), utf8("Zo\u{EB}.txt.nfd")])
        XCTAssertEqual(try device.text("plans/Cafe\u{301}.txt"), "old\n")
        XCTAssertEqual(try device.text("plans/Caf\u{E9}.txt"), "old\n")
        XCTAssertEqual(try device.text("plans/Zoe\u{308}.txt"), "nfc\n")
        XCTAssertEqual(try device.text("plans/Zo\u{EB}.txt.nfd"), "nfd\n")
        let status = try device.text(".quire/status")
        XCTAssertTrue(status.contains("one is now Zo\u{EB}.txt.nfd"), status)
    }
}

/// Lets two threads of `concurrentPerform` fill distinct slots of one buffer.
private struct UncheckedSendableBuffer<T>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<T>
    init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }
}
