import QuireCore

/// Plain renderings of structured rows for `quire get`.
enum RowText {
    static func text(_ content: RowContent) -> String {
        switch content {
        case .plan(let p):
            return (["title: \(p.title)"] + PlanOptions.text(p)).joined(separator: "\n")
        case .contact(let c):
            var lines = ["name: \(c.name)", "file: \(c.title).vcf"]
            if let uid = c.uid { lines.append("uid: \(uid)") }
            lines += c.emails.map { "email: \($0)" }
            lines += c.phones.map { "phone: \($0)" }
            if let note = c.note { lines.append("note: \(note)") }
            return lines.joined(separator: "\n")
        case .setting(let s): return s.value
        case .memory(let e):
            var lines = ["at: \(DateText.format(e.at.seconds, time: true))", "kind: \(e.kind)"]
            if !e.buries.isEmpty { lines.append("buries: " + e.buries.map(\.hex).joined(separator: ",")) }
            lines.append("")
            lines.append(e.text)
            return lines.joined(separator: "\n")
        case .note(let n): return String(decoding: n.body ?? [], as: UTF8.self)
        case .saga(let s): return String(decoding: s.text, as: UTF8.self)
        case .device(let d): return "name: \(d.name)\nrevoked: \(d.revocation == nil ? "no" : "yes")"
        }
    }

    static func json(_ content: RowContent) -> [String: Any] {
        var o: [String: Any] = ["namespace": content.namespace.name, "name": content.displayName]
        if let u = content.updatedAt { o["updatedAt"] = u.seconds }
        switch content {
        case .note(let n):
            o["title"] = n.title; o["tags"] = n.tags; o["contentHash"] = Hex.encode(n.contentHash)
            o["createdAt"] = n.createdAt.seconds; o["resident"] = n.body != nil
            if let b = n.body { o["body"] = String(decoding: b, as: UTF8.self); o["size"] = b.count }
        case .saga(let s): o["date"] = s.date; o["text"] = String(decoding: s.text, as: UTF8.self)
        case .plan(let p):
            o.merge(PlanOptions.json(p)) { $1 }
        case .contact(let c):
            o["title"] = c.title; o["fn"] = c.name; o["uid"] = c.uid ?? NSNull()
            o["emails"] = c.emails; o["phones"] = c.phones; o["note"] = c.note ?? NSNull()
            o["vcard"] = String(decoding: c.bytes, as: UTF8.self)
        case .setting(let s): o["value"] = s.value
        case .memory(let e): o["kind"] = e.kind; o["text"] = e.text; o["buries"] = e.buries.map(\.hex); o["at"] = e.at.seconds
        case .device(let d): o["revoked"] = d.revocation != nil
        }
        return o
    }
}

import Foundation
