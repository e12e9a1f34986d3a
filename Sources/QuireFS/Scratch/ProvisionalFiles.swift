import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// New notebook files named as temp files are (`FileNames.tempName`):
/// `Plan.md.aB3dE9` from GLib or Qt, `Plan.md.3841176092` from npm, git's
/// `index.lock`. As rows they were committed at close, sent to siblings,
/// and left a tombstone at every save when the rename replaced the note
/// with them (or the program removed them). They start in the scratch area
/// instead: renamed over a note (or to a new name), they are one new
/// version of it and were never rows; removed, they leave nothing; still
/// there `grace` seconds after their last close, they become rows under
/// their name (files open on them follow), so a real file that only looks
/// like a temp file syncs a moment late, never not at all.
struct ProvisionalFiles {
    static let grace: TimeInterval = 3

    /// Since when each has been closed (or created).
    private var waiting = GraceTable<ScratchPlace>()

    mutating func add(_ place: ScratchPlace, at now: Date) { waiting.renew(place, at: now) }

    /// A close restarts the wait: the grace counts from the last one.
    mutating func closed(_ place: ScratchPlace, at now: Date) {
        if waiting.contains(place) { waiting.renew(place, at: now) }
    }

    mutating func remove(_ place: ScratchPlace) { waiting.remove(place) }

    /// The files whose grace ended at `now`, taken out.
    mutating func takeDue(at now: Date) -> [ScratchPlace] {
        let due = waiting.expired(at: now, grace: Self.grace)
            .sorted { ($0.folder.scratchDirectoryName, $0.name.text) < ($1.folder.scratchDirectoryName, $1.name.text) }
        for place in due { waiting.remove(place) }
        return due
    }

    var nextDeadline: Date? { waiting.nextDeadline(grace: Self.grace) }

    var isEmpty: Bool { waiting.count == 0 }

    var all: [ScratchPlace] { Array(waiting.keys) }
}

extension QuireFileSystem {
    /// Whether a new file named `name` in `folder` starts provisional.
    func startsProvisional(_ name: CanonicalName, in folder: Folder) throws(FuseError) -> Bool {
        guard folder.namespace == .notebook, let kind = FileNames.tempName(name.text) else { return false }
        guard case .besideItsStem(let stem) = kind else { return true }
        if let dot = stem.lastIndex(of: "."), dot > stem.startIndex, stem.index(after: dot) < stem.endIndex { return true }
        return try resolve(CanonicalName(stem), in: folder) != .none
    }

    /// Provisional files whose grace ended become rows; called by the
    /// change feed (which is woken when one is added), and at unmount for
    /// all of them.
    func promoteProvisionalFiles(at now: Date, all: Bool = false) {
        let due = all ? provisional.all : provisional.takeDue(at: now)
        if all { for place in due { provisional.remove(place) } }
        for place in due { promote(place, at: now, force: all) }
    }

    private func promote(_ place: ScratchPlace, at now: Date, force: Bool) {
        let path = folderPath(place.folder) + "/" + place.name.text
        // Renamed or removed meanwhile: nothing to do. (A sibling's row
        // of the name meanwhile: both stay, one with a key marker.)
        guard scratch.status(place.folder, place.name) != nil else { return }
        let inode = names.inodes.inode(forScratch: place.folder, place.name)
        // Still open for writing: it waits for its last close. Readers
        // follow it into the row.
        if !force && !openFiles.handles(where: { $0.inode == inode && $0.flags.isWritable }).isEmpty {
            provisional.add(place, at: now)
            return
        }
        guard !isIgnored(place.name, in: place.folder),
              case .row(let title, let kind) = FileNames.meaning(of: place.name, in: .notebook) else { return }
        let plan = RenamePlanner.newRow(from: place, ref: RowRef(namespace: .notebook, key: RowKey.random(using: SystemRandom())),
                                        title: title, kind: kind, inode: inode)
        do {
            try apply(plan)
            kernelCache.invalidateInodes([inode])
            log.info("\(path) stayed where it was written: a synced file now")
        } catch {
            log.problem("\(path) stays on this device: it could not become a synced file (\(error))")
        }
    }
}
