import QuireCore

/// The plan fields `quire put plans` sets and `quire ls plans` / `quire get
/// plans` show, by the VTODO property each one is (RFC 5545): one set of
/// words for the command line and the `.ics` files todo tools read.
enum PlanOptions {
    static func apply(_ args: Arguments, to plan: inout Plan) throws {
        // COMPLETED (set with --done) is the time of this edit.
        plan.updatedAt = max(plan.updatedAt, Timestamp(secondsSinceEpoch: Date().timeIntervalSince1970))
        if let summary = args.value("summary") { plan.summary = summary }
        if let notes = args.value("notes") { plan.notes = notes }
        if let due = args.value("due") {
            if due == "none" { plan.due = nil } else {
                guard let s = DateText.parse(due) else {
                    throw UsageError("--due expects YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or 'none', not '\(due)'")
                }
                plan.due = Timestamp(seconds: s)
            }
        }
        if let priority = args.value("priority") {
            if priority == "none" { plan.priority = nil } else {
                guard let n = Int(priority), (1...9).contains(n) else {
                    throw UsageError("--priority expects 1 (highest) to 9 or 'none', not '\(priority)'")
                }
                plan.priority = n
            }
        }
        if let categories = args.value("categories") {
            plan.categories = categories == "none" ? [] : categories.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        if args.has("done") && args.has("undone") { throw UsageError("--done and --undone contradict each other") }
        if args.has("done") { plan.isDone = true }
        if args.has("undone") { plan.isDone = false }
    }

    /// One line of `quire ls plans`: done, due, priority, summary, categories.
    static func line(_ plan: Plan) -> String {
        let done = plan.isDone ? "[x]" : "[ ]"
        let due = plan.due.map { DateText.format($0.seconds, time: !CardDates.isMidnight($0.seconds)) } ?? "-"
        let priority = plan.priority.map { "!\($0)" } ?? "  "
        let categories = plan.categories.isEmpty ? "" : "  (" + plan.categories.joined(separator: ", ") + ")"
        return "\(done) \(due.padding(toLength: 10, withPad: " ", startingAt: 0)) \(priority) \(plan.summary)\(categories)"
    }

    static func text(_ plan: Plan) -> [String] {
        var lines = ["summary: \(plan.summary)", "done: \(plan.isDone ? "yes" : "no")",
                     "due: \(plan.due.map { DateText.format($0.seconds, time: !CardDates.isMidnight($0.seconds)) } ?? "none")",
                     "priority: \(plan.priority.map(String.init) ?? "none")",
                     "categories: \(plan.categories.isEmpty ? "none" : plan.categories.joined(separator: ","))"]
        if let rule = plan.recurrence { lines.append("repeats: \(rule)") }
        if let uid = plan.uid { lines.append("uid: \(uid)") }
        lines.append("notes: \(plan.notes)")
        return lines
    }

    static func json(_ plan: Plan) -> [String: Any] {
        var o: [String: Any] = ["title": plan.title, "summary": plan.summary, "notes": plan.notes, "done": plan.isDone,
                                "categories": plan.categories]
        o["due"] = plan.due.map { DateText.format($0.seconds, time: !CardDates.isMidnight($0.seconds)) } ?? NSNull()
        o["priority"] = plan.priority ?? NSNull()
        o["rrule"] = plan.recurrence ?? NSNull()
        o["uid"] = plan.uid ?? NSNull()
        o["ics"] = String(decoding: plan.bytes, as: UTF8.self)
        return o
    }
}

import Foundation
