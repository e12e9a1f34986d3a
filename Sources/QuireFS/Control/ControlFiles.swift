import Foundation
import QuireCore
import QuireFuse

/// `.quire/status`, `.quire/status.json` and `.quire/digest`: generated
/// when read, read-only.
extension QuireFileSystem {
    /// Called with the lock held (stat of a control file from a lookup or
    /// a listing: rare). `open` and `getattr` use `renderControl` instead.
    func controlContents(_ file: ControlFile) -> [UInt8] { controlContents(file, status: mountStatus()) }

    /// The text of a control file, rendered outside the lock: the status
    /// words and the digest read the store, and a script polling
    /// `.quire/status` must not hold up every request on the mount.
    func renderControl(_ file: ControlFile) -> [UInt8] {
        let status = file == .digest ? nil : locked { mountStatus() }
        return controlContents(file, status: status)
    }

    /// Control files whose inode this is (read under the lock).
    func controlFile(_ inode: FuseInode) -> ControlFile? {
        locked {
            if case .controlFile(let file)? = names.inodes.object(inode.rawValue) { return file }
            return nil
        }
    }

    private func controlContents(_ file: ControlFile, status: MountStatus?) -> [UInt8] {
        switch file {
        case .status: return Array((configuration.status(status ?? mountStatus()).text + "\n").utf8)
        case .statusJSON: return configuration.status(status ?? mountStatus()).json
        case .digest:
            do { return try configuration.digest() } catch {
                return Array("digest unavailable: \(error)\n".utf8)
            }
        }
    }

    /// Called with the lock held.
    func mountStatus() -> MountStatus {
        var localOnly: [String] = []
        for namespace in MountLayout.namespaces {
            for name in scratch.names(.namespace(namespace)) where FileNames.meaning(of: name, in: namespace) == .localOnly {
                localOnly.append(namespace.name + "/" + name.text)
            }
        }
        var status = MountStatus(mountpoint: configuration.mountpoint, problems: log.recentProblems,
                                 localOnlyFiles: localOnly, openFiles: openFiles.count, tables: tableSizes())
        status.ignoredFiles = ignoredNotebookFiles()
        return status
    }
}
