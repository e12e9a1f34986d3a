import Foundation
import QuireCore

/// Notebook rows this mount deleted by name a moment ago, under the name
/// they had, with the text they showed.
///
/// Some programs replace a file by removing it and creating it anew under
/// its name (git checkout, some editors and sync tools). Made a new row,
/// the note lost its key and history, and a sibling's concurrent edit of
/// the old row survived the delete (edit beats delete) as a second note of
/// that name. Created again within `window`, the file is the same row
/// written again: one note, its history kept, a concurrent edit merged in,
/// and the removed text's paragraphs deleted (the text is the new
/// version's baseline, as a save by rename's is).
struct RecentlyRemoved {
    static let window: TimeInterval = 10
    /// At most this many are remembered (`rm -r` of a big folder).
    static let capacity = 1024

    struct Removal {
        var ref: RowRef
        /// What this device showed of it (nil: the trash's copy is read if
        /// the name is created again).
        var text: [UInt8]?
        var at: Date
    }

    private struct Slot: Hashable {
        var folder: Folder
        var name: CanonicalName
    }

    private var removals: [Slot: Removal] = [:]

    mutating func record(_ removal: Removal, name: CanonicalName, in folder: Folder) {
        if removals.count >= Self.capacity { removals = removals.filter { removal.at.timeIntervalSince($0.value.at) < Self.window } }
        if removals.count >= Self.capacity { return }
        removals[Slot(folder: folder, name: name)] = removal
    }

    /// Whether a row was removed under `name` in `folder` within the window.
    func holds(_ name: CanonicalName, in folder: Folder, at now: Date) -> Bool { removal(name, in: folder, at: now) != nil }

    /// The row removed under `name` in `folder` within the window, left in place.
    func removal(_ name: CanonicalName, in folder: Folder, at now: Date) -> Removal? {
        removals[Slot(folder: folder, name: name)].flatMap { now.timeIntervalSince($0.at) < Self.window ? $0 : nil }
    }

    /// The row removed under `name` in `folder` within the window, taken
    /// (a name is created again once).
    mutating func take(_ name: CanonicalName, in folder: Folder, at now: Date) -> Removal? {
        defer { removals[Slot(folder: folder, name: name)] = nil }
        return removal(name, in: folder, at: now)
    }
}
