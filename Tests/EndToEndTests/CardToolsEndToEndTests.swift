import Foundation
import XCTest

/// Issue 16: contacts and plans folders that real tools live in. Two
/// devices of one account, each with a real `quire mount`; khard works in
/// one device's contacts/ (a vdir) and todoman in its plans/, and what they
/// wrote shows on the sibling's mount byte for byte.
final class CardToolsEndToEndTests: TwoMountedDevicesTestCase {
    var daemons: [SyncDaemon] = []

    override func tearDown() {
        daemons.forEach { $0.stop() }
        daemons = []
        super.tearDown()
    }

    /// a and b mounted, with khard and todoman set up on both.
    override func makeTwoMountedDevices(syncing: Bool = true) throws {
        try super.makeTwoMountedDevices(syncing: syncing)
        try writeToolConfigs()
    }

    /// khard and todoman configured on each device's folders, with their
    /// own HOME so nothing of the machine's user is read or written.
    func writeToolConfigs() throws {
        for name in ["a", "b"] {
            let khard = """
                [addressbooks]
                [[quire]]
                path = \(mount(name))/contacts

                [general]
                default_action = list
                editor = /bin/true
                merge_editor = /bin/true

                [contact table]
                display = first_name
                group_by_addressbook = no
                reverse = no
                show_nicknames = no
                show_uids = yes
                sort = last_name
                localize_dates = no
                preferred_phone_number_type = pref, cell, home
                preferred_email_address_type = pref, work, home

                [vcard]
                private_objects = Jabber,
                preferred_version = 3.0
                search_in_source_files = no
                skip_unparsable = no

                """
            try khard.write(toFile: "\(dir)/khard-\(name).conf", atomically: true, encoding: .utf8)
            let todoman = """
                path = "\(mount(name))/plans"
                date_format = "%Y-%m-%d"
                time_format = "%H:%M"
                default_list = "plans"
                default_due = 0
                cache_path = "\(dir)/todoman-\(name).sqlite3"

                """
            try todoman.write(toFile: "\(dir)/todoman-\(name).py", atomically: true, encoding: .utf8)
        }
    }

    /// Runs a tool of device `name` (khard or todoman) through the shell.
    @discardableResult
    func tool(_ name: String, _ command: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        let config = command.hasPrefix("khard") ? "-c \(dir)/khard-\(name).conf" : "--config \(dir)/todoman-\(name).py"
        let words = command.split(separator: " ", maxSplits: 1).map(String.init)
        let result = shell("cd '\(dir)' && HOME='\(dir)' TZ=UTC LANG=C.UTF-8 \(words[0]) \(config) \(words.count > 1 ? words[1] : "") 2>&1")
        XCTAssertEqual(result.status, 0, "\(command) on \(name): \(result.output)", file: file, line: line)
        return result.output
    }

    func requireTools() throws {
        for program in ["khard", "todoman"] where shell("command -v \(program)").status != 0 {
            // CI installs them (tools/setup): a missing one there is a failure, not a skip.
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("\(program) is not installed (tools/setup installs it)") }
            throw XCTSkip("\(program) is not installed (tools/setup installs it)")
        }
    }

    func files(_ name: String, _ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: mount(name) + "/" + folder)) ?? []).sorted()
    }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map(Array.init) }

    /// Waits until `relative` reads the same on both mounts (and, if given, equals `expected`).
    func waitForSameFile(_ relative: String, expected: [UInt8]? = nil, timeout: TimeInterval = 30) -> Bool {
        eventually(timeout) {
            guard let a = self.bytes(self.mount("a") + "/" + relative), let b = self.bytes(self.mount("b") + "/" + relative) else { return false }
            return a == b && (expected == nil || a == expected)
        }
    }

    // MARK: khard

    func testKhardNewListEditAndRemoveShowOnTheSibling() throws {
        try requireTools()
        try makeTwoMountedDevices()
        let template = """
            First name : Grace
            Last name : Hopper
            Organisation : US Navy
            Email :
                work : grace@navy.example
            Phone :
                cell : +1 555 0100
            Birthday : 1906-12-09
            Note : Found the first bug.

            """
        try template.write(toFile: dir + "/grace.yaml", atomically: true, encoding: .utf8)
        tool("a", "khard new -a quire -i \(dir)/grace.yaml")
        let made = files("a", "contacts")
        XCTAssertEqual(made.count, 1, "\(made)")
        let name = try XCTUnwrap(made.first)
        XCTAssertTrue(name.hasSuffix(".vcf"))
        let card = String(decoding: bytes(mount("a") + "/contacts/" + name) ?? [], as: UTF8.self)
        XCTAssertTrue(card.contains("UID:" + name.dropLast(4)), "khard names the file by UID: \(card)")
        XCTAssertTrue(waitForSameFile("contacts/" + name), "the card reaches b byte for byte")
        let listed = tool("b", "khard list")
        XCTAssertTrue(listed.contains("Grace Hopper") && listed.contains("+1 555 0100"), listed)

        // khard edit (non-interactive, from YAML) on b shows on a.
        let yaml = tool("b", "khard show --format yaml Grace").replacingOccurrences(of: "+1 555 0100", with: "+1 555 0199")
        try yaml.write(toFile: dir + "/edited.yaml", atomically: true, encoding: .utf8)
        let edit = shell("cd '\(dir)' && yes y | HOME='\(dir)' TZ=UTC khard -c \(dir)/khard-b.conf edit -i \(dir)/edited.yaml Grace 2>&1")
        XCTAssertEqual(edit.status, 0, edit.output)
        XCTAssertTrue(eventually(30) {
            String(decoding: self.bytes(self.mount("a") + "/contacts/" + name) ?? [], as: UTF8.self).contains("+1 555 0199")
        }, "the edit reaches a")
        XCTAssertTrue(waitForSameFile("contacts/" + name))
        XCTAssertEqual(files("b", "contacts"), [name], "an edit keeps the file (and the row)")
        XCTAssertTrue(tool("a", "khard list").contains("+1 555 0199"))

        // khard remove on a: gone on b, as a tombstone.
        tool("a", "khard remove --force Grace")
        XCTAssertTrue(eventually(30) { self.files("b", "contacts").isEmpty }, "\(files("b", "contacts"))")
        let rows = try jsonObject(quireOK(["ls", "contacts", "--tombstones", "--json"], home: home("b")).stdout) as! [[String: Any]]
        XCTAssertEqual(rows.map { $0["tombstone"] as? Bool }, [true])
        let empty = shell("cd '\(dir)' && HOME='\(dir)' khard -c \(dir)/khard-b.conf list 2>&1")
        XCTAssertTrue(empty.output.contains("Found no contacts"), empty.output)
    }

    /// A card as a phone or Google exports it (vCard 3.0, CRLF, folded
    /// base64 PHOTO, grouped properties, X- properties) is kept byte for
    /// byte, on this device and on the sibling; a card without a UID gets
    /// one; a malformed card is refused at close and loses nothing.
    func testAVCard3ExportIsKeptByteForByteOnTheSibling() throws {
        try requireTools()
        try makeTwoMountedDevices()
        var photo = ""
        var generator = SystemRandomNumberGenerator()
        let raw = (0..<24_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        photo = Data(raw).base64EncodedString()
        var photoLines = "PHOTO;ENCODING=b;TYPE=JPEG:" + photo
        // Folded as exporters do: 75 octets, continuation lines start with a space.
        var folded = ""
        while photoLines.utf8.count > 75 {
            folded += String(photoLines.prefix(75)) + "\r\n "
            photoLines = String(photoLines.dropFirst(75))
        }
        folded += photoLines + "\r\n"
        let export = "BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Apple Inc.//iPhone OS 17.0//EN\r\nN:Lovelace;Ada;;Countess;\r\n"
            + "FN:Ada Lovelace\r\nORG:Analytical Engines Ltd;Research\r\nTITLE:Mathematician\r\n"
            + "item1.EMAIL;type=INTERNET;type=pref:ada@example.org\r\nitem1.X-ABLabel:_$!<Other>!$_\r\n"
            + "TEL;type=CELL;type=VOICE;type=pref:+44 20 7946 0000\r\n"
            + "item2.ADR;type=HOME;type=pref:;;12 St James's Square;London;;SW1Y 4JH;United Kingdom\r\nitem2.X-ABADR:gb\r\n"
            + "BDAY;value=date:1815-12-10\r\nNOTE:Wrote the first program\\, for the engine.\\nSecond line.\r\n"
            + "CATEGORIES:friends,science\r\nX-SOCIALPROFILE;type=twitter:x-apple:ada\r\nX-QUIRE-TEST;X-PARAM=\"a:b\":unknown\\; kept\r\n"
            + folded + "UID:8E0A4C2D-7B91-4F0C-9C44-ADA1815ADA18\r\nEND:VCARD\r\n"
        try export.write(toFile: dir + "/ada.vcf", atomically: true, encoding: .utf8)
        XCTAssertEqual(shell("cp '\(dir)/ada.vcf' '\(mount("a"))/contacts/ada.vcf'").status, 0)
        XCTAssertEqual(bytes(mount("a") + "/contacts/ada.vcf"), Array(export.utf8), "kept byte for byte here")
        XCTAssertTrue(waitForSameFile("contacts/ada.vcf", expected: Array(export.utf8)), "and on the sibling")
        let shown = tool("b", "khard show Ada")
        XCTAssertTrue(shown.contains("Analytical Engines") && shown.contains("1815"), shown)
        let fields = try jsonObject(quireOK(["get", "contacts", "ada", "--json"], home: home("b")).stdout) as! [String: Any]
        XCTAssertEqual(fields["fn"] as? String, "Ada Lovelace")
        XCTAssertEqual(fields["uid"] as? String, "8E0A4C2D-7B91-4F0C-9C44-ADA1815ADA18")

        // Without a UID (Google's exports), it gets one after VERSION; the rest is as written.
        let google = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Charles Babbage\r\nN:Babbage;Charles;;;\r\nORG:Difference Engines\r\nEND:VCARD\r\n"
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/contacts/babbage.vcf", google).errno, 0)
        let withUID = String(decoding: bytes(mount("a") + "/contacts/babbage.vcf") ?? [], as: UTF8.self)
        XCTAssertTrue(withUID.hasPrefix("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:"), withUID)
        XCTAssertEqual(withUID.replacingOccurrences(of: #"UID:[0-9a-f-]{36}\r\n"#, with: "", options: .regularExpression), google)
        XCTAssertTrue(waitForSameFile("contacts/babbage.vcf", expected: Array(withUID.utf8)))
        XCTAssertTrue(tool("b", "khard list").contains("Charles Babbage"))

        // Malformed: close() fails, the stored card is untouched, the text is kept beside it.
        let broken = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ada\r\nthis line is not a property\r\nEND:VCARD\r\n"
        let result = Syscall.writeFile(mount("a") + "/contacts/ada.vcf", broken)
        XCTAssertEqual(result.errno, EINVAL, "\(result)")
        XCTAssertEqual(bytes(mount("a") + "/contacts/ada.vcf"), Array(export.utf8))
        XCTAssertEqual(bytes(mount("a") + "/contacts/ada.vcf.rejected"), Array(broken.utf8))
        let status = try String(contentsOfFile: mount("a") + "/.quire/status", encoding: .utf8)
        XCTAssertTrue(status.contains("line 4 is not a property"), status)
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/contacts/old.vcf", "BEGIN:VCARD\r\nVERSION:2.1\r\nFN:Old\r\nEND:VCARD\r\n").errno, EINVAL)
        XCTAssertTrue(try String(contentsOfFile: mount("a") + "/.quire/status", encoding: .utf8).contains("quire reads 4.0 and 3.0"))
        XCTAssertEqual(bytes(mount("b") + "/contacts/ada.vcf"), Array(export.utf8))
    }

    /// A card with a photo of several MiB stays whole (within the 16 MiB
    /// limit of a file); one over the limit is refused with EFBIG.
    func testALargePhotoStaysInTheCard() throws {
        try makeTwoMountedDevices()
        let photo = Data((0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).base64EncodedString()
        var lines = ["BEGIN:VCARD", "VERSION:4.0", "UID:big", "FN:Big Photo"]
        var rest = Substring("PHOTO:data:image/jpeg;base64," + photo)
        var photoLines: [String] = []
        while !rest.isEmpty { photoLines.append(String(rest.prefix(74))); rest = rest.dropFirst(74) }
        lines.append(photoLines.joined(separator: "\r\n "))
        lines.append("END:VCARD")
        let card = Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
        XCTAssertGreaterThan(card.count, 8 << 20)
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/contacts/big.vcf", chunks: stride(from: 0, to: card.count, by: 1 << 20).map {
            Array(card[$0..<min($0 + (1 << 20), card.count)])
        }).errno, 0)
        XCTAssertEqual(bytes(mount("a") + "/contacts/big.vcf"), card)
        XCTAssertTrue(waitForSameFile("contacts/big.vcf", expected: card, timeout: 60))
        let fields = try jsonObject(quireOK(["get", "contacts", "big", "--json"], home: home("b")).stdout) as! [String: Any]
        XCTAssertEqual(fields["fn"] as? String, "Big Photo")
        // Over the limit: EFBIG, and the card as it was.
        let huge = Array(card.dropLast(11)) + [UInt8](repeating: UInt8(ascii: "A"), count: 9 << 20) + Array("\r\nEND:VCARD\r\n".utf8)
        let result = Syscall.writeFile(mount("a") + "/contacts/big.vcf", chunks: stride(from: 0, to: huge.count, by: 1 << 20).map {
            Array(huge[$0..<min($0 + (1 << 20), huge.count)])
        })
        XCTAssertEqual(result.errno, EFBIG, "\(result)")
        XCTAssertEqual(bytes(mount("b") + "/contacts/big.vcf"), card)
    }

    // MARK: todoman

    /// The todos of todoman's `--porcelain` list: summary → id.
    func todos(_ name: String) throws -> [String: Int] {
        let output = tool(name, "todoman --porcelain list --status ANY")
        let list = try jsonObject(output) as? [[String: Any]] ?? []
        return Dictionary(list.map { ($0["summary"] as? String ?? "", $0["id"] as? Int ?? 0) }) { first, _ in first }
    }

    func testTodomanNewListDoneAndDeleteShowOnTheSibling() throws {
        try requireTools()
        try makeTwoMountedDevices()
        tool("a", "todoman new -l plans --due 2026-12-31 --priority high Buy oat milk")
        let made = files("a", "plans")
        XCTAssertEqual(made.count, 1, "\(made)")
        let name = try XCTUnwrap(made.first)
        XCTAssertTrue(name.hasSuffix(".ics"), name)
        XCTAssertTrue(waitForSameFile("plans/" + name), "the todo reaches b byte for byte")
        let listed = tool("b", "todoman list")
        XCTAssertTrue(listed.contains("Buy oat milk") && listed.contains("2026-12-31"), listed)
        let ls = try quireOK(["ls", "plans"], home: home("b")).stdout
        XCTAssertTrue(ls.contains("[ ] 2026-12-31 !4 Buy oat milk"), ls)

        // Done on b: STATUS and COMPLETED on a.
        let id = try XCTUnwrap(try todos("b")["Buy oat milk"])
        tool("b", "todoman done \(id)")
        XCTAssertTrue(eventually(30) {
            String(decoding: self.bytes(self.mount("a") + "/plans/" + name) ?? [], as: UTF8.self).contains("STATUS:COMPLETED")
        })
        XCTAssertTrue(waitForSameFile("plans/" + name))
        XCTAssertTrue(try quireOK(["ls", "plans"], home: home("a")).stdout.contains("[x] 2026-12-31 !4 Buy oat milk"))
        XCTAssertTrue(tool("a", "todoman list --status COMPLETED").contains("Buy oat milk"))

        // A todo written by hand with RRULE, CATEGORIES, a VALARM and an X- property: every byte kept.
        let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Hand//EN\r\nBEGIN:VTODO\r\nUID:water-plants@example\r\n"
            + "DTSTAMP:20261201T090000Z\r\nSUMMARY:Water the plants\r\nDESCRIPTION:The fern\\, then the palm.\r\n"
            + "DUE;VALUE=DATE:20261205\r\nPRIORITY:5\r\nCATEGORIES:home,garden\r\nRRULE:FREQ=WEEKLY;BYDAY=SA\r\n"
            + "STATUS:NEEDS-ACTION\r\nX-QUIRE-TEST;X-P=1:kept\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:-PT1H\r\n"
            + "DESCRIPTION:Plants\r\nEND:VALARM\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/plans/water-plants@example.ics", ics).errno, 0)
        XCTAssertTrue(waitForSameFile("plans/water-plants@example.ics", expected: Array(ics.utf8)))
        XCTAssertTrue(tool("b", "todoman list").contains("Water the plants"))
        let fields = try jsonObject(quireOK(["get", "plans", "water-plants@example", "--json"], home: home("b")).stdout) as! [String: Any]
        XCTAssertEqual(fields["rrule"] as? String, "FREQ=WEEKLY;BYDAY=SA")
        XCTAssertEqual(fields["categories"] as? [String], ["home", "garden"])
        XCTAssertEqual(fields["priority"] as? Int, 5)

        // quire put speaks the same fields, and todoman reads them.
        try quireOK(["put", "plans", "Call the bank", "--due", "2026-12-20", "--priority", "1", "--categories", "money"], home: home("a"))
        XCTAssertTrue(eventually(30) { self.files("b", "plans").contains("Call the bank.ics") })
        XCTAssertTrue(tool("b", "todoman list").contains("Call the bank"))

        // Deleted on a: gone on b.
        let doomed = try XCTUnwrap(try todos("a")["Buy oat milk"])
        tool("a", "todoman delete --yes \(doomed)")
        XCTAssertTrue(eventually(30) { !self.files("b", "plans").contains(name) }, "\(files("b", "plans"))")
        XCTAssertEqual(try todos("b")["Buy oat milk"], nil)

        // A calendar with no todo, or cut short, is refused with the reason.
        let event = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nSUMMARY:Party\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/plans/party.ics", event).errno, EINVAL)
        XCTAssertTrue(try String(contentsOfFile: mount("a") + "/.quire/status", encoding: .utf8).contains("holds no VTODO"))
    }

    // MARK: Concurrent edits

    func testConcurrentEditsOfTwoPropertiesOfOneCardBothSurvive() throws {
        try makeTwoMountedDevices(syncing: false)
        let card = "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:grace\r\nFN:Grace Hopper\r\nTEL;TYPE=cell:+1 555 0100\r\n"
            + "EMAIL:grace@navy.example\r\nNOTE:first\r\nEND:VCARD\r\n"
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/contacts/grace.vcf", card).errno, 0)
        try syncOnce()
        XCTAssertTrue(eventually(10) { self.bytes(self.mount("b") + "/contacts/grace.vcf") == Array(card.utf8) })

        // Offline: a changes the phone, b adds an address.
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/contacts/grace.vcf", card.replacingOccurrences(of: "0100", with: "0199")).errno, 0)
        let address = "ADR;TYPE=work:;;1 Navy Yard;Washington;DC;20374;USA\r\n"
        XCTAssertEqual(Syscall.writeFile(mount("b") + "/contacts/grace.vcf",
                                         card.replacingOccurrences(of: "NOTE:first\r\n", with: "NOTE:first\r\n" + address)).errno, 0)
        try syncOnce()
        let expected = card.replacingOccurrences(of: "0100", with: "0199").replacingOccurrences(of: "NOTE:first\r\n", with: "NOTE:first\r\n" + address)
        XCTAssertTrue(waitForSameFile("contacts/grace.vcf", expected: Array(expected.utf8), timeout: 10),
                      String(decoding: bytes(mount("a") + "/contacts/grace.vcf") ?? [], as: UTF8.self))

        // Offline: both change the note. One shows; the other stays readable.
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/contacts/grace.vcf", expected.replacingOccurrences(of: "NOTE:first", with: "NOTE:from a")).errno, 0)
        XCTAssertEqual(Syscall.writeFile(mount("b") + "/contacts/grace.vcf", expected.replacingOccurrences(of: "NOTE:first", with: "NOTE:from b")).errno, 0)
        try syncOnce()
        XCTAssertTrue(waitForSameFile("contacts/grace.vcf", timeout: 10))
        let shown = String(decoding: bytes(mount("a") + "/contacts/grace.vcf") ?? [], as: UTF8.self)
        XCTAssertEqual(shown.components(separatedBy: "NOTE:").count - 1, 1, shown)
        XCTAssertTrue(shown.contains("0199") && shown.contains(address), shown)
        let json = try jsonObject(quireOK(["get", "contacts", "grace", "--json"], home: home("b")).stdout) as! [String: Any]
        let versions = (json["versions"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        XCTAssertEqual(versions.count, 2, "\(json)")
        XCTAssertTrue(versions.contains { $0.contains("NOTE:from a") } && versions.contains { $0.contains("NOTE:from b") }, "\(versions)")
    }

    /// Both devices sync with `quire sync` daemons until their digests agree.
    func syncOnce() throws {
        daemons = [try SyncDaemon(home: home("a"), relay: relay), try SyncDaemon(home: home("b"), relay: relay)]
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30), daemons.map(\.output).joined(separator: "\n"))
        daemons.forEach { $0.stop() }
        daemons = []
    }
}
