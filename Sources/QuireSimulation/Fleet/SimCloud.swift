import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

/// The simulated cloud folder (`--cloud`): one real folder shared by the
/// account, seen by each device through a view of its own (a symbolic link),
/// so one device can lose it while the others still reach it. Never part of
/// a device backup. Faults: a device's view unreachable (reads and the
/// anchor write fail), a sync service's conflict copy of an older anchor
/// beside the current one, an older anchor put back in place of the current
/// one (a restore of the folder itself), and an anchor that landed for a
/// round that never committed (its leader lost power after the upload).
public final class SimCloud: @unchecked Sendable {
    public let path: String
    let viewsPath: String
    let accountID: [UInt8]
    /// Every anchor the folder held, oldest first (for the put-back faults).
    private(set) var anchors: [(generation: UInt64, bytes: [UInt8])] = []
    /// Device names whose view is unreachable now.
    public private(set) var unreachable = Set<String>()
    /// True once an older anchor replaced the current one, until a newer lands.
    public private(set) var isRegressed = false
    private var conflictCopies = 0
    /// Devices whose view fell behind: the folder's files as they were when
    /// it did (name → bytes), what its catching up is judged against.
    private var lagBases: [String: [String: [UInt8]]] = [:]
    public var lagging: Set<String> { Set(lagBases.keys) }

    init(base: String, accountID: [UInt8]) {
        path = base + "/cloud"
        viewsPath = base + "/cloud-views"
        self.accountID = accountID
        _ = mkdir(path, 0o700)
        _ = mkdir(viewsPath, 0o700)
    }

    var folder: CloudFolder { CloudFolder(path: path, accountID: accountID) }

    /// The folder as `device` sees it.
    func view(of device: String) -> String {
        let view = viewsPath + "/" + device
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: view)) == nil {
            try? FileManager.default.createSymbolicLink(atPath: view, withDestinationPath: path)
        }
        return view
    }

    /// The device's view points nowhere (or back at the folder). A view
    /// that fell behind goes with what it held.
    func setReachable(_ reachable: Bool, for device: String) {
        let view = view(of: device)
        lagBases[device] = nil
        try? FileManager.default.removeItem(atPath: view)
        try? FileManager.default.createSymbolicLink(atPath: view, withDestinationPath: reachable ? path : viewsPath + "/nowhere")
        if reachable { unreachable.remove(device) } else { unreachable.insert(device) }
    }

    func healAll() {
        for device in lagBases.keys.sorted() { _ = catchUp(device) }
        for device in unreachable { setReachable(true, for: device) }
    }

    /// The files of a folder (whole, not being written), by name.
    private static func files(in dir: String) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where !name.contains(".tmp-") {
            if let bytes = FileManager.default.contents(atPath: dir + "/" + name) { out[name] = Array(bytes) }
        }
        return out
    }

    /// The device's view becomes a copy of the folder as it is now, which it
    /// alone reads and writes (a file-sync service that stopped syncing).
    func fallBehind(_ device: String) -> Bool {
        guard !unreachable.contains(device), lagBases[device] == nil else { return false }
        let view = view(of: device)
        let base = Self.files(in: path)
        try? FileManager.default.removeItem(atPath: view)
        guard mkdir(view, 0o700) == 0 else { return false }
        for (name, bytes) in base { _ = FileManager.default.createFile(atPath: view + "/" + name, contents: Data(bytes)) }
        lagBases[device] = base
        return true
    }

    /// The view catches up, as a sync service settles two sides: a file only
    /// the device changed (written, replaced or removed) takes its version;
    /// one both changed keeps the folder's, and the device's lands beside it
    /// as a conflict copy. Then the view is the folder again. Returns what
    /// landed, in words.
    func catchUp(_ device: String) -> [String]? {
        guard let base = lagBases.removeValue(forKey: device) else { return nil }
        let view = view(of: device)
        let mine = Self.files(in: view), theirs = Self.files(in: path)
        var landed: [String] = []
        for name in Set(base.keys).union(mine.keys).sorted() where mine[name] != base[name] {
            let file = path + "/" + name
            if theirs[name] == base[name] {
                if let bytes = mine[name] {
                    _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))
                    landed.append(name)
                } else {
                    try? FileManager.default.removeItem(atPath: file)
                    landed.append("\(name) removed")
                }
            } else if let bytes = mine[name] {
                conflictCopies += 1
                let dot = name.lastIndex(of: ".") ?? name.endIndex
                let copy = String(name[..<dot]) + " (\(device)'s conflicted copy \(conflictCopies))" + String(name[dot...])
                _ = FileManager.default.createFile(atPath: path + "/" + copy, contents: Data(bytes))
                landed.append("\(name) as \(copy)")
            }
        }
        try? FileManager.default.removeItem(atPath: view)
        try? FileManager.default.createSymbolicLink(atPath: view, withDestinationPath: path)
        observe()
        return landed
    }

    /// Remembers the current anchor if it is new; a newer generation ends a regression.
    func observe() {
        guard let bytes = FileManager.default.contents(atPath: folder.anchorPath).map(Array.init),
              let header = try? AnchorFile.header(of: bytes, accountID: accountID) else { return }
        if anchors.last?.bytes != bytes {
            if let newest = anchors.map(\.generation).max(), header.generation > newest { isRegressed = false }
            anchors.append((header.generation, bytes))
        }
    }

    /// The highest generation any anchor ever had.
    public var highestGeneration: UInt64 { anchors.map(\.generation).max() ?? 0 }

    /// An older anchor under a conflict-copy name beside the current one.
    func addConflictCopy(pick: UInt64) -> String? {
        observe()
        guard !anchors.isEmpty else { return nil }
        let old = anchors[Int(pick % UInt64(anchors.count))]
        conflictCopies += 1
        let name = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (conflicted copy \(conflictCopies)).qanchor")
        guard FileManager.default.createFile(atPath: name, contents: Data(old.bytes)) else { return nil }
        return "a conflict copy of the anchor at generation \(old.generation) appears beside the current one"
    }

    /// An older anchor replaces the current one (the folder restored from its own backup).
    func putBackOlder(pick: UInt64) -> String? {
        observe()
        let current = anchors.last?.generation ?? 0
        let older = anchors.filter { $0.generation < current }
        guard !older.isEmpty else { return nil }
        let old = older[Int(pick % UInt64(older.count))]
        guard FileManager.default.createFile(atPath: folder.anchorPath, contents: Data(old.bytes)) else { return nil }
        isRegressed = true
        anchors.append(old)
        return "the anchor at generation \(current) is replaced by an older one at generation \(old.generation)"
    }

    /// An anchor at `generation` holding `rows`, as a leader writes it before
    /// a commit that then never happens.
    func writeDangling(generation: UInt64, rows: [Row], keys: AnchorKeys, at: Timestamp) throws {
        let bytes = try AnchorFile.seal(AnchorSnapshot(generation: generation, rows: rows), accountID: accountID, keys: keys, at: at)
        try folder.write(bytes)
        observe()
    }
}
