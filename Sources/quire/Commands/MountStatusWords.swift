import Foundation
import QuireCore
import QuireFS
import QuireStore

/// `.quire/status`, `.quire/status.json` and `.quire/digest` of a mount:
/// the same words as `quire status`, plus what the mount itself saw.
enum MountStatusWords {
    static func make(home: DeviceHome, identity: Identity, store: ReplicaStore, mount: MountStatus) -> (text: String, json: [UInt8]) {
        var text: String
        var json: [String: Any]
        do {
            let report = try StatusReport.gather(home: home, identity: identity, store: store)
            text = report.text
            json = report.json
        } catch {
            text = "status unavailable: \(error)"
            json = ["error": "\(error)"]
        }
        var lines = ["", "mounted at \(mount.mountpoint), \(mount.openFiles) open files"]
        if !mount.localOnlyFiles.isEmpty {
            lines.append("\(mount.localOnlyFiles.count) files are not rows and stay on this device only: "
                         + mount.localOnlyFiles.prefix(10).joined(separator: ", ") + (mount.localOnlyFiles.count > 10 ? ", …" : ""))
        }
        if !mount.ignoredFiles.isEmpty {
            lines.append("\(mount.ignoredFiles.count) files of the notebook stay on this device by a .quireignore rule: "
                         + mount.ignoredFiles.prefix(10).joined(separator: ", ") + (mount.ignoredFiles.count > 10 ? ", …" : ""))
        }
        if mount.problems.isEmpty {
            lines.append("no problems with files in the mount")
        } else {
            lines.append("recent problems with files in the mount:")
            lines += mount.problems.map { "  " + $0 }
        }
        text += "\n" + lines.joined(separator: "\n")
        let tables = mount.tables
        json["mount"] = ["mountpoint": mount.mountpoint, "openFiles": mount.openFiles,
                         "localOnlyFiles": mount.localOnlyFiles, "ignoredFiles": mount.ignoredFiles, "problems": mount.problems,
                         // For tests and debugging: the tables follow what the kernel holds.
                         "tables": ["inodes": tables.inodes, "cachedPageVersions": tables.cachedPageVersions,
                                    "transientAttributes": tables.transientAttributes, "workingCopies": tables.workingCopies,
                                    "directorySnapshots": tables.directorySnapshots]] as [String: Any]
        let data = (try? JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return (text, Array(data) + [UInt8(ascii: "\n")])
    }

    /// The encoded state digest (hex) on the first line, then each root.
    static func digestText(home: DeviceHome, store: ReplicaStore) throws -> [UInt8] {
        let digest = try store.digest(generation: (try? home.prefs.load().generation) ?? 0)
        var lines = [Hex.encode(digest.encoded()), "generation \(digest.generation)"]
        for namespace in Namespace.allCases {
            lines.append(namespace.name + " " + Hex.encode(digest.roots[namespace] ?? []))
        }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }
}
