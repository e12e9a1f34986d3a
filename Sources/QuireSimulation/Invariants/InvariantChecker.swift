import QuireCore
import QuireStore
import QuireSync

/// The checks run once every fault is healed and the fleet had its chance
/// to settle (invariant 7 is also checked as each dot is minted, in
/// `HistoryModel`). Row versions are read only through `RowObservation`.
struct InvariantChecker {
    let fleet: SimulatedFleet
    let model: HistoryModel
    let options: WorkloadOptions
    var tally = InvariantTally()
    var violations: [Violation] = []

    init(fleet: SimulatedFleet, model: HistoryModel, options: WorkloadOptions) {
        self.fleet = fleet
        self.model = model
        self.options = options
    }

    private var names: [DeviceID: String] {
        Dictionary(uniqueKeysWithValues: fleet.devices.map { ($0.id, $0.name) })
    }

    mutating func fail(_ invariant: Invariant, _ summary: String, _ details: [String] = []) {
        tally.fail(invariant)
        violations.append(Violation(invariant, summary, details: details))
    }

    // MARK: (1) Convergence

    mutating func checkConvergence(settled: Bool, settleBudgetMs: UInt64) throws {
        let devices = fleet.members
        if !settled {
            fail(.convergence, "the fleet did not settle within \(settleBudgetMs / 1000) s of simulated time after every fault was healed",
                 devices.map { d in "\(d.name): unconverged with [\(d.engine?.unconvergedSiblings().joined(separator: ", ") ?? "offline")]" })
        }
        guard let reference = devices.first, let referenceStore = reference.store else { return }
        let referenceDigest = try referenceStore.digest(generation: generation(of: reference))
        var referenceRows: [Namespace: [RowKey: [UInt8]]] = [:]
        for ns in Namespace.allCases { referenceRows[ns] = try canonicalRows(referenceStore, ns) }
        for device in devices {
            guard let store = device.store else { continue }
            // The incremental roots must be the roots of the rows held.
            if try store.recomputedRoots() != store.roots() {
                fail(.convergence, "\(device.name)'s incremental digest roots differ from the roots recomputed from its rows")
            } else {
                tally.pass(.convergence)
            }
            guard device !== reference else { continue }
            let digest = try store.digest(generation: generation(of: device))
            if digest != referenceDigest {
                fail(.convergence, "\(device.name) and \(reference.name) hold different digests",
                     ["divergent namespaces: " + digest.divergentNamespaces(from: referenceDigest).map(\.name).joined(separator: ", ")])
            } else {
                tally.pass(.convergence)
            }
            for ns in Namespace.allCases {
                let rows = try canonicalRows(store, ns)
                let theirs = referenceRows[ns] ?? [:]
                var differing: [String] = []
                for key in Set(rows.keys).union(theirs.keys).sorted() where rows[key] != theirs[key] {
                    let mine = try store.row(ns, key), other = try referenceStore.row(ns, key)
                    differing.append("\(ns.name)/\(key.hex.prefix(8)): \(device.name) \(describe(mine)), \(reference.name) \(describe(other))")
                }
                if differing.isEmpty {
                    tally.pass(.convergence, max(rows.count, 1))
                } else {
                    fail(.convergence, "\(device.name) and \(reference.name) hold different \(ns.name) rows (\(differing.count))",
                         Array(differing.prefix(6)))
                }
            }
        }
    }

    /// The device's generation as its prefs hold it (only a committed barrier moves it).
    private func generation(of device: SimDevice) -> UInt64 { (try? device.home.prefs.load().generation) ?? 0 }

    /// Live rows by key, as canonical bytes.
    private func canonicalRows(_ store: ReplicaStore, _ ns: Namespace) throws -> [RowKey: [UInt8]] {
        var out: [RowKey: [UInt8]] = [:]
        for row in try store.rows(ns, from: [], to: nil) { out[row.key] = RowObservation.canonicalBytes(of: row) }
        return out
    }

    func describe(_ row: Row?) -> String {
        let version = RowObservation.describeVersion(row, names: names)
        guard let content = RowObservation.shown(row) else { return version }
        var parts = [version]
        if let token = ContentValues.token(of: content) { parts.append("value \(token)") }
        if let prose = ContentValues.prose(of: content) { parts.append("paragraphs [\(prose.map(Self.tokenOf).joined(separator: " "))]") }
        return parts.joined(separator: " ")
    }

    static func tokenOf(_ paragraph: String) -> String { String(paragraph.prefix { $0 != " " }) }

    /// An offloaded note whose body is one of `bodies`.
    static func showsOnly(_ bodies: Set<[UInt8]>, _ content: RowContent) -> Bool {
        guard case .note(let n) = content, n.body == nil else { return false }
        return bodies.contains(n.contentHash)
    }

    // MARK: (3) No lost write

    /// `bodiesTakenBack`: note bodies whose last copy a restore of their
    /// holder took back (named in the trace, like writes a restore took
    /// back): a note that can only show such a body as offloaded owes no
    /// paragraphs.
    /// `collectedAndLost`: keys collected by rounds the fleet lost
    /// (`BarrierLedger.lostAbove`), which may show again.
    mutating func checkNoLostWrite(bodiesTakenBack: Set<[UInt8]> = [], collectedAndLost: Set<RowRef> = []) throws {
        for ref in model.rows {
            let unsuperseded = model.unsupersededWrites(of: ref)
            let liveEdits = unsuperseded.filter { !$0.isDelete }
            let expectedParagraphs = Set(model.editsNoDeleteSaw(of: ref).flatMap(\.paragraphs))
                .subtracting(model.deletedParagraphs(of: ref))
            var problems: [String] = []
            for device in fleet.members {
                guard let store = device.store else { continue }
                let row = try store.row(ref.namespace, ref.key)
                let shown = RowObservation.shown(row)
                if !liveEdits.isEmpty || !expectedParagraphs.isEmpty {
                    guard let shown else {
                        problems.append("\(device.name) holds it \(describe(row)), though "
                                        + (liveEdits.isEmpty ? "paragraphs no delete saw" : "writes no later write had seen") + " remain: "
                                        + liveEdits.map { "\($0.label) \($0.token ?? "")" }.joined(separator: ", "))
                        continue
                    }
                    if ContentValues.hasToken(ref.namespace), !liveEdits.isEmpty {
                        let token = ContentValues.token(of: shown)
                        let allowed = Set(liveEdits.compactMap(\.token))
                        if let token, !allowed.contains(token) {
                            let source = model.writes(of: ref).first { $0.token == token && !$0.isDelete }
                            let supersededBy = source.map { s in model.writes(of: ref).filter { $0.seen.contains(s.id) }.map(\.label) } ?? []
                            problems.append("\(device.name) shows \(token)"
                                            + (source.map { " from \($0.label)" } ?? "")
                                            + (supersededBy.isEmpty ? "" : ", which \(supersededBy.joined(separator: ", ")) had seen and replaced")
                                            + "; the writes no later write had seen are " + liveEdits.map { "\($0.label) \($0.token ?? "")" }.joined(separator: ", "))
                        }
                        if options.requiresHeads, let row {
                            let heads = Set(RowObservation.heads(row).compactMap { ContentValues.token(of: $0.content) })
                            let missing = liveEdits.filter { $0.token.map { !heads.contains($0) } ?? false }
                            if !missing.isEmpty {
                                problems.append("\(device.name) keeps no head for " + missing.map { "\($0.label) \($0.token ?? "") by \($0.deviceName)" }.joined(separator: ", ")
                                                + " (concurrent, never superseded)")
                            }
                        }
                    }
                    if let prose = ContentValues.prose(of: shown), !Self.showsOnly(bodiesTakenBack, shown) {
                        let missing = expectedParagraphs.subtracting(prose)
                        if !missing.isEmpty {
                            let writers = model.writes(of: ref).filter { w in w.paragraphs.contains { missing.contains($0) } }.map(\.label)
                            problems.append("\(device.name) lost paragraph(s) \(missing.map(Self.tokenOf).sorted().joined(separator: " "))"
                                            + " written by \(writers.joined(separator: ", ")), never deliberately deleted")
                        }
                    }
                } else if let shown, !unsuperseded.isEmpty, !model.hasCopyBackCollision(ref), !collectedAndLost.contains(ref),
                          !model.writes(of: ref).contains(where: { $0.token == ContentValues.token(of: shown) && model.wasCopiedBack(slot: $0.slot) }) {
                    // Every edit was seen by a delete: nothing may show. (Not
                    // where a device put back by a raw copy minted a dot twice
                    // on this row: the model's "seen" is by dot, while a
                    // context tells the writes under a dot apart by their
                    // tags, and a version the delete's context does not name
                    // is kept rather than lost. Nor a version a device put
                    // back by a raw copy re-issued because it never saw it
                    // confirmed: a spare version, by design.)
                    problems.append("\(device.name) shows \(ContentValues.token(of: shown) ?? "it") (\(describe(row))) though the deletes "
                                    + unsuperseded.map(\.label).joined(separator: ", ") + " had seen every write of it")
                }
            }
            if problems.isEmpty {
                tally.pass(.noLostWrite)
            } else {
                fail(.noLostWrite, "\(ref): " + problems[0], Array(problems.dropFirst().prefix(5)) + history(of: ref) + (try merges(of: ref)))
            }
        }
    }

    /// Every write of a row, for a violation's evidence.
    func history(of ref: RowRef) -> [String] {
        model.writes(of: ref).map { w in
            (model.rolledBack.contains(w.id) ? "(rolled back by a restore) " : "") + "\(w.label) step \(w.step.map(String.init) ?? "-") \(w.deviceName) \(w.isDelete ? "deleted" : "wrote \(w.token ?? "")")"
                + (w.paragraphs.isEmpty ? "" : " [\(w.paragraphs.map(Self.tokenOf).joined(separator: " "))]")
                + (w.removedParagraphs.isEmpty ? "" : " removing [\(w.removedParagraphs.map(Self.tokenOf).joined(separator: " "))]")
                + " dot (\(w.deviceName),\(w.dot.counter)), had seen {\(w.seen.sorted().map { "#w\($0)" }.joined(separator: ","))}"
        }
    }

    /// What each device's replica recorded merging into the row.
    func merges(of ref: RowRef) throws -> [String] {
        var out: [String] = []
        for device in fleet.members {
            guard let store = device.store else { continue }
            for m in try store.mergeHistory(ref.namespace, ref.key) {
                // The log names devices by id prefix; say their names.
                var detail = m.detail
                for d in fleet.devices { detail = detail.replacingOccurrences(of: String(d.id.hex.prefix(8)), with: d.name) }
                out.append("\(device.name) merge log: \(detail)")
            }
        }
        return out
    }

    // MARK: (5) No silent stuck device

    mutating func checkNoSilentStuckDevice(settled: Bool) {
        for device in fleet.members {
            guard let engine = device.engine else {
                fail(.noSilentStuckDevice, "\(device.name) is not running after the heal")
                continue
            }
            let unconverged = settled ? [] : engine.unconvergedSiblings()
            if unconverged.isEmpty { tally.pass(.noSilentStuckDevice); continue }
            let status = engine.status()
            var silent: [String] = []
            for name in unconverged {
                let sibling = status.siblings.first { $0.name == name }
                let said = status.phase == .revoked
                    || sibling?.stormBackoffUntil != nil || sibling?.incompatibleVersion != nil || sibling?.generationGap != nil
                    || status.events.contains { $0.contains("'\(name)'") }
                if !said { silent.append(name) }
            }
            if silent.isEmpty {
                tally.pass(.noSilentStuckDevice)
            } else {
                fail(.noSilentStuckDevice, "\(device.name) is not converged with \(silent.joined(separator: ", ")) and its status does not say why",
                     ["phase \(status.phase.rawValue); siblings: " + status.siblings.map { "\($0.name) inSync=\($0.inSync) divergent=\($0.divergent)" }.joined(separator: "; "),
                      "frames dropped: " + status.dropped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
                      "events: " + status.events.suffix(4).joined(separator: " | ")])
            }
        }
    }

    // MARK: (7) One dot, one content

    mutating func checkOneDotOneContent() {
        tally.pass(.oneDotOneContent, model.dotsChecked - model.dotCollisions.count)
        for collision in model.dotCollisions {
            fail(.oneDotOneContent, collision)
        }
    }
}

extension HistoryModel {
    func writes(of row: RowRef) -> [WriteRecord] { (writesByRow[row] ?? []).map { writes[$0] } }
}
