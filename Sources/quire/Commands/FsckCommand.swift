import Foundation
import QuireDaemon
import QuireCore
import QuireStore
import QuireSync

/// `quire fsck`: the replica's roots recomputed from content, and every
/// offloaded body still held by its holders, re-hashed on the holder.
enum FsckCommand {
    static let command = Command(
        name: "fsck",
        summary: "verify the replica and that every offloaded body is still held",
        usage: """
            usage: quire fsck [--timeout S] [--json]

            Recomputes every namespace root from the rows' content and compares it
            with the maintained one. Then asks the holders of every offloaded note
            whether they still hold its body; each holder re-hashes the bytes it
            keeps before it says yes. Reports every body held by fewer devices than
            the copies it was offloaded with ('quire offload --copies'), naming the
            holders that did not answer, no longer hold it, or were revoked (a
            revoked device is not asked: its copy counts no more).

              --timeout S   seconds to wait for the holders (default 10)
              --json        the findings as JSON

            Runs through the sync engine like 'quire offload'. Exit status 1 when
            anything is wrong.
            """,
        valued: ["timeout"], flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let timeout = try OffloadCommands.timeoutValue(args)
        let (identity, store) = try inv.open()
        var problems: [String] = []
        let damaged = try store.checkBodies()
        if damaged > 0 {
            problems.append("\(damaged) note bod\(damaged == 1 ? "y" : "ies") did not match \(damaged == 1 ? "its" : "their") hash (damaged on disk): set aside, "
                            + "never shown or served; reading the note or 'quire recall --all' fetches a good copy from a sibling or the homebase")
        }
        let rootsOK = try store.recomputedRoots() == store.roots()
        if !rootsOK { problems.append("the maintained state digest differs from the one recomputed from content: the replica is damaged") }

        let offloaded = try store.offloadedNotes()
        let required = OffloadCopiesFile(home: inv.home).load()
        // A revoked holder is not asked (its frames are refused): its copy counts no more.
        let roster = try? Roster.load(from: store, accountKey: identity.account.publicKey).roster
        func isRevoked(_ id: DeviceID) -> Bool { roster?[id]?.isRevoked == true }
        // A note that came here already offloaded (this device joined after
        // its offload) has no holder recorded: the homebases are asked, as
        // a recall would ask them.
        let homebases = roster.map { r in r.siblings(of: identity.deviceID).filter { $0.role == "homebase" && !$0.isRevoked }.map(\.deviceID) } ?? []
        func askedHolders(_ n: OffloadedNote) -> [DeviceID] { n.holders.isEmpty ? homebases : n.holders }
        var items: [DeviceID: [HoldQuery.Item]] = [:]
        for n in offloaded {
            for h in askedHolders(n) where !isRevoked(h) { items[h, default: []].append(HoldQuery.Item(contentHash: n.contentHash, key: n.key)) }
        }
        var answers: [DeviceID: Set<[UInt8]>?] = [:]
        if !items.isEmpty {
            let channel = try ControlClient.open(inv)
            defer { channel.close() }
            do {
                try channel.perform(.verify(items: items, timeout: timeout)) { event in
                    if case .verified(let holders) = event { answers = holders }
                }
            } catch {
                throw CommandFailure("\(error)")
            }
        }
        let names = holderNames(roster)
        var notes: [[String: Any]] = []
        var short = 0
        for n in offloaded {
            let hash = Hex.encode(n.contentHash)
            var confirmed: [String] = [], silent: [String] = [], lost: [String] = [], revoked: [String] = []
            var found: [DeviceID] = []
            for h in askedHolders(n) {
                let name = names[h] ?? h.hex.prefix(12).description
                if isRevoked(h) { revoked.append(name); continue }
                switch answers[h] {
                case .some(.some(let held)):
                    if held.contains(n.contentHash) { confirmed.append(name); found.append(h) } else { lost.append(name) }
                default: silent.append(name)
                }
            }
            // Holders found by asking are recorded: status and the next fsck know them.
            if n.holders.isEmpty && !found.isEmpty { try store.recordFoundHolders(n.key, contentHash: n.contentHash, holders: found) }
            let need = OffloadCopiesFile.required(n, in: required)
            var entry: [String: Any] = ["key": n.key.hex, "title": n.title, "required": need, "confirmed": confirmed,
                                        "silent": silent, "lost": lost, "revoked": revoked]
            if confirmed.count < need {
                short += 1
                var why: [String] = []
                if !confirmed.isEmpty { why.append("held by " + confirmed.joined(separator: ", ")) }
                if !lost.isEmpty { why.append(lost.joined(separator: ", ") + " no longer hold\(lost.count == 1 ? "s" : "") it") }
                if !silent.isEmpty { why.append(silent.joined(separator: ", ") + " did not answer (unreachable?)") }
                if !revoked.isEmpty { why.append(revoked.joined(separator: ", ") + (revoked.count == 1 ? " was" : " were") + " revoked (a copy there counts no more)") }
                if why.isEmpty { why.append("no device is known to hold it") }
                let text = "'\(n.title)' (\(n.key.hex.prefix(12))): body held by \(confirmed.count) of \(need) required copies: " + why.joined(separator: "; ")
                problems.append(text)
                entry["problem"] = text
            }
            notes.append(entry)
        }
        // What mends the notes a revocation left short (counted among the problems above).
        var hints: [String] = []
        let belowForRevocation = RevokedCopies(offloaded: offloaded, roster: roster, required: required).belowRequired.count
        if belowForRevocation > 0 {
            hints.append("\(belowForRevocation) offloaded note\(belowForRevocation == 1 ? "" : "s") counted a copy on a revoked device and "
                            + "\(belowForRevocation == 1 ? "is" : "are") below the copies \(belowForRevocation == 1 ? "it was" : "they were") offloaded with: "
                            + "'quire recall --below-copies' brings \(belowForRevocation == 1 ? "it" : "them") back here")
        }
        if args.has("json") {
            Output.json(["ok": problems.isEmpty, "rootsVerified": rootsOK, "offloaded": offloaded.count, "belowRequiredCopies": short,
                         "notes": notes, "problems": problems, "hints": hints])
        } else {
            Output.line(rootsOK ? "state digest: every root matches the content" : "state digest: DAMAGED")
            if offloaded.isEmpty {
                Output.line("no offloaded notes: nothing to verify on holders")
            } else {
                Output.line("offloaded bodies: \(offloaded.count) checked, \(offloaded.count - short) held with their required copies, \(short) below")
            }
            for p in problems { Output.line("  " + p) }
            for h in hints { Output.line(h) }
        }
        if !problems.isEmpty { throw CommandFailure("fsck found \(problems.count) problem\(problems.count == 1 ? "" : "s")") }
    }

    /// Device names from the verified roster, quoted.
    static func holderNames(_ roster: Roster?) -> [DeviceID: String] {
        var names: [DeviceID: String] = [:]
        for (id, member) in roster?.members ?? [:] { names[id] = "'\(member.name)'" }
        return names
    }
}
