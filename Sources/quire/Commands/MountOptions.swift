/// `-o` options of `quire mount`, parsed like other FUSE filesystems:
/// comma-separated, repeatable, `name` or `name=value`.
struct MountOptions: Equatable {
    var allowsOtherUsers = false
    var isReadOnly = false
    var isDebug = false
    var startsSync = true
    /// Mount over a folder that holds files (they are hidden until unmount).
    var allowsNonEmpty = false
    var recallTimeout: Double?
    var fileSystemName: String?
    /// Handed to libfuse unchanged (kernel mount flags and FUSE knobs).
    var passedThrough: [String] = []

    /// Options libfuse and the kernel understand, passed on as written.
    static let kernelOptions: Set<String> = [
        "nosuid", "suid", "nodev", "dev", "noexec", "exec", "sync", "async", "dirsync",
        "atime", "noatime", "nodiratime", "relatime", "norelatime", "strictatime", "auto_unmount",
    ]
    static let kernelValuedOptions: Set<String> = ["max_read"]
    /// fstab and mount(8) words with no meaning to the filesystem itself.
    static let ignoredOptions: Set<String> = [
        "defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group", "_netdev", "nofail",
        "default_permissions", "rw", "quiet",
    ]

    static func parse(_ groups: [String]) throws(UsageError) -> MountOptions {
        var options = MountOptions()
        for group in groups {
            for option in group.split(separator: ",").map(String.init) where !option.isEmpty {
                let name = option.split(separator: "=", maxSplits: 1).first.map(String.init) ?? option
                let value = option.contains("=") ? String(option[option.index(after: option.firstIndex(of: "=")!)...]) : nil
                switch name {
                case "allow_other": options.allowsOtherUsers = true
                case "ro": options.isReadOnly = true
                case "rw": options.isReadOnly = false
                case "debug": options.isDebug = true
                case "nosync": options.startsSync = false
                case "nonempty": options.allowsNonEmpty = true
                case "recall_timeout":
                    guard let value, let seconds = Double(value), seconds > 0 else {
                        throw UsageError("-o recall_timeout expects seconds, e.g. recall_timeout=10")
                    }
                    options.recallTimeout = seconds
                case "fsname":
                    guard let value, !value.isEmpty else { throw UsageError("-o fsname expects a name") }
                    options.fileSystemName = value
                case "subtype", "setuid", "comment":
                    continue   // the subtype is always quire; setuid is mount.quire's
                default:
                    if name.hasPrefix("x-") || ignoredOptions.contains(name) { continue }
                    if kernelOptions.contains(name) && value == nil { options.passedThrough.append(option); continue }
                    if kernelValuedOptions.contains(name) && value != nil { options.passedThrough.append(option); continue }
                    throw UsageError("unknown mount option '\(option)' (see 'quire mount --help')")
                }
            }
        }
        return options
    }
}
