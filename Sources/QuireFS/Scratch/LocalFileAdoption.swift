import Foundation
import QuireCore
import QuireStore

extension QuireFileSystem {
    /// Files an older build kept in the notebook's scratch folder because
    /// they were not notes (`todo.txt`, `photo.jpg`) are attachments now:
    /// each becomes a row with its bytes and time, and leaves the scratch
    /// folder only once the row is committed. Run before serving.
    func adoptLocalNotebookFiles() {
        let folder = Folder.namespace(.notebook)
        for name in scratch.names(folder) {
            // An ignored file stays on this device, whichever build kept it.
            guard case .row(let title, let kind) = FileNames.meaning(of: name, in: .notebook), !isIgnored(name, in: folder) else { continue }
            do {
                let bytes = try scratch.contents(folder, name)
                guard bytes.count <= RowLimits.maxBodyBytes else {
                    log.problem("notebook/\(name) stays on this device: at \(RowLimits.describe(bytes.count)) it is over the "
                                + "\(RowLimits.describe(RowLimits.maxBodyBytes)) a file may hold and still sync")
                    continue
                }
                let zero = Timestamp(seconds: 0)
                var note = Note(title: title, body: bytes, createdAt: zero, updatedAt: zero, kind: kind)
                note.modifiedAt = scratch.modificationTime(folder, name)
                if try listing(.notebook).key(named: name, in: nil) != nil {
                    log.problem("notebook/\(name) stays on this device: a synced file has its name; rename it to keep both")
                    continue
                }
                let edit = try store.putFromMount(.note(note), key: nil)
                try? scratch.remove(folder, name)
                recordWrite(RowRef(namespace: .notebook, key: edit.row.key), edit)
                log.info("notebook/\(name), kept on this device by an older version, is a synced \(kind == .note ? "note" : "attachment") now")
            } catch {
                log.problem("notebook/\(name) stays on this device: it could not become a synced file (\(error))")
            }
        }
    }

    /// Temp-named files a mount that stopped without unmounting left in
    /// the notebook's folders wait again, and become rows unless renamed.
    /// Run before serving.
    func resumeProvisionalFiles() {
        guard let listing = names.listing(.notebook) else { return }
        let folders = [Folder.namespace(.notebook)] + listing.rows.values.filter(\.isFolder).map { Folder.subfolder($0.key) }
        let now = Date()
        for folder in folders {
            for name in scratch.names(folder) where FileNames.tempName(name.text) != nil && !isIgnored(name, in: folder) {
                guard case .row = FileNames.meaning(of: name, in: .notebook) else { continue }
                provisional.add(ScratchPlace(folder: folder, name: name), at: now)
            }
        }
    }
}
