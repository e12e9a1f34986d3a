import Foundation
import QuireCore
import QuireFS
import QuireFuse
import QuireStore

/// `quire trash` and `quire undelete`: the deleted files and earlier
/// versions this device keeps (the mount's `.quire/trash/` and
/// `.quire/versions/`), and bringing one back.
enum TrashCommands {
    static let trash = Command(
        name: "trash",
        summary: "list the deleted files and earlier versions this device keeps",
        usage: """
            usage: quire trash [--json]
                   quire trash prune

            Lists what this device keeps of deleted notebook files (.quire/trash/ in
            the mount) and of texts an edit replaced (.quire/versions/): path, size,
            when it was kept and why (edited or deleted, here or on another device).
            Each device keeps its own; nothing here is synced. 'quire undelete PATH'
            brings one back.
              --json   the same as JSON
              prune    drop now what is older or larger than the limits allow
                       (writes do it by themselves: the size limit as soon as
                       a kept text passes it, the age limit every few minutes)
            Limits: 'quire config trash-days N' (default 30) and
            'quire config trash-size MIB' (default 512).
            """,
        flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...1, "")
        let (_, store) = try inv.open()
        switch args.positional.first {
        case nil:
            try list(store, json: args.has("json"))
        case "prune":
            let pruned = try store.pruneKept()
            try? store.reclaimSpace()
            let freed = ByteText.text(Int(pruned.freedBytes))
            if store.keptLimits.isOff {
                Output.line("keeping is off: dropped all \(pruned.expired + pruned.overSize) kept texts (\(freed))")
            } else {
                Output.line("dropped \(pruned.expired) older than \(store.keptLimits.days) days and \(pruned.overSize) over the size limit (\(freed))")
            }
        case let other?:
            throw UsageError("quire trash knows 'prune', not '\(other)'")
        }
    }

    static let undelete = Command(
        name: "undelete",
        summary: "bring back a deleted file or an earlier version",
        usage: """
            usage: quire undelete PATH

            Brings back what 'quire trash' lists, as a new edit that syncs:
              .quire/trash/…      a deleted file comes back where it was, into its
                                  folder if that folder still exists, else at the
                                  top of the notebook (as a new file if a barrier
                                  has collected its deletion); beside a live file
                                  of its name, as 'NAME (restored)'
              .quire/versions/…   an earlier text becomes its file's text again (the
                                  text it replaces is kept as an earlier version)
              notebook/… or a path in the notebook
                                  the latest deleted or earlier text of that file
            PATH may be written from the mount's top (.quire/trash/Ideas.md,
            notebook/Ideas.md) or as a path into a mounted folder. Nothing kept at
            PATH: exit status 1, and nothing changes.
            """
    ) { args, inv in
        try args.expectPositional(1...1, "PATH")
        let (_, store) = try inv.open()
        let given = args.positional[0]
        let layout = KeptLayout(try store.keptVersions())
        guard let version = find(given, in: layout) else {
            throw CommandFailure("nothing is kept at \(given); 'quire trash' lists what this device keeps")
        }
        let shown = ".quire/" + (layout.paths[version.id] ?? "")
        let restored = try store.restoreKept(version.id)
        let place = KeptLayout.notebookPathText(version)
        switch restored.outcome {
        case .unchanged:
            Output.line("notebook/\(place) already has the text of \(shown); nothing changed")
        case .replacedText:
            Output.line("notebook/\(place) has the text of \(shown) again; the text it replaced is kept in .quire/versions/")
        case .revived, .recreated:
            let name = place.split(separator: "/").last.map(String.init) ?? place
            let asNew = restored.outcome == .recreated ? " as a new file (its deletion had been collected)" : ""
            if let title = restored.row.content?.displayName, title != version.title {
                // A live file has its name: it came back beside it.
                Output.line("brought back \(name)\(asNew) as '\(title)' beside the live \(name) in notebook/\(place.dropLast(name.count))")
            } else if restored.isInItsFolder {
                Output.line("brought back notebook/\(place)\(asNew) (\(version.reason.words) \(DateText.format(version.keptAt.seconds, time: true)))")
            } else {
                Output.line("brought back notebook/\(name)\(asNew) at the top of the notebook: its folder \(version.folderPath.joined(separator: "/")) is gone")
            }
        }
    }

    static func list(_ store: ReplicaStore, json: Bool) throws {
        let versions = try store.keptVersions()
        let layout = KeptLayout(versions)
        let usage = try store.keptUsage()
        if json {
            Output.json(["kept": versions.map { v -> [String: Any] in
                ["path": ".quire/" + (layout.paths[v.id] ?? ""), "notebookPath": "notebook/" + KeptLayout.notebookPathText(v),
                 "place": v.place.rawValue, "size": v.size, "storedBytes": v.storedSize, "kept": v.keptAt.seconds,
                 "written": v.writtenAt.seconds, "why": v.reason.code, "key": v.key.hex, "rowLive": v.isRowLive]
            }, "usage": usageJSON(usage)])
            return
        }
        for v in versions.sorted(by: { ($0.place.rawValue, $0.id) < ($1.place.rawValue, $1.id) }) {
            Output.line(".quire/\(layout.paths[v.id] ?? "")  \(ByteText.text(v.size))  \(DateText.format(v.keptAt.seconds, time: true))  \(v.reason.words)")
        }
        Output.line(usageText(usage))
    }

    /// Finds what PATH names: a path into a mount made relative to its top,
    /// then a `.quire/trash|versions` path, else a notebook path.
    static func find(_ given: String, in layout: KeptLayout) -> KeptVersion? {
        var path = insideMount(given) ?? given
        while path.hasPrefix("./") { path.removeFirst(2) }
        if path.hasPrefix("/") { return nil }
        if path.hasPrefix(".quire/") { path.removeFirst(".quire/".count) }
        if path.hasPrefix("trash/") || path.hasPrefix("versions/") { return layout.version(atPath: path) }
        if path.hasPrefix("notebook/") { path.removeFirst("notebook/".count) }
        return layout.latest(atNotebookPath: path)
    }

    /// `path` from the top of the quire mount it is in, if it is in one.
    static func insideMount(_ path: String) -> String? {
        let absolute = normalized(path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path)
        let mounts = ((try? FuseMounts.entries()) ?? []).filter { $0.type == "fuse.quire" }
        for mount in mounts.sorted(by: { $0.mountpoint.count > $1.mountpoint.count }) where absolute.hasPrefix(mount.mountpoint + "/") {
            return String(absolute.dropFirst(mount.mountpoint.count + 1))
        }
        return nil
    }

    /// Without `.`, `..` and repeated slashes, by text alone (never asks the
    /// mount, whose daemon may be the one waiting for this command).
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    static func usageText(_ usage: KeptUsage) -> String {
        var text = "trash: \(usage.trashFiles) deleted file\(usage.trashFiles == 1 ? "" : "s") (\(ByteText.text(Int(usage.trashBytes)))), "
            + "versions: \(usage.versions) earlier text\(usage.versions == 1 ? "" : "s") (\(ByteText.text(Int(usage.versionsBytes)))); "
        text += usage.limits.isOff ? "keeping is off ('quire config trash-days 30' turns it on)"
            : "kept \(usage.limits.days) days, at most \(ByteText.text(Int(usage.limits.bytes))), on this device only"
        if let problem = usage.pruneProblem { text += "\n" + problem }
        return text
    }

    static func usageJSON(_ usage: KeptUsage) -> [String: Any] {
        ["trashFiles": usage.trashFiles, "trashBytes": usage.trashBytes, "versions": usage.versions, "versionsBytes": usage.versionsBytes,
         "days": usage.limits.days, "maxBytes": usage.limits.bytes, "pruneProblem": usage.pruneProblem as Any]
    }
}

extension StatusReport {
    /// Trash and earlier versions: counts, disk use and limits.
    func addingTrash(store: ReplicaStore) -> StatusReport {
        guard let usage = try? store.keptUsage() else { return self }
        var report = self
        report.text += "\n" + TrashCommands.usageText(usage)
        report.json["kept"] = TrashCommands.usageJSON(usage)
        return report
    }
}
