import Foundation
import QuireDaemon
import QuireFuse
import QuireCore
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

    /// Why a backup of `device` must not be written at `target` because
    /// something is there already, or nil when the name is free (or holds a
    /// backup of this device and `replacing` is asked). A backup is one file,
    /// written whole beside the old one and renamed over it, so a replace
    /// that is interrupted leaves the older backup as it was; but nothing
    /// that is not a backup of this device is ever replaced: it may be the
    /// only copy of something else.
    static func occupant(of target: String, device: DeviceID, replacing: Bool) -> String? {
        var st = stat()
        guard lstat(target, &st) == 0 else { return nil }
        let newName = "name a new file (a name not taken yet)"
        switch st.st_mode & S_IFMT {
        case S_IFDIR:
            return "\(target) is a folder; a backup is one file: name a new file in it (such as \(target.hasSuffix("/") ? target : target + "/")backup.qbackup)"
        case S_IFLNK:
            return "\(target) is a symlink, which is never replaced: \(newName)"
        case S_IFREG: break
        default:
            return "\(target) already exists and is not a regular file; it is never replaced: \(newName)"
        }
        guard let bytes = try? AtomicFile.readRegular(target), let old = try? DeviceBackup(decoding: bytes, source: target) else {
            return "\(target) already exists (\(st.st_size) bytes) and is not a quire backup; it is never replaced: \(newName)"
        }
        let taken = DateText.format(old.takenAt.seconds, time: true)
        let what = "a quire backup of device '\(old.deviceName)' (\(old.deviceID.hex.prefix(12))) taken \(taken)"
        guard old.deviceID == device else {
            return "\(target) already holds \(what), another device; --replace replaces only a backup of this device: \(newName)"
        }
        if replacing { return nil }
        return "\(target) already holds \(what); \(newName), or add --replace to replace that backup as a whole "
            + "(it stays as it is until the new one is completely written)"
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
