import Foundation
import QuireCore

/// `.quire/status`, `.quire/status.json` and `.quire/digest`: generated
/// when read, read-only.
extension QuireFileSystem {
    func controlContents(_ file: ControlFile) -> [UInt8] {
        switch file {
        case .status: return Array((configuration.status(mountStatus()).text + "\n").utf8)
        case .statusJSON: return configuration.status(mountStatus()).json
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
        return MountStatus(mountpoint: configuration.mountpoint, problems: log.recentProblems,
                           localOnlyFiles: localOnly, openFiles: openFiles.count, tables: tableSizes())
    }
}
