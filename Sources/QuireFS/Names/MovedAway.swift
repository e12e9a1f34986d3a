import Foundation
import QuireCore

/// Notebook files, cards and plans a sibling moved or renamed, under the
/// name they had here, for a while after.
///
/// An editor that read `Ideas.md` saves by writing a temp file and renaming
/// it over `Ideas.md`. When a sibling moved the note to `Archive/` in
/// between, that name is empty here, and the rename made a second note of
/// the user's edit at the old place, beside the moved one with the old
/// text. A save by rename onto such a name by a program this device showed
/// the note to is a new version of the moved note instead: one note, where
/// the sibling put it, with the edit (`RenameFacts.movedAway`).
struct MovedAway {
    /// Where a file is saved through a temp name and can be moved: a
    /// journal day's name is its date, not a place.
    static let namespaces: Set<Namespace> = [.notebook, .plans, .contacts]
    /// Editors keep a note open for long: the program's baseline is what
    /// ties its save to the note, and this bounds how long a name is kept.
    static let window: TimeInterval = 3600
    /// At most this many are remembered (a sibling's move of a big folder
    /// moves no file name: its files keep theirs, inside it).
    static let capacity = 1024

    private struct Slot: Hashable {
        var folder: Folder
        var name: CanonicalName
    }

    private var moves: [Slot: (ref: RowRef, at: Date)] = [:]

    mutating func record(_ ref: RowRef, leaving name: CanonicalName, in folder: Folder, at now: Date) {
        if moves.count >= Self.capacity { moves = moves.filter { now.timeIntervalSince($0.value.at) < Self.window } }
        if moves.count >= Self.capacity { return }
        moves[Slot(folder: folder, name: name)] = (ref, now)
    }

    /// The row a sibling moved away from `name` in `folder` within the window.
    func row(leaving name: CanonicalName, in folder: Folder, at now: Date) -> RowRef? {
        moves[Slot(folder: folder, name: name)].flatMap { now.timeIntervalSince($0.at) < Self.window ? $0.ref : nil }
    }

    /// The name is taken here again (created or renamed onto): it no longer
    /// stands for the moved row.
    mutating func forget(_ name: CanonicalName, in folder: Folder) {
        moves[Slot(folder: folder, name: name)] = nil
    }
}
