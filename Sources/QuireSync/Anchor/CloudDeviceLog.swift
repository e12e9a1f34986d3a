import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The device log in the cloud folder: each device keeps there a copy of
/// every roster statement it holds (admissions, revocations, renames), in a
/// file of its own (`quire-devices-<account>-<device>.qlog`: one writer per
/// file, so a file-sync service never has two versions to choose from).
///
/// A revocation must outlive a restore: the device that made it may be put
/// back from a backup taken before it, and if no sibling heard of it yet,
/// the fleet would forget it, take the revoked device back, and trust an
/// anchor it forged under the old key. The folder survives every device
/// restore, so each device reads the others' copies (at start-up, when it
/// checks the anchor, and every half minute) and applies what it lacks, by
/// the same checks a roster row from a sibling passes: a statement counts
/// only if it verifies as one of this account (`SyncEngine.certifiedRows`),
/// so a file no device of the account wrote adds nothing. Whoever can write
/// the folder can still delete a copy; a revoked device's access to the
/// folder should be taken away (docs/anchor-format.md).
///
/// Format: `"QUIREDL1"` ‖ XChaCha20-Poly1305 (nonce ‖ ciphertext ‖ tag)
/// under the account's original backup key, the associated data being
/// `quire.device-log` ‖ account id ‖ the file's device id: canonical CBOR
/// `[row, ...]` of the `devices` namespace, rows in their wire form, by key.
/// Sealed so that device names and keys stay between the account's devices.
extension CloudFolder {
    static let deviceLogMagic = Array("QUIREDL1".utf8)

    private var deviceLogPrefix: String { "quire-devices-" + Hex.encode(accountID.prefix(6)) + "-" }

    /// Where `device` keeps its copy of the device log.
    public func deviceLogPath(of device: DeviceID) -> String { path + "/" + deviceLogPrefix + device.hex + ".qlog" }

    private func deviceLogAssociatedData(_ device: DeviceID) -> [UInt8] {
        Array("quire.device-log".utf8) + accountID + device.bytes
    }

    /// Writes `device`'s copy of the log, unless the folder holds these rows
    /// already; returns whether it wrote.
    @discardableResult
    public func writeDeviceLog(_ rows: [Row], device: DeviceID, key: SecretBytes) throws(AnchorError) -> Bool {
        let plain = CBORWriter.encode(.array(rows.filter { $0.namespace == .devices }.sorted { $0.key < $1.key }.map(RowWire.encode)))
        let file = deviceLogPath(of: device)
        if let existing = try? CloudIO.read(file, upTo: RowLimits.maxMessageBytes), (try? openDeviceLog(existing, device: device, key: key)) == plain {
            return false
        }
        do {
            guard try CloudIO.isFolder(path) else { throw AnchorError.unwritable("\(path) is not a folder (is the cloud folder mounted?)") }
            let sealed = try AEAD.seal(plain, associatedData: deviceLogAssociatedData(device), with: key)
            try CloudIO.write(CloudFolder.deviceLogMagic + sealed, to: file, mode: 0o600)
        } catch let error as AnchorError {
            throw error
        } catch {
            throw .unwritable("\(file): \(error)")
        }
        return true
    }

    /// What every device's copy holds: the rows, and each copy that could
    /// not be used, with why (named in the status; never fatal).
    public func deviceLogs(key: SecretBytes) throws(AnchorError) -> (rows: [Row], unusable: [String]) {
        let names: [String]
        do { names = try CloudIO.list(path) } catch let error as CloudIO.NotAnswering {
            throw .unreadable("\(path): \(error)")
        } catch {
            throw .unreadable("\(path): \(error.localizedDescription)")
        }
        var rows: [Row] = [], unusable: [String] = []
        for name in names.sorted() where name.hasPrefix(deviceLogPrefix) && name.hasSuffix(".qlog") && !name.contains(".tmp-") {
            let file = path + "/" + name
            let hex = String(name.dropFirst(deviceLogPrefix.count).dropLast(".qlog".count))
            guard let device = Hex.decode(hex).flatMap(ID16.init(bytes:)) else {
                unusable.append("\(file): the name carries no device id")
                continue
            }
            // A log is a few KB a device; a file past the message limit is no copy.
            let data: [UInt8]
            do { data = try CloudIO.read(file, upTo: RowLimits.maxMessageBytes + 1) } catch {
                unusable.append("\(file): cannot be read (\(error))")
                continue
            }
            guard data.count <= RowLimits.maxMessageBytes else {
                unusable.append("\(file): more than \(RowLimits.maxMessageBytes) bytes, more than a device log can hold")
                continue
            }
            do {
                let plain = try openDeviceLog(data, device: device, key: key)
                for item in try CBORReader.decode(plain, limits: .init(maxDepth: 16, maxItemLength: RowLimits.maxMessageBytes)).asArray() {
                    guard let row = RowWire.decode(item, namespace: .devices) else { throw AnchorError.malformed("a row does not decode") }
                    rows.append(row)
                }
            } catch {
                unusable.append("\(file): \(error)")
            }
        }
        return (rows, unusable)
    }

    private func openDeviceLog(_ data: [UInt8], device: DeviceID, key: SecretBytes) throws(AnchorError) -> [UInt8] {
        guard data.count > CloudFolder.deviceLogMagic.count, Array(data.prefix(CloudFolder.deviceLogMagic.count)) == CloudFolder.deviceLogMagic else {
            throw .malformed("not a device log (no QUIREDL1 magic)")
        }
        do {
            return try AEAD.open(Array(data.dropFirst(CloudFolder.deviceLogMagic.count)), associatedData: deviceLogAssociatedData(device), with: key)
        } catch {
            throw .doesNotOpen("\(error)")
        }
    }
}
