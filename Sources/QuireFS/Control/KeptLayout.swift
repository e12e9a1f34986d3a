import QuireCore
import QuireStore

/// A folder of `.quire/trash/` or `.quire/versions/`: the tree and the
/// folder names under it (empty: the tree's top).
struct KeptFolder: Hashable, Sendable {
    var place: KeptPlace
    var path: [CanonicalName]
}

/// How `.quire/trash/` and `.quire/versions/` name the texts the store
/// keeps (see "Trash and earlier versions" in mount/README.md). Pure: from
/// the store's list to a tree of names, so the mount and the `quire trash`
/// and `quire undelete` commands show and accept the same paths.
///
/// - Both trees follow the notebook's folders as they were when the text
///   was kept (folder names as the mount shows them).
/// - `trash/<folders>/<name>`: a deleted file under its own name; when
///   several share it, the one deleted last keeps it and the others get
///   ` (deleted YYYY-MM-DD HHMMSS)` before the extension.
/// - `versions/<folders>/<stem> YYYY-MM-DD HHMMSS<ext>`: an earlier text,
///   named by when it was replaced, so `ls` sorts a file's versions in
///   time order (`Ideas 2026-03-01 101500.md`).
/// - Times are UTC. A name still taken gets ` (2)`, ` (3)`... (by age).
///   A folder keeps its name over a file; names are cut to 255 bytes.
public struct KeptLayout: Sendable {
    struct Directory: Sendable {
        var folders: Set<CanonicalName> = []
        var files: [CanonicalName: Int64] = [:]

        func isTaken(_ name: CanonicalName) -> Bool { folders.contains(name) || files[name] != nil }
    }

    private(set) var directories: [KeptFolder: Directory] = [:]
    /// Each kept text by id.
    public let versions: [Int64: KeptVersion]
    /// Each kept text's path from `.quire/`: `trash/Projects/idea.md`.
    public private(set) var paths: [Int64: String] = [:]

    public init(_ list: [KeptVersion]) {
        var byID: [Int64: KeptVersion] = [:]
        for version in list { byID[version.id] = version }
        versions = byID
        for place in KeptPlace.allCases {
            directories[KeptFolder(place: place, path: [])] = Directory()
            let kept = list.filter { $0.place == place }
            for version in kept { addFolders(KeptFolder(place: place, path: Self.folderNames(version))) }
            // The trash's latest deletion keeps the plain name; a version's
            // name never changes once given (the oldest gets the plain one).
            let ordered = place == .trash ? kept.sorted { $0.id > $1.id } : kept.sorted { $0.id < $1.id }
            for version in ordered { addFile(version, in: KeptFolder(place: place, path: Self.folderNames(version))) }
        }
    }

    // MARK: Reading the tree

    func directory(_ folder: KeptFolder) -> Directory? { directories[folder] }

    /// The names in a folder, sorted, each with the file's id (nil: a folder).
    func entries(_ folder: KeptFolder) -> [(name: CanonicalName, id: Int64?)] {
        guard let directory = directories[folder] else { return [] }
        return (directory.folders.map { ($0, nil as Int64?) } + directory.files.map { ($0.key, $0.value as Int64?) })
            .sorted { $0.0 < $1.0 }
    }

    /// The kept text at `path` (`trash/…` or `versions/…`, from `.quire/`).
    public func version(atPath path: String) -> KeptVersion? {
        var parts = path.split(separator: "/").map { CanonicalName($0) }
        guard let first = parts.first, let place = KeptPlace.allCases.first(where: { CanonicalName($0.rawValue) == first }),
              let name = parts.popLast(), parts.count >= 1 else { return nil }
        guard let id = directories[KeptFolder(place: place, path: Array(parts.dropFirst()))]?.files[name] else { return nil }
        return versions[id]
    }

    /// The latest kept text of whatever was at `path` in the notebook
    /// (`Projects/idea.md`), as its folders and name were when kept.
    public func latest(atNotebookPath path: String) -> KeptVersion? {
        let wanted = path.split(separator: "/").map { CanonicalName($0) }
        return versions.values.filter { Self.notebookPath($0) == wanted }.max { $0.id < $1.id }
    }

    /// Where the kept text was in the notebook, as the mount named it then.
    public static func notebookPathText(_ version: KeptVersion) -> String {
        notebookPath(version).map(\.text).joined(separator: "/")
    }

    static func notebookPath(_ version: KeptVersion) -> [CanonicalName] {
        let name = fileName(version)
        return folderNames(version) + [CanonicalName(name.stem + name.ext)]
    }

    // MARK: Naming

    static func folderNames(_ version: KeptVersion) -> [CanonicalName] {
        version.folderPath.map {
            CanonicalName(FileNames.nameParts(namespace: .notebook, kind: .folder, title: $0, updatedAt: version.writtenAt).stem)
        }
    }

    static func fileName(_ version: KeptVersion) -> (stem: String, ext: String) {
        FileNames.nameParts(namespace: .notebook, kind: version.kind, title: version.title, updatedAt: version.writtenAt)
    }

    /// `YYYY-MM-DD HHMMSS`, UTC: sorts as text, and has no `:` (which some
    /// tools and file systems a copy may land on refuse).
    static func stamp(_ seconds: Int64) -> String {
        let text = TextDates.formatDateTime(seconds)   // 2026-01-02T10:15:00Z
        return String(text.prefix(10)) + " " + text.dropFirst(11).filter { $0.isNumber }
    }

    private mutating func addFolders(_ folder: KeptFolder) {
        for depth in 0..<folder.path.count {
            let parent = KeptFolder(place: folder.place, path: Array(folder.path.prefix(depth)))
            directories[parent, default: Directory()].folders.insert(folder.path[depth])
            let child = KeptFolder(place: folder.place, path: Array(folder.path.prefix(depth + 1)))
            if directories[child] == nil { directories[child] = Directory() }
        }
    }

    private mutating func addFile(_ version: KeptVersion, in folder: KeptFolder) {
        let (stem, ext) = Self.fileName(version)
        let when = Self.stamp(version.keptAt.seconds)
        let suffixes = folder.place == .trash ? ["", " (deleted \(when))"] : [" \(when)"]
        var directory = directories[folder] ?? Directory()
        var chosen: CanonicalName?
        for suffix in suffixes where chosen == nil {
            let name = Self.named(stem, suffix, ext)
            if !directory.isTaken(name) { chosen = name }
        }
        var counter = 2
        while chosen == nil {
            let name = Self.named(stem, suffixes.last! + " (\(counter))", ext)
            if !directory.isTaken(name) { chosen = name }
            counter += 1
        }
        directory.files[chosen!] = version.id
        directories[folder] = directory
        paths[version.id] = ([folder.place.rawValue] + folder.path.map(\.text) + [chosen!.text]).joined(separator: "/")
    }

    /// `stem + suffix + ext`, the stem cut so the name fits in 255 bytes.
    static func named(_ stem: String, _ suffix: String, _ ext: String) -> CanonicalName {
        let budget = FileNames.maximumNameBytes - suffix.utf8.count - ext.utf8.count
        return CanonicalName(FileNames.truncated(stem, toBytes: max(1, budget)) + suffix + ext)
    }
}
