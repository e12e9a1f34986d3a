/// What a notebook row is in the folder tree. The notebook is a tree of
/// folders holding notes (`.md` files, merged paragraph by paragraph) and
/// attachments (any other file, kept byte for byte). All three are `Note`
/// rows, so offload, recall, fsck and sync treat an attachment's bytes as
/// they treat a note's body.
///
/// A row's place is `Note.folder`: the key of the folder row it is in (nil:
/// the top of the notebook). Moving a folder changes one row, so a sibling
/// never shows half a move; every row under it keeps its key.
public enum NoteKind: UInt8, Sendable, CaseIterable {
    /// A note: its title is the file name without `.md`; concurrent edits
    /// merge by paragraph union.
    case note = 0
    /// An attachment: its title is the whole file name; concurrent edits
    /// keep every version (the last writer's under the name, the others
    /// shown beside it as conflict copies).
    case file = 1
    /// A folder: its title is the folder's name; its body is empty.
    case folder = 2
}
