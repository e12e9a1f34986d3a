import Foundation
import QuireDaemon
import QuireFuse
import QuireStore

/// Where a device backup (`quire backup --to`, `quire repair --backup-to`)
/// must not be written. A backup is not sealed: it holds every note in
/// clear, this device's private keys and the account's backup key (which
/// opens every anchor). The cloud folder is uploaded by a file-sync
/// service, the very party quire writes only sealed files for; a quire
/// mount syncs whatever is put in it to every device of its account.
enum BackupTarget {
    /// Why `target` is such a place, or nil when it is not.
    static func sharedPlace(of target: String, home: DeviceHome) -> String? {
        // Where the file lands: the write renames over the last component
        // (a symlink there is replaced, not followed), in the parent with
        // its symlinks and relative parts resolved.
        let landing = MountProcess.absolutePath(target)
        let warning = "a backup is not encrypted: it holds every note in clear, this device's private keys and the account's backup key"
        if let cloud = (try? home.prefs.load())?.cloud, isInside(landing, folder: cloud) {
            return "\(target) is in this device's cloud folder (\(cloud)), which a file-sync service uploads, and \(warning). "
                + "Write it outside the cloud folder, to a disk only you can read"
        }
        let mounts = ((try? FuseMounts.entries()) ?? []).filter { $0.type == "fuse.quire" }
        if let mount = mounts.first(where: { landing.hasPrefix($0.mountpoint + "/") }) {
            return "\(target) is in the quire mount \(mount.mountpoint), which syncs every file put in it to every device of its account, "
                + "and \(warning). Write it outside the mounted folder, to a disk only you can read"
        }
        return nil
    }

    /// Whether `path` (absolute, its parent resolved) is in `folder` or below
    /// it. Compared by what the folders are (device and inode), not by name,
    /// so a symlink or a bind mount on either side changes nothing; by name
    /// too, for a cloud folder that cannot be looked at now.
    static func isInside(_ path: String, folder: String) -> Bool {
        let canonical = MountProcess.absolutePath(folder)
        if path == canonical || path.hasPrefix(canonical + "/") { return true }
        guard let wanted = identity(of: folder) else { return false }
        var directory = parentDirectory(of: path)
        while true {
            if identity(of: directory) == wanted { return true }
            if directory == "/" || directory == "." { return false }
            directory = parentDirectory(of: directory)
        }
    }

    /// Device and inode of the folder at `path`, following a symlink at its
    /// last component too ("/." is the folder itself).
    private static func identity(of path: String) -> [Int]? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/."),
              let device = (attributes[.systemNumber] as? NSNumber)?.intValue,
              let inode = (attributes[.systemFileNumber] as? NSNumber)?.intValue else { return nil }
        return [device, inode]
    }
}
