import QuireCore

/// One step of a history: an operation, then the fleet runs for a while.
/// Operations name their targets abstractly (a device slot, a pick among
/// the rows the device holds then) and are resolved when they run, so a
/// history with some steps dropped (the shrinker) still means something.
public struct Step: Sendable, Equatable {
    public var operation: Operation
    /// Simulated milliseconds the fleet runs after the operation.
    public var thenRunMs: UInt64

    public init(_ operation: Operation, thenRunMs: UInt64) {
        self.operation = operation
        self.thenRunMs = thenRunMs
    }
}

/// What a person (or the world) does to one device or the network.
public enum Operation: Sendable, Equatable {
    /// An edit in one namespace, saved at once.
    case write(device: Int, target: WriteTarget, pick: UInt64)
    /// A prose edit in an editor left open for `openMs`: what the editor
    /// shows is read first, sync runs meanwhile, the save comes last.
    case slowProseEdit(device: Int, target: ProseTarget, edit: ProseEdit, pick: UInt64, openMs: UInt64)
    /// Deletes a row the device holds live (a pick among them).
    case delete(device: Int, namespace: Namespace, pick: UInt64)
    /// Deletes a setting or a journal day by name (if the device holds it live).
    case deleteNamed(device: Int, target: NamedRow)
    /// The engine stops (no network); edits may go on.
    case goOffline(device: Int)
    case goOnline(device: Int)
    /// The sync process restarts (same replica).
    case restartEngine(device: Int)
    /// The whole device restarts: engine stopped, replica closed and reopened.
    case reboot(device: Int)
    /// A copy of the device directory is taken (the device is off for it).
    case backUp(device: Int)
    /// A copy taken earlier is put back in place of the directory (a pick
    /// among the device's backups: 0 is the latest).
    case restore(device: Int, pick: UInt64)
    /// A new device joins the account, invited by `inviter`.
    case join(inviter: Int)
    /// `victim` is lost, and `revoker` revokes it; with `thiefReturns` the
    /// lost device comes back on, syncing and writing, a thief's device.
    case revoke(revoker: Int, victim: Int, thiefReturns: Bool)
    /// The network splits: slots whose bit is set in `mask` on one side.
    case partition(mask: UInt8)
    /// The network is whole again.
    case heal
    /// Every device asleep for `ms` (lids closed, frames still on the way).
    case sleep(ms: UInt64)
    /// The device's wall clock is stepped by `deltaMs` (an NTP correction; back or forth).
    case clockStep(device: Int, deltaMs: Int64)
    /// A fault of the cloud folder (SimCloud).
    case cloud(CloudFault)
    /// The device loses power: its disk loses every write it had not
    /// synced, and it restarts from what survived.
    case powerLoss(device: Int)
    /// `quire offload` of up to `count` notes the device holds resident (a
    /// pick among them), each needing `copies` confirmed copies. The batch
    /// runs on while the history goes on; the simulator polls it.
    case offload(device: Int, pick: UInt64, count: Int, copies: Int)
    /// `quire recall` of one offloaded note (a pick among them).
    case recall(device: Int, pick: UInt64)
    /// A read of an offloaded note through the mount: recalled on demand,
    /// within the mount's timeout.
    case readOffloaded(device: Int, pick: UInt64)
    /// The homebase loses power after the next body it receives arrived and
    /// before it is committed (never acknowledged, then).
    case holderPowerCut
    /// An edit or delete of a note the device shows offloaded (a pick among them).
    case editOffloaded(device: Int, pick: UInt64, edit: OffloadedNoteEdit)

    /// The device the operation acts on or through, if one.
    var deviceSlot: Int? {
        switch self {
        case .write(let d, _, _), .slowProseEdit(let d, _, _, _, _), .delete(let d, _, _), .deleteNamed(let d, _), .goOffline(let d),
             .goOnline(let d), .restartEngine(let d), .reboot(let d), .backUp(let d), .restore(let d, _), .clockStep(let d, _),
             .powerLoss(let d), .offload(let d, _, _, _), .recall(let d, _), .readOffloaded(let d, _), .editOffloaded(let d, _, _):
            return d
        case .join(let inviter): return inviter
        case .revoke(let revoker, _, _): return revoker
        case .partition, .heal, .sleep, .cloud, .holderPowerCut: return nil
        }
    }
}

/// What happens to a note whose body is offloaded here.
public enum OffloadedNoteEdit: Sendable, Equatable {
    /// Opened in an editor (recalled on demand) and saved with this edit.
    case prose(ProseEdit)
    /// Renamed: the body stays where it is (a rename keeps the pointer).
    case retitle
    case delete
}

/// What goes wrong with the cloud folder.
public enum CloudFault: Sendable, Equatable {
    /// The folder as this device sees it goes away (reads and the anchor write fail).
    case unreachable(device: Int)
    /// It comes back.
    case reachable(device: Int)
    /// A sync service's conflict copy of an earlier anchor appears beside the current one.
    case conflictCopy(pick: UInt64)
    /// An earlier anchor replaces the current one (the folder restored from its own backup).
    case olderPutBack(pick: UInt64)
    /// An anchor at the device's generation + 1 lands for a round that never
    /// commits (the leader lost power right after the upload).
    case dangling(device: Int)
    /// The device's view falls behind (`--lagging-cloud`): a copy of the
    /// folder as it is now, which it reads and writes alone.
    case lagging(device: Int)
    /// Its view catches up: what it wrote lands (a conflict copy where the
    /// folder changed the same file meanwhile), and it sees the folder again.
    case caughtUp(device: Int)
}

/// What a `write` edits.
public enum WriteTarget: Sendable, Equatable {
    case newNote
    case noteTitle
    case noteProse(ProseEdit)
    /// Journal day 0, 1 or 2 (the row key is the date: devices meet on it).
    case sagaProse(day: Int, ProseEdit)
    /// Setting 0, 1 or 2 (the row key is the name: devices meet on it).
    case setting(name: Int)
    case newPlan
    case editPlan
    case newContact
    case editContact
}

/// A row whose key is its name, so every device means the same row.
public enum NamedRow: Sendable, Equatable {
    case setting(Int)
    case sagaDay(Int)
}

public enum ProseTarget: Sendable, Equatable {
    case note
    case saga(day: Int)
}

/// How a prose edit changes the paragraphs the editor shows.
public enum ProseEdit: String, Sendable, Equatable, Codable, CaseIterable {
    case append, insert, rewrite, remove
    /// Appends a paragraph of 20 to 80 KB (a row bigger than a small response budget).
    case appendLong

    /// What people do most of the time.
    public static let everyday: [ProseEdit] = [.append, .insert, .rewrite, .remove]
}

extension Operation: CustomStringConvertible {
    public var description: String {
        switch self {
        case .write(let d, let target, _): return "write \(target) on slot \(d)"
        case .slowProseEdit(let d, let target, let edit, _, let ms): return "slow \(edit) of \(target) on slot \(d) (editor open \(ms) ms)"
        case .delete(let d, let ns, _): return "delete in \(ns.name) on slot \(d)"
        case .deleteNamed(let d, let target): return "delete \(target) on slot \(d)"
        case .goOffline(let d): return "slot \(d) goes offline"
        case .goOnline(let d): return "slot \(d) comes online"
        case .restartEngine(let d): return "slot \(d) restarts its sync engine"
        case .reboot(let d): return "slot \(d) reboots"
        case .backUp(let d): return "slot \(d) is backed up"
        case .restore(let d, _): return "slot \(d) is restored from a copy of its directory"
        case .join(let inviter): return "a new device joins, invited by slot \(inviter)"
        case .revoke(let revoker, let victim, let thief): return "slot \(victim) is lost and slot \(revoker) revokes it" + (thief ? "; a thief turns it on later" : "")
        case .partition(let mask): return "partition \(String(mask, radix: 2))"
        case .heal: return "the network heals"
        case .sleep(let ms): return "everyone sleeps \(ms / 60_000) min"
        case .clockStep(let d, let delta): return "slot \(d)'s clock steps \(delta) ms"
        case .cloud(let fault): return "cloud folder: \(fault)"
        case .powerLoss(let d): return "slot \(d) loses power"
        case .offload(let d, _, let count, let copies): return "slot \(d) offloads up to \(count) note(s), \(copies) copies"
        case .recall(let d, _): return "slot \(d) recalls an offloaded note"
        case .readOffloaded(let d, _): return "slot \(d) reads an offloaded note"
        case .holderPowerCut: return "the homebase loses power between receiving a body and committing it"
        case .editOffloaded(let d, _, let edit): return "\(edit) of an offloaded note on slot \(d)"
        }
    }
}
