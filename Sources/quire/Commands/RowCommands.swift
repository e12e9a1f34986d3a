import Foundation
import QuireCore
import QuireStore
import QuireFS

/// put / get / ls / rm for every namespace.
enum RowCommands {
    static let put = Command(
        name: "put",
        summary: "create or replace a row",
        usage: """
            usage: quire put <namespace> <name> [options]

            Creates a row, or replaces the live row with that name (one local edit:
            a new version, advertised to siblings). Bodies come from --file FILE,
            or from standard input when no --file is given. A file name as the
            mounted folder shows it (Ideas.md, abc@host.ics, Ada.vcf) names the
            row that file shows, or a new row titled without the extension.

              notebook TITLE   [--file F] [--tags a,b] [--new] [--key HEX]
                               the note's body is the input; --new always creates;
                               a path ('Projects/Plan.md') puts the note in that
                               folder, making the folders that do not exist yet
              saga YYYY-MM-DD  [--file F]   the day's entry is the input
              plans TITLE      [--file F.ics] [--summary TEXT] [--notes TEXT]
                               [--due YYYY-MM-DD|YYYY-MM-DDTHH:MM:SSZ|none] [--done|--undone]
                               [--priority 1-9|none] [--categories a,b|none]
                               a VTODO (plans/TITLE.ics); --file replaces the whole calendar
                               file, the other options set one property each and keep the rest
              contacts NAME    [--file F.vcf] [--email E]... [--phone P]... [--note TEXT|--no-note]
                               a vCard (contacts/NAME.vcf); --file replaces the whole card
                               (vCard 4.0 or 3.0), the other options set one property each
              settings NAME VALUE
              memory KIND      [--file F] [--buries ID,...]   append-only: always a new event
            Options:
              --key HEX   address the row by its key instead of its name (or a
                          unique prefix of it, 4 hex digits or more)
              --json      print the written row's key and version as JSON
            A body (or a row's text) is at most 16 MiB: the most one version of a
            row may hold and still sync to every sibling. Larger input is refused
            and nothing is written.
            """,
        valued: ["file", "tags", "notes", "due", "email", "phone", "note", "key", "buries", "summary", "priority", "categories"],
        flags: ["new", "done", "undone", "no-note", "json"]
    ) { args, inv in
        guard let nsName = args.positional.first else { throw UsageError("missing namespace") }
        let ns = try namespace(nsName)
        let (_, store) = try inv.open()
        let settingValue = ns == .settings
        try args.expectPositional(settingValue ? 3...3 : 2...2, settingValue ? "settings name and value" : "name")
        var name = args.positional[1]
        if ns == .saga, name.hasSuffix(".md") { name = String(name.dropLast(3)) }   // the day's file name
        // A path through the notebook's folders (`Projects/Plan.md`), unless
        // a note carries that very title: the note there, or a new one in
        // that folder (folders along the path that do not exist are made).
        var path: (parent: RowKey?, toMake: [String], title: String)? = nil
        let existingKey = try resolve(store, ns, name: name, key: args.value("key"), creating: true, forceNew: args.has("new"))
        if existingKey == nil, ns == .notebook, args.value("key") == nil, name.contains("/") {
            path = try NotebookPaths(try store.summaries(ns)).placement(of: name)
        }
        let existing = try existingKey.flatMap { try store.row(ns, $0) }?.content
        // A file name as the mounted folder shows it (`Ideas.md`,
        // `abc@host.ics`, `Ada%~1a2b3c4d.vcf`) stands for the row it shows,
        // which keeps its title, or names a new row of the title it shows.
        if [.notebook, .plans, .contacts].contains(ns), args.value("key") == nil, !name.contains("/"),
           let shown = ShownName.row(name, in: ns), shown.title != name {
            switch existing {
            case .note(let n)?: name = n.title
            case .plan(let p)?: name = p.title
            case .contact(let c)?: name = c.title
            default: name = shown.title
            }
        }
        let zero = Timestamp(seconds: 0)
        let content: RowContent
        switch ns {
        case .notebook:
            var n: Note
            if case .note(let old)? = existing {
                n = old
                // Reached by its path: the note keeps its title.
                if !name.contains("/") || old.title == name { n.title = name }
            } else {
                n = Note(title: path?.title ?? name, body: [], createdAt: zero, updatedAt: zero)
            }
            if n.kind == .folder { throw CommandFailure("notebook/\(name) is a folder; give a note's name inside it") }
            if let tags = args.value("tags") { n.tags = tags.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            n.body = try readBody(file: args.value("file"), ns, name)
            n.contentHash = Note.bodyDigest(n.body!)
            if let path {
                // The input is read: now the folders it goes in.
                var parent = path.parent
                for folder in path.toMake {
                    parent = try store.put(.note(Note(title: folder, body: [], createdAt: zero, updatedAt: zero, kind: .folder, folder: parent))).key
                }
                n.folder = parent
            }
            content = .note(n)
        case .saga:
            guard SagaEntry.isValidDate(name) else { throw UsageError("a journal day is YYYY-MM-DD, not '\(name)'") }
            content = .saga(SagaEntry(date: name, text: try readBody(file: args.value("file"), ns, name), updatedAt: zero))
        case .plans:
            var p: Plan
            if case .plan(let old)? = existing { p = old } else {
                // DTSTAMP is the creation time (the store keeps createdAt).
                let now = Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970)
                p = Plan(title: name, createdAt: now, updatedAt: now, uid: UUID().uuidString.lowercased())
            }
            if args.value("file") != nil {
                guard case .plan(let read) = try fromFile(ns, name, existing: existing, key: existingKey, args: args) else { return }
                p = read
            }
            p.title = name
            try PlanOptions.apply(args, to: &p)
            content = .plan(p)
        case .contacts:
            var c: Contact
            if case .contact(let old)? = existing { c = old } else {
                c = Contact(name: name, uid: UUID().uuidString.lowercased(), updatedAt: zero)
            }
            if args.value("file") != nil {
                guard case .contact(let read) = try fromFile(ns, name, existing: existing, key: existingKey, args: args) else { return }
                c = read
            }
            c.title = name
            if !args.all("email").isEmpty { c.emails = args.all("email") }
            if !args.all("phone").isEmpty { c.phones = args.all("phone") }
            if let note = args.value("note") { c.note = note }
            if args.has("no-note") { c.note = nil }
            content = .contact(c)
        case .settings:
            content = .setting(Setting(name: name, value: args.positional[2], updatedAt: zero))
        case .memory:
            var buried: [RowKey] = []
            for id in (args.value("buries") ?? "").split(separator: ",") {
                guard let k = RowKey(hex: String(id)) else { throw UsageError("--buries expects 32-hex-digit event ids, not '\(id)'") }
                buried.append(k)
            }
            let text = String(decoding: try readBody(file: args.value("file"), ns, name), as: UTF8.self)
            content = .memory(MemoryEvent(at: zero, kind: name, text: text, buries: buried))
        case .devices:
            throw UsageError("the devices roster is read-only here; use 'quire devices'")
        }
        let size = RowLimits.bodyBytes(of: content)
        guard size <= RowLimits.maxBodyBytes else { throw tooLarge(ns, name, size: size) }
        // Prose replaced from the command line: what `quire get` shows is
        // what the user replaced, so removed paragraphs become deletions.
        let row = ns == .notebook || ns == .saga
            ? try store.saveProse(content, key: existingKey, shown: nil)
            : try store.put(content, key: ns == .memory ? nil : existingKey)
        if args.has("json") {
            Output.json(["namespace": ns.name, "key": row.key.hex, "version": row.context.description])
        } else {
            // A note in a folder is named by its path (the top's by its title).
            var inFolder = false
            if case .note(let n)? = row.content, n.folder != nil { inFolder = true }
            let shown = inFolder ? NotebookPaths(try store.summaries(ns)).path(ofKey: row.key) : nil
            Output.line("\(ns.name)/\(NotebookPaths.oneLine(shown ?? row.content?.displayName ?? name)) \(row.key.hex)")
        }
    }

    /// A whole vCard or iCalendar file from --file, read as the mount reads it.
    static func fromFile(_ ns: Namespace, _ name: String, existing: RowContent?, key: RowKey?, args: Arguments) throws -> RowContent {
        let bytes = try readBody(file: args.value("file"), ns, name)
        do { return try FileText.parse(ns, title: name, bytes: bytes, previous: existing, key: key) } catch {
            throw CommandFailure("\(ns.name)/\(name) not written: \(args.value("file") ?? "the input") \(error.description)")
        }
    }

    /// The refusal of a body over `RowLimits.maxBodyBytes`: one line, naming the limit.
    static func tooLarge(_ ns: Namespace, _ name: String, size: Int?) -> CommandFailure {
        let what = size.map { "is \(RowLimits.describe($0)), over" } ?? "is over"
        return CommandFailure("\(ns.name)/\(name) not written: its text \(what) the \(RowLimits.describe(RowLimits.maxBodyBytes)) limit "
                              + "of a row (the most one version may hold and still sync to siblings)")
    }

    /// The input (--file or standard input), read no further than one byte
    /// past the limit: a larger body is refused without holding it all.
    static func readBody(file: String?, _ ns: Namespace, _ name: String) throws -> [UInt8] {
        let limit = RowLimits.maxBodyBytes
        if let file, file != "-", let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int, size > limit {
            throw tooLarge(ns, name, size: size)
        }
        let bytes = try Output.readInput(file: file, limit: limit + 1)
        guard bytes.count <= limit else { throw tooLarge(ns, name, size: nil) }
        return bytes
    }

    static let get = Command(
        name: "get",
        summary: "print a row",
        usage: """
            usage: quire get <namespace> <name> [--key HEX] [--json]

            Prints a row: a note's body or a journal day's text exactly as stored
            (bytes), the fields of a plan, contact, setting or memory event as text.
            <name> is the row's name, or its file name in the mounted folder
            ('Ideas.md', 'Ideas%~1a2b3c4d.md' where notes share a title), or
            its path through the notebook's folders ('Projects/Plan.md').
              --key HEX   address the row by its key (names need not be unique),
                          or a unique prefix of it, 4 hex digits or more
              --json      every field, its key and version, as JSON
            """,
        valued: ["key"], flags: ["json"]
    ) { args, inv in
        let (ns, store, key) = try existingRow(args, inv, readOnly: true)
        guard let row = try store.row(ns, key), let content = row.content else {
            throw CommandFailure("no live \(ns.name) row \(key.hex)")
        }
        if args.has("json") {
            var object = RowText.json(content)
            object["key"] = key.hex
            object["version"] = row.context.description
            // Concurrent versions the shown content was resolved from.
            object["heads"] = row.heads.map { $0.dot.description }
            // A card's concurrent versions, each as its file: what one
            // property edited on two devices lost in the shown card is here.
            if row.heads.count > 1, ns == .contacts || ns == .plans {
                object["versions"] = row.heads.map { head -> [String: Any] in
                    ["head": head.dot.description, "text": String(decoding: FileText.render(head.content) ?? [], as: UTF8.self)]
                }
            }
            Output.json(object)
            return
        }
        switch content {
        case .note(let n) where n.kind == .folder:
            // A folder has no text: what it holds, by path.
            let rows = try store.summaries(ns)
            let paths = NotebookPaths(rows)
            for r in rows where r.place.folder == key { Output.line(NotebookPaths.oneLine(paths.path(of: r))) }
        case .note(let n):
            guard let body = n.body else {
                // A body set aside because it failed its hash is not offloaded: say which.
                if try store.damagedBodies().contains(where: { $0.key == key && $0.repairedAt == nil }) {
                    throw CommandFailure("the body of '\(n.title)' is damaged (its bytes do not match its hash) and is not shown; "
                                         + "a good copy comes back when a device that holds it syncs ('quire sync'), or from a backup")
                }
                throw CommandFailure("the body of '\(n.title)' is offloaded; run 'quire recall' to bring it back")
            }
            Output.raw(body)
        case .saga(let s): Output.raw(s.text)
        default: Output.line(RowText.text(content))
        }
    }

    static let list = Command(
        name: "ls",
        summary: "list rows of a namespace",
        usage: """
            usage: quire ls <namespace> [--tombstones] [--json]

            Lists live rows: key, size, last update and name; in the notebook, its
            path through the folders (a folder's ends in '/').
              --tombstones   include deleted rows (kept until a barrier collects them)
              --json         as a JSON array
            """,
        flags: ["tombstones", "json"]
    ) { args, inv in
        try args.expectPositional(1...1, "namespace")
        let ns = try namespace(args.positional[0])
        let store = try inv.openForReading()
        let rows = try store.summaries(ns, includeTombstones: args.has("tombstones"))
        // Rows other than notes and days are read whole, once: plans and
        // contacts show their fields (a plan's VTODO, a card's FN and email,
        // the words `quire put` sets them with), and each is as large as its
        // file in the mounted folder (the store sizes note and day text only).
        func content(_ r: RowSummary) throws -> RowContent? {
            guard !r.isTombstone, ns != .notebook, ns != .saga else { return nil }
            return try store.row(ns, r.key)?.content
        }
        func size(_ r: RowSummary, _ content: RowContent?) -> Int { content.flatMap(FileText.render)?.count ?? r.size }
        // The notebook is a folder tree: each row shows its path in it.
        let paths = ns == .notebook ? NotebookPaths(rows) : nil
        if args.has("json") {
            var out: [[String: Any]] = []
            for r in rows {
                let read = try content(r)
                var o: [String: Any] = ["key": r.key.hex, "name": r.name, "size": size(r, read), "updatedAt": r.updatedAt.seconds,
                                        "tombstone": r.isTombstone, "offloaded": r.isOffloaded]
                if let paths, !r.isTombstone {
                    o["path"] = paths.path(of: r)
                    o["kind"] = r.place.kind == .folder ? "folder" : r.place.kind == .file ? "file" : "note"
                }
                if case .plan(let p)? = read { o.merge(PlanOptions.json(p)) { old, _ in old } }
                if case .contact(let c)? = read { o["fn"] = c.name; o["emails"] = c.emails; o["uid"] = c.uid ?? NSNull() }
                out.append(o)
            }
            Output.json(out)
            return
        }
        for r in rows {
            let read = try content(r)
            let state = r.isTombstone ? "deleted" : r.isOffloaded ? "offloaded" : r.place.kind == .folder ? "folder" : String(size(r, read))
            var shown = paths.map { r.isTombstone ? r.name : $0.path(of: r) } ?? r.name
            switch read {
            case .plan(let p)?: shown = PlanOptions.line(p) + (p.summary == r.name ? "" : "  [\(r.name).ics]")
            case .contact(let c)?: shown = c.name + (c.emails.first.map { " <\($0)>" } ?? "") + (c.name == r.name ? "" : "  [\(r.name).vcf]")
            default: break
            }
            Output.line("\(r.key.hex)  \(state.padding(toLength: 9, withPad: " ", startingAt: 0))  \(DateText.format(r.updatedAt.seconds, time: true))  "
                        + NotebookPaths.oneLine(shown))
        }
    }

    static let remove = Command(
        name: "rm",
        summary: "delete a row (it stays deleted on every device)",
        usage: """
            usage: quire rm <namespace> <name> [--key HEX]

            Deletes a row by writing a tombstone, which travels to every sibling so
            the row stays deleted. Memory is append-only: record an event with
            'quire put memory KIND --buries ID' instead.
              --key HEX   address the row by its key, or a unique prefix of it
            """,
        valued: ["key"]
    ) { args, inv in
        let (ns, store, key) = try existingRow(args, inv)
        if ns == .notebook {
            // As rmdir in the mount: a folder goes once it is empty, never
            // leaving what it holds at the top of the notebook.
            let rows = try store.summaries(ns)
            let held = rows.filter { $0.place.folder == key }.count
            if held > 0, let folder = rows.first(where: { $0.key == key }) {
                throw CommandFailure("notebook/\(NotebookPaths(rows).path(of: folder)) is a folder holding \(held) "
                                     + "\(held == 1 ? "note or folder" : "notes or folders"): remove them first (rm -r in the mounted folder)")
            }
        }
        let edit = try store.deleteFromMount(ns, key)
        Output.line("deleted \(ns.name)/\(key.hex)" + (edit.keptInTrash ? "" : " (the disk is full: no copy was kept in the trash)"))
    }

    /// `<namespace> <name>` or `<namespace> --key HEX` naming a live row:
    /// the shared addressing of get, rm and history (`readOnly`: a replica
    /// `quire repair` set aside opens too).
    static func existingRow(_ args: Arguments, _ inv: Invocation, readOnly: Bool = false) throws -> (Namespace, ReplicaStore, RowKey) {
        guard let nsName = args.positional.first else { throw UsageError("missing namespace") }
        let ns = try namespace(nsName)
        try args.expectPositional(args.value("key") == nil ? 2...2 : 1...2, "name")
        let store = readOnly ? try inv.openForReading() : try inv.open().1
        let name = args.positional.count > 1 ? args.positional[1] : nil
        guard let key = try resolve(store, ns, name: name, key: args.value("key"), creating: false, forceNew: false) else {
            let near = (try? nearNames(store, ns, name ?? "")) ?? []
            let hint = near.isEmpty ? "" : " (did you mean " + near.map { "'\($0)'" }.joined(separator: " or ") + "?)"
            throw CommandFailure("no \(ns.name) row named '\(name ?? "")'\(hint)")
        }
        return (ns, store, key)
    }

    /// Names of live rows a mistyped name may have meant: the same but for
    /// case, a file name's extension or the folders before it
    /// (`notebook/Ideas.md` for `Ideas`); at most three.
    static func nearNames(_ store: ReplicaStore, _ ns: Namespace, _ typed: String) throws -> [String] {
        var base = String(typed.split(separator: "/").last ?? "")
        for ext in [".md", ".ics", ".vcf"] where base.lowercased().hasSuffix(ext) { base = String(base.dropLast(ext.count)) }
        let wanted = base.lowercased()
        guard !wanted.isEmpty else { return [] }
        let names = try store.summaries(ns).map(\.name).filter { $0.lowercased() == wanted && $0 != typed }
        return Array(Set(names).sorted().prefix(3))
    }

    static func namespace(_ name: String) throws(UsageError) -> Namespace {
        guard let ns = Namespace(name: name), ns != .devices else {
            throw UsageError("unknown namespace '\(name)' (notebook, plans, contacts, saga, settings, memory)")
        }
        return ns
    }

    /// The key a name refers to. Names need not be unique: an ambiguous name
    /// is an error that lists the keys, so nothing is edited by accident.
    static func resolve(_ store: ReplicaStore, _ ns: Namespace, name: String?, key: String?, creating: Bool, forceNew: Bool) throws -> RowKey? {
        // A key made from the name (a day, a setting): an existing row's only if it is live.
        func live(_ key: RowKey) throws -> RowKey? {
            if creating { return key }
            return try store.row(ns, key)?.isTombstone == false ? key : nil
        }
        if let key {
            if let k = RowKey(hex: key) {
                if !creating, try store.row(ns, k)?.isTombstone != false { throw CommandFailure("no live \(ns.name) row with key \(key)") }
                return k
            }
            // A prefix of a live row's key, as the ambiguity message below prints them.
            let prefix = key.lowercased()
            guard (4..<32).contains(prefix.count), prefix.allSatisfy(\.isHexDigit) else {
                throw UsageError("--key expects 32 hex digits or a prefix of at least 4, not '\(key)'")
            }
            let keys = try store.summaries(ns).map(\.key).filter { $0.hex.hasPrefix(prefix) }
            guard keys.count == 1 else {
                if keys.isEmpty { throw CommandFailure("no live \(ns.name) row has a key starting with \(prefix)") }
                throw CommandFailure("\(keys.count) \(ns.name) rows have keys starting with \(prefix) "
                                     + "(\(keys.map { $0.hex }.joined(separator: ", "))); pass more of one")
            }
            return keys[0]
        }
        guard var name else { return nil }
        // A day or a setting by its file name in the mounted folder.
        if ns == .saga, name.hasSuffix(".md") { name = String(name.dropLast(3)) }
        if ns == .settings, !creating, name.hasSuffix(".txt"), try live(Setting.key(for: name)) == nil { name = String(name.dropLast(4)) }
        switch ns {
        case .saga:
            guard SagaEntry.isValidDate(name) else { throw UsageError("a journal day is YYYY-MM-DD, not '\(name)'") }
            return try live(SagaEntry.key(for: name))
        case .settings: return try live(Setting.key(for: name))
        case .memory where creating: return nil
        default: break
        }
        if forceNew { return nil }
        // A path through the notebook's folders (`Projects/Plan.md`) first:
        // a file name as the mount shows it never holds a '/' (a title's is
        // shown as %2F), so a typed one means the folders.
        let isPath = ns == .notebook && name.contains("/")
        // A title, or one typed (or pasted from ls, which shows NFC) in
        // another Unicode form of it, as the mount opens any form.
        func titled(_ title: String) throws -> [RowKey] {
            let exact = try store.find(ns, name: title)
            // An ASCII name has no other form worth a scan of every title.
            if !exact.isEmpty || isPath || title.unicodeScalars.allSatisfy(\.isASCII) { return exact }
            // Swift's == is canonical equivalence (SQLite's is bytes).
            return try store.summaries(ns).filter { $0.name == title }.map(\.key)
        }
        var matches = isPath ? NotebookPaths(try store.summaries(ns)).keys(at: name) : []
        if matches.isEmpty { matches = try titled(name) }
        // A file name as the mount shows it (`Ideas.md`, `a%2Fb.md`,
        // `Ideas%~1a2b3c4d.md`), for a row that exists: its title, and the
        // key its marker starts.
        if matches.isEmpty, !isPath, let shown = ShownName.row(name, in: ns), shown.title != name || shown.keyPrefix != nil {
            matches = try titled(shown.title).filter { key in shown.keyPrefix.map { key.hex.hasPrefix($0) } ?? true }
        }
        if matches.count > 1 {
            throw CommandFailure("\(matches.count) \(ns.name) rows are named '\(name)' (keys starting \(matches.map { $0.hex.prefix(12) }.joined(separator: ", "))); "
                                 + "pass --key with one of them")
        }
        return matches.first
    }
}
