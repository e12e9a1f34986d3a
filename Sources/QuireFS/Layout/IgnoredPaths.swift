import QuireCore

/// `.quireignore` files in the notebook tree: each is a local file (hidden
/// names stay on this device) in its folder, read once and kept until one
/// changes through the mount. A name they ignore is a local file, listed in
/// `.quire/status`, never a row; folders themselves still sync (an empty
/// folder on the other devices), so an ignored folder's files stay here.
extension QuireFileSystem {
    static let ignoreFileName = CanonicalName(".quireignore")

    /// Whether a new file or folder named `name` in `folder` stays local.
    func isIgnored(_ name: CanonicalName, in folder: Folder, isFolder: Bool = false) -> Bool {
        guard folder.namespace == .notebook else { return false }
        let chain = folderChain(folder)
        let path = chain.dropFirst().map { names.displayName(RowRef(namespace: .notebook, key: $0.folderKey!)) } + [name.text]
        // Each prefix of the path is checked against the files above it;
        // an ignored folder cannot be taken back inside.
        for length in 1...path.count {
            var verdict: Bool? = nil
            for depth in 0..<min(length, chain.count) {
                let rules = ignoreRules(chain[depth])
                if rules.isEmpty { continue }
                if let said = rules.verdict(Array(path[depth..<length]), isFolder: length < path.count || isFolder) { verdict = said }
            }
            if verdict == true { return true }
        }
        return false
    }

    /// The notebook's top, then each folder down to `folder`.
    private func folderChain(_ folder: Folder) -> [Folder] {
        var chain: [Folder] = []
        var current = folder
        while case .subfolder(let key) = current, chain.count < 256 {
            chain.append(current)
            current = names.folder(of: RowRef(namespace: .notebook, key: key))
        }
        return [.namespace(.notebook)] + chain.reversed()
    }

    private func ignoreRules(_ folder: Folder) -> IgnoreRules {
        if let rules = ignoreCache[folder] { return rules }
        let rules = scratch.status(folder, Self.ignoreFileName) == nil ? IgnoreRules([])
            : IgnoreRules((try? scratch.contents(folder, Self.ignoreFileName)) ?? [])
        ignoreCache[folder] = rules
        return rules
    }

    /// A scratch file changed (written, renamed, removed): an ignore file
    /// among them is read again at its next use.
    func scratchChanged(_ name: CanonicalName) {
        if name == Self.ignoreFileName { ignoreCache.removeAll() }
    }

    /// Local files of the notebook tree that would be rows but for an
    /// ignore rule (or an older version's rule), by path, for the status.
    func ignoredNotebookFiles() -> [String] {
        var folders: [Folder] = [.namespace(.notebook)]
        if let listing = names.listing(.notebook) {
            folders += listing.rows.values.filter(\.isFolder).map { Folder.subfolder($0.key) }
        }
        var out: [String] = []
        for folder in folders {
            for name in scratch.names(folder) where name != Self.ignoreFileName {
                if case .row = FileNames.meaning(of: name, in: .notebook) { out.append(folderPath(folder) + "/" + name.text) }
            }
        }
        return out.sorted()
    }
}
