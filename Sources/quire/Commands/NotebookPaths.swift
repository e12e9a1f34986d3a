import QuireCore
import QuireFS
import QuireStore

/// The notebook's folder tree as the command line shows and reads it:
/// each row's path (`Projects/Q1/Deep`, a folder's ending in `/`), and the
/// rows a typed path reaches (`Projects/Plan.md`, `Projects/Plan`).
struct NotebookPaths {
    private let byKey: [RowKey: RowSummary]
    private let rows: [RowSummary]

    init(_ rows: [RowSummary]) {
        self.rows = rows.filter { !$0.isTombstone }
        byKey = Dictionary(self.rows.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The folders above `row` and its title, as typed; a folder's ends in `/`.
    func path(of row: RowSummary) -> String {
        var parts = [row.name]
        var folder = row.place.folder
        var seen: Set<RowKey> = [row.key]
        // A folder that went missing (deleted on a sibling) ends the path,
        // and no cycle a damaged tree might hold runs forever.
        while let key = folder, let parent = byKey[key], seen.insert(key).inserted {
            parts.insert(parent.name, at: 0)
            folder = parent.place.folder
        }
        return parts.joined(separator: "/") + (row.place.kind == .folder ? "/" : "")
    }

    /// The path of the live row `key`, if there is one.
    func path(ofKey key: RowKey) -> String? { byKey[key].map(path(of:)) }

    /// The live rows a path through folders names: each folder by its
    /// title, the last part by its title or its file name as the mount
    /// shows it (with a key marker, only the row whose key it starts).
    func keys(at typed: String) -> [RowKey] {
        // `Projects/` (as ls shows a folder) names the folder only.
        let folderOnly = typed.hasSuffix("/")
        var parts = typed.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard parts.count > 1 || folderOnly, let last = parts.popLast() else { return [] }
        var parents: Set<RowKey?> = [nil]
        for part in parts {
            parents = Set(rows.filter { $0.place.kind == .folder && $0.name == part && parents.contains($0.place.folder) }.map(\.key))
            if parents.isEmpty { return [] }
        }
        let shown = ShownName.row(last, in: .notebook)
        return rows.filter { row in
            guard parents.contains(row.place.folder) else { return false }
            if folderOnly { return row.name == last && row.place.kind == .folder }
            if row.name == last { return true }
            guard let shown, row.name == shown.title, row.place.kind != .folder else { return false }
            return shown.keyPrefix.map { row.key.hex.hasPrefix($0) } ?? true
        }.map(\.key)
    }

    /// Where a typed path (`Projects/Q1/Plan.md`) puts a new note: the
    /// deepest folder along it that exists (nil: the top), the folder names
    /// still to make below that one, and the note's title (the last part,
    /// read as the mount shows file names). A folder name that names two
    /// folders in one place is refused: nothing is guessed.
    func placement(of typed: String) throws -> (parent: RowKey?, toMake: [String], title: String) {
        var parts = typed.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !typed.hasSuffix("/"), let last = parts.popLast() else {
            throw UsageError("'\(typed)' names a folder; give the note's name after the last '/'")
        }
        var parent: RowKey? = nil
        for (index, part) in parts.enumerated() {
            let found = rows.filter { $0.place.kind == .folder && $0.name == part && $0.place.folder == parent }
            if found.count > 1 {
                throw CommandFailure("\(found.count) notebook folders are named '\(parts[...index].joined(separator: "/"))'; rename one in the mounted folder first")
            }
            guard let folder = found.first else { return (parent, Array(parts[index...]), Self.title(last)) }
            parent = folder.key
        }
        return (parent, [], Self.title(last))
    }

    /// A note's title from its file name as the mount shows it (`Plan.md`,
    /// `a%2Fb.md`); a name without the suffix is the title as typed.
    static func title(_ name: String) -> String {
        guard name.lowercased().hasSuffix(".md"), let shown = ShownName.row(name, in: .notebook) else { return name }
        return shown.title
    }

    /// A title as one line of a listing: control characters (a newline a
    /// sibling's title holds) are shown escaped, never acted on.
    static func oneLine(_ title: String) -> String {
        var out = ""
        for scalar in title.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                switch scalar {
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                default: out += "\\u{\(String(scalar.value, radix: 16))}"
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
