import Glibc

/// One line of /proc/mounts.
public struct FuseMountEntry: Hashable, Sendable {
    /// First column: the `fsname=` of a FUSE mount.
    public var source: String
    public var mountpoint: String
    /// `fuse.<subtype>` for a FUSE mount with a subtype.
    public var type: String
    public var options: [String]

    /// What follows "fuse." or "fuseblk." in the type, if anything.
    public var subtype: String? {
        for prefix in ["fuse.", "fuseblk."] where type.hasPrefix(prefix) {
            return String(type.dropFirst(prefix.count))
        }
        return nil
    }

    public var isFuse: Bool { type == "fuse" || type == "fuseblk" || subtype != nil }
}

/// The mount table, stale-mount detection and unmounting, for mountpoints
/// this process may not have mounted (a daemon that crashed, a CLI cleaning up).
public enum FuseMounts {
    /// Every mount this process can see, in mount order (/proc/self/mounts).
    public static func entries() throws(FuseError) -> [FuseMountEntry] {
        parse(String(decoding: try System.readFile("/proc/self/mounts"), as: UTF8.self))
    }

    /// The topmost mount at `path`, if `path` is a mountpoint.
    public static func entry(at path: String) -> FuseMountEntry? {
        let target = absolutePath(path)
        return (try? entries())?.last { $0.mountpoint == target }
    }

    /// True when something is mounted at `path` (stale or not).
    public static func isMounted(_ path: String) -> Bool { entry(at: path) != nil }

    /// True when `path` is a mount whose FUSE daemon is gone: the kernel
    /// answers ENOTCONN ("Transport endpoint is not connected"). Such a mount
    /// blocks remounting until `unmountLazily` removes it.
    ///
    /// Asks with statvfs, not stat: stat is answered from cached attributes
    /// until their timeout ends, statfs always goes to the (dead) daemon.
    public static func isStale(_ path: String) -> Bool {
        var statistics = statvfs()
        return statvfs(path, &statistics) != 0 && errno == ENOTCONN
    }

    /// Detaches the mount at `path` now, even if busy (`umount -l`): as root
    /// with umount2(MNT_DETACH), otherwise with `fusermount3 -u -z`.
    public static func unmountLazily(_ path: String) throws(FuseError) {
        try unmount(path, lazily: true)
    }

    /// Unmounts `path`; fails with `.busy` while files in it are open.
    public static func unmount(_ path: String, lazily: Bool = false) throws(FuseError) {
        let target = absolutePath(path)
        if System.effectiveUserID == 0 {
            try System.unmount(target, flags: lazily ? Int32(MNT_DETACH) : 0)
            return
        }
        let candidates = ["/usr/bin/fusermount3", "/bin/fusermount3"]
        guard let helper = candidates.first(where: { (candidate: String) in access(candidate, X_OK) == 0 }) else {
            throw .notPermitted
        }
        let status = try System.run(helper, ["-u", "-q"] + (lazily ? ["-z"] : []) + ["--", target])
        if status != 0 { throw lazily ? .io : .busy }
    }

    /// Parses the /proc/mounts format: six space-separated fields, with
    /// space, tab, newline and backslash written as \040 \011 \012 \134.
    static func parse(_ table: String) -> [FuseMountEntry] {
        table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 4 else { return nil }
            return FuseMountEntry(
                source: decodeOctalEscapes(fields[0]),
                mountpoint: decodeOctalEscapes(fields[1]),
                type: decodeOctalEscapes(fields[2]),
                options: decodeOctalEscapes(fields[3]).split(separator: ",").map(String.init))
        }
    }

    static func decodeOctalEscapes(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count,
               let value = octalByte(source[(index + 1)...(index + 3)])
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func octalByte(_ digits: ArraySlice<UInt8>) -> UInt8? {
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "7") else { return nil }
            value = value * 8 + Int(digit - UInt8(ascii: "0"))
        }
        return value <= 255 ? UInt8(value) : nil
    }

    /// `path` as /proc/mounts writes it: absolute, symlinks in the parent
    /// resolved. The last component is not resolved, because stat of a stale
    /// mountpoint fails.
    static func absolutePath(_ path: String) -> String {
        var components = path.split(separator: "/").map(String.init)
        let isAbsolute = path.hasPrefix("/")
        while components.last == "." { components.removeLast() }
        guard let last = components.popLast() else { return isAbsolute ? "/" : (System.currentDirectory ?? "/") }
        let parent = components.isEmpty ? (isAbsolute ? "/" : ".") : (isAbsolute ? "/" : "") + components.joined(separator: "/")
        let resolvedParent = System.resolvedPath(parent) ?? parent
        if last == ".." { return System.resolvedPath(resolvedParent + "/..") ?? resolvedParent + "/.." }
        return (resolvedParent == "/" ? "" : resolvedParent) + "/" + last
    }
}
