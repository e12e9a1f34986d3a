import QuireCore

/// A row by namespace and key.
struct RowRef: Hashable, Sendable {
    var namespace: Namespace
    var key: RowKey
}

/// The files of `.quire/`.
enum ControlFile: CaseIterable, Sendable {
    case status, statusJSON, digest

    var name: String {
        switch self {
        case .status: return "status"
        case .statusJSON: return "status.json"
        case .digest: return "digest"
        }
    }
}

/// A folder of the mount that can hold scratch files: the top, a
/// namespace's folder, or a folder of the notebook tree (a folder row).
enum Folder: Hashable, Sendable {
    case root
    case namespace(Namespace)
    case subfolder(RowKey)

    /// The folder that lists `folder` of `namespace` (nil: its top).
    init(_ namespace: Namespace, _ folder: RowKey?) {
        self = folder.map { .subfolder($0) } ?? .namespace(namespace)
    }

    /// The namespace whose rows the folder lists; nil for the top.
    var namespace: Namespace? {
        switch self {
        case .root: return nil
        case .namespace(let namespace): return namespace
        case .subfolder: return .notebook
        }
    }

    /// The folder row this is (nil: a namespace's top, or the root).
    var folderKey: RowKey? {
        if case .subfolder(let key) = self { return key }
        return nil
    }

    var scratchDirectoryName: String {
        switch self {
        case .root: return "_root"
        case .namespace(let namespace): return namespace.name
        case .subfolder(let key): return "notebook~" + key.hex
        }
    }
}

/// What an inode number stands for.
enum NodeObject: Hashable, Sendable {
    case root
    case namespace(Namespace)
    case control
    case controlFile(ControlFile)
    case row(RowRef)
    case scratch(Folder, CanonicalName)
    /// A losing version of an attachment, shown beside it (read-only).
    case conflictCopy(RowRef, Dot)
    /// `.quire/trash` and `.quire/versions` (Control/KeptFiles.swift).
    case kept(KeptNode)
}

/// Inode numbers. Folders and `.quire` have fixed numbers; a row's number
/// is derived from its namespace and key, so it is the same after a
/// remount. The kernel moves an inode with its name on rename; when a save
/// by rename makes a name show another object than its inode used to, the
/// inode is re-pointed (so the kernel's caches stay right) and the row
/// uses that inode until the kernel forgets it.
///
/// Numbers the kernel forgot are dropped (`drop`), except the fixed ones,
/// so the table holds what the kernel holds, not every row ever listed.
struct InodeTable {
    private(set) var objects: [UInt64: NodeObject] = [:]
    private var primary: [RowRef: UInt64] = [:]
    private var scratchInodes: [NodeObject: UInt64] = [:]
    private(set) var inodesOfRow: [RowRef: Set<UInt64>] = [:]
    private var nextDynamic: UInt64 = 1 << 62

    static let controlDirectory: UInt64 = 16

    init() {
        objects[1] = .root
        for namespace in Namespace.allCases where namespace != .devices {
            objects[Self.folderInode(namespace)] = .namespace(namespace)
        }
        objects[Self.controlDirectory] = .control
        for (index, file) in ControlFile.allCases.enumerated() {
            objects[Self.controlDirectory + 1 + UInt64(index)] = .controlFile(file)
        }
        for (inode, node) in KeptNode.fixed { objects[inode] = .kept(node) }
    }

    static func folderInode(_ namespace: Namespace) -> UInt64 { 2 + UInt64(namespace.rawValue) }

    static func controlFileInode(_ file: ControlFile) -> UInt64 {
        controlDirectory + 1 + UInt64(ControlFile.allCases.firstIndex(of: file)!)
    }

    /// FNV-1a over namespace and key, folded into [2^40, 2^62): far from
    /// the fixed numbers and from the dynamic range above 2^62.
    static func derivedInode(_ ref: RowRef) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in [ref.namespace.rawValue] + ref.key.bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let low: UInt64 = 1 << 40, high: UInt64 = 1 << 62
        return low + hash % (high - low)
    }

    func object(_ inode: UInt64) -> NodeObject? { objects[inode] }

    /// Root, namespace folders and `.quire`: never dropped.
    static func isFixed(_ inode: UInt64) -> Bool { inode < 1 << 40 }

    /// How many numbers stand for something (status, tests).
    var count: Int { objects.count }

    /// The number a plain listing shows for a row without allocating one
    /// (the kernel takes no reference from readdir, so nothing would ever
    /// drop it): its inode if it has one, else the one a lookup will give
    /// it, bar a collision.
    func listedInode(of ref: RowRef) -> UInt64 { primary[ref] ?? Self.derivedInode(ref) }

    /// The kernel forgot `inode`: it stands for nothing now.
    mutating func drop(_ inode: UInt64) {
        guard !Self.isFixed(inode), let object = objects.removeValue(forKey: inode) else { return }
        switch object {
        case .row(let ref): unbind(inode, from: ref)
        case .scratch, .conflictCopy: if scratchInodes[object] == inode { scratchInodes.removeValue(forKey: object) }
        default: break
        }
    }

    private mutating func unbind(_ inode: UInt64, from ref: RowRef) {
        inodesOfRow[ref]?.remove(inode)
        if inodesOfRow[ref]?.isEmpty == true { inodesOfRow.removeValue(forKey: ref) }
        if primary[ref] == inode { primary.removeValue(forKey: ref) }
    }

    /// The inode a row's name answers with now, if it has one yet.
    func primaryInode(of ref: RowRef) -> UInt64? { primary[ref] }

    mutating func inode(for ref: RowRef) -> UInt64 {
        if let inode = primary[ref] { return inode }
        let derived = Self.derivedInode(ref)
        let inode: UInt64
        if objects[derived] == nil || objects[derived] == .row(ref) {
            inode = derived
        } else {
            inode = allocate()
        }
        bind(inode, to: .row(ref))
        primary[ref] = inode
        return inode
    }

    mutating func inode(forScratch folder: Folder, _ name: CanonicalName) -> UInt64 {
        inode(forExtra: .scratch(folder, name))
    }

    mutating func inode(forConflict ref: RowRef, _ dot: Dot) -> UInt64 {
        inode(forExtra: .conflictCopy(ref, dot))
    }

    /// Objects numbered on demand (scratch files, conflict copies).
    private mutating func inode(forExtra object: NodeObject) -> UInt64 {
        if let inode = scratchInodes[object] { return inode }
        let inode = allocate()
        bind(inode, to: object)
        return inode
    }

    /// Makes `inode` stand for `object` (the kernel moved it there). For a
    /// row it also becomes the row's inode for lookups.
    mutating func repoint(_ inode: UInt64, to object: NodeObject) {
        bind(inode, to: object)
        if case .row(let ref) = object { primary[ref] = inode }
    }

    /// A scratch file was removed while files are open on it: its number
    /// stays theirs (under a name no file can have), and the name is free.
    mutating func orphanScratch(_ folder: Folder, _ name: CanonicalName) {
        guard let inode = scratchInodes[.scratch(folder, name)] else { return }
        bind(inode, to: .scratch(folder, CanonicalName("\u{0}removed-\(inode)")))
    }

    /// The kernel was told the folder `inode` is gone (an rmdir): it keeps
    /// that inode dead while anything holds it (a shell's working folder),
    /// so the number stands for nothing until the kernel forgets it, and
    /// the row gets another if it comes back (a folder's key is derived from
    /// its name).
    mutating func retire(_ inode: UInt64) {
        guard !Self.isFixed(inode), case .row? = objects[inode] else { return }
        bind(inode, to: .scratch(.root, CanonicalName("\u{0}retired-\(inode)")))
    }

    /// Every number of a folder row the kernel was told is gone.
    mutating func retire(_ ref: RowRef) {
        for inode in inodesOfRow[ref] ?? [] { retire(inode) }
    }

    /// A node of the kept trees, under the number `KeptNode` gives it.
    mutating func bindKept(_ inode: UInt64, _ node: KeptNode) { bind(inode, to: .kept(node)) }

    /// A scratch file went away or was renamed: forget its number.
    mutating func dropScratch(_ folder: Folder, _ name: CanonicalName) {
        guard let inode = scratchInodes.removeValue(forKey: .scratch(folder, name)) else { return }
        if objects[inode] == .scratch(folder, name) { objects.removeValue(forKey: inode) }
    }

    private mutating func bind(_ inode: UInt64, to object: NodeObject) {
        if let old = objects[inode] {
            switch old {
            case .row(let ref):
                unbind(inode, from: ref)
            case .scratch, .conflictCopy:
                if scratchInodes[old] == inode { scratchInodes.removeValue(forKey: old) }
            default: break
            }
        }
        objects[inode] = object
        switch object {
        case .row(let ref): inodesOfRow[ref, default: []].insert(inode)
        case .scratch, .conflictCopy:
            if let previous = scratchInodes[object], previous != inode, objects[previous] == object {
                objects.removeValue(forKey: previous)
            }
            scratchInodes[object] = inode
        default: break
        }
    }

    private mutating func allocate() -> UInt64 {
        nextDynamic += 1
        return nextDynamic
    }
}
