import Foundation
import QuireCore
import QuireStore

/// The operations of a history, run against the fleet: each resolves its
/// abstract target (a slot, a pick among the rows a device holds now),
/// consults the switches, does the real thing to the real replica or
/// engine, and tells the model and the trace what happened.
extension Simulation {
    func device(_ slot: Int) -> SimDevice { fleet.devices[slot % fleet.devices.count] }

    func skip(_ device: SimDevice?, _ why: String, kind: String = "nothing to act on") {
        skipped += 1
        skips[kind, default: 0] += 1
        fleet.trace.record(device?.name, "skipped: \(why)")
    }

    func perform(_ operation: Operation, step: Int) throws {
        // A lost device does nothing but what a thief does with it.
        if let slot = operation.deviceSlot, device(slot).isRevoked {
            return skip(device(slot), "it was lost and revoked", kind: "revoked")
        }
        switch operation {
        case .write(let slot, let target, let pick):
            try write(device(slot), target, random: SeededRandom(seed: pick), step: step)
        case .slowProseEdit(let slot, let target, let edit, let pick, let openMs):
            try slowProseEdit(device(slot), target, edit, random: SeededRandom(seed: pick), openMs: openMs, step: step)
        case .delete(let slot, let namespace, let pick):
            try delete(device(slot), namespace, random: SeededRandom(seed: pick), step: step)
        case .deleteNamed(let slot, let target):
            let d = device(slot)
            switch target {
            case .setting(let i): try delete(d, RowRef(.settings, Setting.key(for: Self.settingNames[i % 3])), step: step)
            case .sagaDay(let i): try delete(d, RowRef(.saga, SagaEntry.key(for: Self.days[i % 3])), step: step)
            }
        case .goOffline(let slot):
            let d = device(slot)
            guard d.isOnline else { return skip(d, "already offline") }
            fleet.goOffline(d)
            fleet.trace.record(d.name, "goes offline")
        case .goOnline(let slot):
            let d = device(slot)
            guard !d.isOnline else { return skip(d, "already online") }
            try fleet.goOnline(d)
            fleet.trace.record(d.name, "comes online")
        case .restartEngine(let slot):
            let d = device(slot)
            guard d.isOnline else { return skip(d, "offline: no engine to restart") }
            fleet.goOffline(d)
            try fleet.goOnline(d)
            fleet.trace.record(d.name, "restarts its sync engine")
        case .reboot(let slot):
            let d = device(slot)
            let wasOnline = d.isOnline
            fleet.powerOff(d)
            try fleet.powerOn(d, online: wasOnline)
            try noteArrivals(at: d)
            fleet.trace.record(d.name, "reboots (replica closed and reopened)" + (wasOnline ? "" : ", stays offline"))
        case .backUp(let slot):
            let d = device(slot)
            let path = try fleet.backUp(d)
            d.backupCounters.append(try ownCounters(d))
            fleet.trace.record(d.name, "backed up as copy \(d.backups.count) (\(URL(fileURLWithPath: path).lastPathComponent))")
        case .restore(let slot, let pick):
            let d = device(slot)
            guard !d.backups.isEmpty else { return skip(d, "no backup to restore") }
            let index = d.backups.count - 1 - Int(pick % UInt64(d.backups.count))
            let held = try writesHeld(by: d)
            let bodies = try heldBodies(of: d)
            let aside = try fleet.restore(d, from: d.backups[index], byCopy: options.allowsRestoreByCopy,
                                          asNewFiles: options.copiesBackAsNewFiles)
            if options.copiesBackAsNewFiles {
                // 'cp -a' over the directory: the replica sees another file
                // and mints a new incarnation as it opens.
                try noteBodiesTakenBack(bodies, by: d)
                fleet.trace.record(d.name, "restored by copying back backup copy \(index + 1) as new files: incarnation "
                                   + "\(try d.store.map { String(try $0.actor().incarnation, radix: 16).prefix(4) } ?? "-")")
            } else if options.allowsRestoreByCopy {
                try noteBodiesTakenBack(bodies, by: d)
                // A copy put back into the same files (a VM snapshot): the
                // device learns it was rolled back only from what its
                // siblings show it.
                model.noteCopiedBack(slot: d.slot)
                fleet.trace.record(d.name, "restored by copying back backup copy \(index + 1) into the same files (no new incarnation)")
            } else {
                // 'quire restore': a new incarnation before anything else.
                let done = try d.store?.finishRestore(replaced: aside.map { $0 + "/replica.sqlite" },
                                                      reason: "restored from backup copy \(index + 1) (simulation)")
                fleet.trace.record(d.name, "restored backup copy \(index + 1) as 'quire restore' does: incarnation "
                                   + "\(done.map { String($0.actor.incarnation, radix: 16).prefix(4) } ?? "-"), kept \(done?.adopted ?? 0) held bodies")
                try noteBodiesTakenBack(bodies, by: d)
            }
            ledger.noteRestore(slot: d.slot)
            try noteRolledBack(held, by: d)
            try noteGivenBack(by: d)
            try noteArrivals(at: d)
        case .revoke(let revokerSlot, let victimSlot, let thiefReturns):
            try revoke(device(victimSlot), by: device(revokerSlot), thiefReturns: thiefReturns)
        case .join(let inviter):
            guard fleet.devices.count < 6 else { return skip(nil, "the fleet is full") }
            let host = device(inviter)
            let joined = try fleet.addDevice(invitedBy: host, clockOffsetMs: plan.clockOffsetsMs[fleet.devices.count % plan.clockOffsetsMs.count])
            try fleet.goOnline(joined)
            try noteArrivals(at: joined)
            fleet.trace.record(joined.name, "joins the account, invited by \(host.name)")
        case .partition(let mask):
            var sides: [Int: Int] = [:]
            for d in fleet.devices { sides[d.slot] = Int((mask >> UInt8(d.slot % 8)) & 1) }
            fleet.network.partition = sides
            let left = fleet.devices.filter { sides[$0.slot] == 0 }.map(\.name), right = fleet.devices.filter { sides[$0.slot] == 1 }.map(\.name)
            fleet.trace.record(nil, "partition: {\(left.joined(separator: ","))} | {\(right.joined(separator: ","))}")
        case .heal:
            guard fleet.network.partition != nil else { return skip(nil, "no partition to heal") }
            fleet.network.partition = nil
            fleet.trace.record(nil, "partition healed")
        case .sleep(let ms):
            fleet.sleepAll(ms: ms)
            fleet.trace.record(nil, "everyone slept \(ms / 60_000) min")
        case .clockStep(let slot, let delta):
            let d = device(slot)
            d.clock.step(by: delta)
            fleet.trace.record(d.name, "wall clock stepped \(delta >= 0 ? "+" : "")\(delta) ms (now off by \(d.clock.offset / 1000) s)")
        case .cloud(let fault):
            try perform(fault)
        case .powerLoss(let slot):
            try losePower(device(slot))
        case .offload, .recall, .readOffloaded, .holderPowerCut, .editOffloaded:
            try perform(offload: operation, step: step)
        }
    }

    /// This device's own counter in every row it holds (tombstones too).
    func ownCounters(_ d: SimDevice) throws -> [RowRef: UInt64] {
        guard let store = d.store else { return [:] }
        var out: [RowRef: UInt64] = [:]
        for ns in Namespace.allCases {
            for row in try store.rows(ns, from: [], to: nil) + store.tombstones(ns) {
                let counter = RowObservation.ownCounter(of: d.id, in: row)
                if counter > 0 { out[RowRef(ns, row.key)] = counter }
            }
        }
        return out
    }

    func liveKeys(_ store: ReplicaStore, _ ns: Namespace) throws -> [RowKey] {
        try store.summaries(ns).map(\.key)
    }

    /// A live row of `ns` on this device, skewed toward the first few in key
    /// order, so that devices often pick the same row (concurrent edits of
    /// one row are what the merges are for).
    func pickLive(_ store: ReplicaStore, _ ns: Namespace, _ random: SeededRandom) throws -> RowKey? {
        let keys = try liveKeys(store, ns)
        guard !keys.isEmpty else { return nil }
        if random.chance(0.6) { return keys[random.int(0..<min(2, keys.count))] }
        return keys[random.int(0..<keys.count)]
    }

    /// Whether a write of `ref` by `device` is held back by a switch; says so in the trace.
    func isHeldBack(_ device: SimDevice, _ ref: RowRef, before: Row?, isDelete: Bool) -> Bool {
        let seen = model.seen(by: device.slot, row: ref, before: before)
        if !options.allowsTiedStamps, ContentValues.hasToken(ref.namespace) {
            // The store stamps a local edit max(now, what it replaces).
            let shown = RowObservation.shown(before)?.updatedAt?.seconds
            let stamp = isDelete ? nil : max(device.clock.now().seconds, shown ?? Int64.min)
            if model.completesTiedStampEdits(row: ref, seen: seen, stamp: stamp) {
                skip(device, "\(isDelete ? "delete" : "edit") of \(ref) would complete a tie between an edit and the value it replaced, "
                     + "beside a concurrent write (switched off)", kind: "held back: tied stamps")
                return true
            }
        }
        guard !options.allowsThreeWayEditDelete else { return false }
        if model.completesThreeWayEditDelete(row: ref, seen: seen, isDelete: isDelete) {
            skip(device, "\(isDelete ? "delete" : "edit") of \(ref) would make a three-way edit/delete history (switched off)",
                 kind: "held back: three-way edit/delete")
            return true
        }
        return false
    }

    @discardableResult
    func commit(_ device: SimDevice, _ ref: RowRef, before: Row?, after: Row, isDelete: Bool, token: String?,
                        paragraphs: [String], removed: [String] = [], step: Int?, what: String) -> WriteRecord? {
        let record = model.record(step: step, slot: device.slot, deviceName: device.name, deviceID: device.id, row: ref,
                                  before: before, after: after, isDelete: isDelete,
                                  token: step != nil && step == options.phantomWriteStep ? token.map { "phantom-" + $0 } : token,
                                  paragraphs: paragraphs,
                                  removedParagraphs: removed, stamp: RowObservation.shown(after)?.updatedAt?.seconds)
        let names = Dictionary(uniqueKeysWithValues: fleet.devices.map { ($0.id, $0.name) })
        if let record {
            fleet.trace.record(device.name, "\(what) \(ref) → \(record.label) dot (\(device.name),\(record.dot.counter)) "
                               + "\(RowObservation.describeVersion(after, names: names)), had seen {\(record.seen.sorted().map { "#w\($0)" }.joined(separator: ","))}")
        } else {
            fleet.trace.record(device.name, "\(what) \(ref): no change")
        }
        return record
    }

    func write(_ d: SimDevice, _ target: WriteTarget, random: SeededRandom, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        switch target {
        case .newNote:
            let paragraphs = (0..<random.int(1...3)).map { _ in ProseWriter.paragraph(token: model.freshToken("p"), random: random) }
            let title = model.freshToken("t")
            let note = Note(title: title, body: ProseWriter.text(paragraphs), createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))
            let row = try store.put(.note(note))
            commit(d, RowRef(.notebook, row.key), before: nil, after: row, isDelete: false, token: title, paragraphs: paragraphs,
                   step: step, what: "new note \(title)")
        case .noteTitle:
            guard let key = try pickLive(store, .notebook, random) else { return try write(d, .newNote, random: random, step: step) }
            try retitle(d, key: key, step: step)
        case .noteProse(let edit):
            guard let key = try pickLive(store, .notebook, random) else { return try write(d, .newNote, random: random, step: step) }
            try proseEdit(d, .note, key: key, edit: edit, random: random, openMs: 0, step: step)
        case .sagaProse(let day, let edit):
            try proseEdit(d, .saga(day: day), key: SagaEntry.key(for: Self.days[day % 3]), edit: edit, random: random, openMs: 0, step: step)
        case .setting(let index):
            let name = Self.settingNames[index % 3]
            let ref = RowRef(.settings, Setting.key(for: name))
            let before = try store.row(.settings, ref.key)
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            let value = model.freshToken()
            let row = try store.put(.setting(Setting(name: name, value: value, updatedAt: Timestamp(seconds: 0))))
            commit(d, ref, before: before, after: row, isDelete: false, token: value, paragraphs: [], step: step,
                   what: "sets \(name) = \(value)")
        case .newPlan:
            let token = model.freshToken()
            let row = try store.put(.plan(Plan(title: "plan \(token)", notes: token, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
            commit(d, RowRef(.plans, row.key), before: nil, after: row, isDelete: false, token: token, paragraphs: [], step: step,
                   what: "new plan \(token)")
        case .editPlan:
            guard let key = try pickLive(store, .plans, random) else { return try write(d, .newPlan, random: random, step: step) }
            let ref = RowRef(.plans, key)
            let before = try store.row(.plans, key)
            guard case .plan(var plan)? = RowObservation.shown(before) else { return skip(d, "no plan to edit") }
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            plan.notes = model.freshToken()
            if random.chance(0.3) { plan.isDone.toggle() }
            let row = try store.put(.plan(plan), key: key)
            commit(d, ref, before: before, after: row, isDelete: false, token: plan.notes, paragraphs: [], step: step,
                   what: "edits plan to \(plan.notes)")
        case .newContact:
            let token = model.freshToken()
            let contact = Contact(name: "contact \(token)", emails: ["\(token)@example.org"], note: token, updatedAt: Timestamp(seconds: 0))
            let row = try store.put(.contact(contact))
            commit(d, RowRef(.contacts, row.key), before: nil, after: row, isDelete: false, token: token, paragraphs: [], step: step,
                   what: "new contact \(token)")
        case .editContact:
            guard let key = try pickLive(store, .contacts, random) else { return try write(d, .newContact, random: random, step: step) }
            let ref = RowRef(.contacts, key)
            let before = try store.row(.contacts, key)
            guard case .contact(var contact)? = RowObservation.shown(before) else { return skip(d, "no contact to edit") }
            if isHeldBack(d, ref, before: before, isDelete: false) { return }
            contact.note = model.freshToken()
            if random.chance(0.3) { contact.phones.append("+1555\(random.int(1000...9999))") }
            let row = try store.put(.contact(contact), key: key)
            commit(d, ref, before: before, after: row, isDelete: false, token: contact.note, paragraphs: [], step: step,
                   what: "edits contact to \(contact.note ?? "")")
        }
    }

    /// A rename, as the mount's: the note as stored with a new title (an
    /// offloaded body stays a pointer).
    func retitle(_ d: SimDevice, key: RowKey, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        let ref = RowRef(.notebook, key)
        let before = try store.row(.notebook, key)
        guard case .note(var note)? = RowObservation.shown(before) else { return skip(d, "no note to retitle") }
        if isHeldBack(d, ref, before: before, isDelete: false) { return }
        note.title = model.freshToken("t")
        let row = try store.put(.note(note), key: key)
        commit(d, ref, before: before, after: row, isDelete: false, token: note.title,
               paragraphs: ProseWriter.paragraphs(of: note.body), step: step, what: "retitles to \(note.title)")
    }

    static let days = ["2027-03-01", "2027-03-02", "2027-03-03"]
    static let settingNames = ["theme", "font", "language"]

    func slowProseEdit(_ d: SimDevice, _ target: ProseTarget, _ edit: ProseEdit, random: SeededRandom, openMs: UInt64,
                               step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        switch target {
        case .note:
            guard let key = try pickLive(store, .notebook, random) else { return try write(d, .newNote, random: random, step: step) }
            try proseEdit(d, .note, key: key, edit: edit, random: random, openMs: openMs, step: step)
        case .saga(let day):
            try proseEdit(d, .saga(day: day), key: SagaEntry.key(for: Self.days[day % 3]), edit: edit, random: random,
                          openMs: openMs, step: step)
        }
    }

    /// Reads what the editor shows, lets `openMs` pass (sync runs), then
    /// saves the edit made on what was shown.
    func proseEdit(_ d: SimDevice, _ target: ProseTarget, key: RowKey, edit: ProseEdit, random: SeededRandom, openMs: UInt64,
                           step: Int) throws {
        let ns: Namespace = (target == .note) ? .notebook : .saga
        let ref = RowRef(ns, key)
        guard let store = d.store else { return skip(d, "powered off") }
        var recalled: [UInt8]? = nil
        if case .note(let n)? = RowObservation.shown(try store.row(ns, key)), n.body == nil {
            // The mount recalls an offloaded body when the file is opened; EIO if it cannot.
            recalled = try recall(d, key: key, contentHash: n.contentHash, timeoutMs: 10_000, what: "opens")
            if recalled == nil { return skip(d, "\(ref) is offloaded and could not be recalled: the editor gets EIO") }
        }
        guard let store = d.store else { return skip(d, "powered off") }
        var opened = RowObservation.shown(try store.row(ns, key))
        if let recalled, case .note(var n)? = opened, n.body == nil {
            // Still offloaded after the recall: the mount shows the recalled bytes.
            n.body = recalled
            opened = .note(n)
        }
        let shownParagraphs = ContentValues.prose(of: opened) ?? []
        if case .note = target, opened == nil { return skip(d, "no note to edit") }
        let (paragraphs, edited) = ProseWriter.apply(edit, to: shownParagraphs, random: random, fresh: { model.freshToken("p") })
        if openMs > 0 {
            fleet.trace.record(d.name, "opens \(ref) in an editor for \(openMs) ms")
            fleet.run(ms: openMs)
        }
        guard let store = d.store else { return skip(d, "powered off") }
        let before = try store.row(ns, key)
        if !options.allowsRecreatingDeletedProse, RowObservation.isTombstone(before) {
            return skip(d, "writing \(ref) again where it is deleted (switched off)", kind: "held back: re-creating deleted prose")
        }
        if isHeldBack(d, ref, before: before, isDelete: false) { return }
        // What the editor read: an absent day reads as empty, never as "what
        // is stored at save time" (that would count paragraphs that landed
        // meanwhile as deleted by this edit).
        let shownText = ProseWriter.text(shownParagraphs)
        var removed = edited
        if RowObservation.isTombstone(before) {
            // Written again where it is deleted: the text the delete took
            // stays deleted (the writer tombstones what it last showed,
            // which lies within what it had seen).
            let kept = Set(paragraphs)
            let seen = model.seen(by: d.slot, row: ref, before: before).flatMap { model.writes[$0].paragraphs }
            removed += Set(seen).subtracting(kept).subtracting(removed).sorted()
        }
        let row: Row
        var token: String? = nil
        switch target {
        case .note:
            guard case .note(var note)? = opened else { return skip(d, "no note to edit") }
            if case .note(let current)? = RowObservation.shown(before) { note = current }   // a save writes the file's title as it is now
            note.body = ProseWriter.text(paragraphs)
            token = note.title
            row = try store.saveProse(.note(note), key: key, shown: shownText)
        case .saga(let day):
            let entry = SagaEntry(date: Self.days[day % 3], text: ProseWriter.text(paragraphs), updatedAt: Timestamp(seconds: 0))
            row = try store.saveProse(.saga(entry), key: key, shown: shownText)
        }
        commit(d, ref, before: before, after: row, isDelete: false, token: token, paragraphs: paragraphs, removed: removed, step: step,
               what: "\(ProseWriter.effective(edit, on: shownParagraphs)) in \(ref) [\(paragraphs.map(InvariantChecker.tokenOf).joined(separator: " "))]"
                   + (RowObservation.isTombstone(before) ? " (written again where it is deleted)" : ""))
    }

    func delete(_ d: SimDevice, _ ns: Namespace, random: SeededRandom, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        guard let key = try pickLive(store, ns, random) else { return skip(d, "nothing live in \(ns.name) to delete") }
        try delete(d, RowRef(ns, key), step: step)
    }

    func delete(_ d: SimDevice, _ ref: RowRef, step: Int) throws {
        guard let store = d.store else { return skip(d, "powered off") }
        let before = try store.row(ref.namespace, ref.key)
        guard RowObservation.isLive(before) else { return skip(d, "\(ref) is not live here") }
        if isHeldBack(d, ref, before: before, isDelete: true) { return }
        let row = try store.delete(ref.namespace, ref.key)
        commit(d, ref, before: before, after: row, isDelete: true, token: nil, paragraphs: [], step: step, what: "deletes")
    }
}
