extension Note {
    /// The stored fields of a note without its body (it has its own column):
    /// byte-identical to `RowContent.note(self).fields(includeBody: false)`,
    /// streamed without building a tree, because every note write pays it.
    public func storedFields() -> [UInt8] {
        let length = body?.count ?? self.length
        let count = 6 + (length != nil ? 1 : 0) + (editedBy != nil ? 1 : 0) + (kind != .note ? 1 : 0) + (folder != nil ? 1 : 0)
            + (modifiedAt != nil ? 1 : 0) + (placedAt != nil ? 1 : 0)
        var w = CBORWriter(capacity: 96 + title.utf8.count)
        w.writeMapHeader(count)
        w.writeUInt(1); w.writeText(title)
        w.writeUInt(2); w.writeArrayHeader(tags.count); for t in tags { w.writeText(t) }
        w.writeUInt(4); w.writeBytes(contentHash)
        w.writeUInt(5); w.writeInt(createdAt.seconds)
        w.writeUInt(6); w.writeInt(updatedAt.seconds)
        w.writeUInt(7); w.writeArrayHeader(deletedParagraphs.count); for h in deletedParagraphs { w.writeBytes(h) }
        if let length { w.writeUInt(8); w.writeUInt(UInt64(length)) }
        if kind != .note { w.writeUInt(11); w.writeUInt(UInt64(kind.rawValue)) }
        if let folder { w.writeUInt(12); w.writeBytes(folder.bytes) }
        if let modifiedAt { w.writeUInt(13); w.writeInt(modifiedAt) }
        if let placedAt { w.writeUInt(14); w.writeInt(placedAt.seconds) }
        if let editedBy { w.writeUInt(15); w.writeBytes(editedBy.bytes) }
        return w.bytes
    }
}

/// Storage and wire encoding of row content: CBOR maps with small integer
/// keys. Readers skip keys they do not know and treat missing optional keys
/// as absent, so an older sibling's rows still parse after fields are added.
/// (Leaves use a separate, fixed-order encoding: see LeafEncoding.swift.)
extension RowContent {
    public func fields(includeBody: Bool = true) -> CBOR {
        var m: [(CBOR, CBOR)] = []
        func put(_ k: UInt64, _ v: CBOR) { m.append((.unsigned(k), v)) }
        func putEditor(_ d: DeviceID?) { if let d { put(15, .bytes(d.bytes)) } }
        switch self {
        case .note(let n):
            put(1, .text(n.title))
            put(2, .array(n.tags.map { .text($0) }))
            if includeBody, let body = n.body { put(3, .bytes(body)) }
            put(4, .bytes(n.contentHash))
            put(5, .int(n.createdAt.seconds))
            put(6, .int(n.updatedAt.seconds))
            put(7, .array(n.deletedParagraphs.map { .bytes($0) }))
            if let length = n.body?.count ?? n.length { put(8, .unsigned(UInt64(length))) }
            // 11 (kind), 12 (folder), 13 (modifiedAt), 14 (placedAt): the
            // folder tree; absent on plain notes at the top, as before it existed.
            if n.kind != .note { put(11, .unsigned(UInt64(n.kind.rawValue))) }
            if let folder = n.folder { put(12, .bytes(folder.bytes)) }
            if let modifiedAt = n.modifiedAt { put(13, .int(modifiedAt)) }
            if let placedAt = n.placedAt { put(14, .int(placedAt.seconds)) }
            putEditor(n.editedBy)
        case .plan(let p):
            // 2 (notes), 3 (due), 4 (done): the fields of plans before they
            // were iCalendar files; read by `decode` for an upgrade.
            put(1, .text(p.title))
            put(5, .int(p.createdAt.seconds))
            put(6, .int(p.updatedAt.seconds))
            put(9, p.calendar.unitsCBOR)
            put(10, p.calendar.removedCBOR)
            putEditor(p.editedBy)
        case .contact(let c):
            // 2 (emails), 3 (phones), 4 (note): the fields of contacts
            // before they were whole vCards; read by `decode` for an upgrade.
            put(1, .text(c.title))
            put(6, .int(c.updatedAt.seconds))
            put(9, c.card.unitsCBOR)
            put(10, c.card.removedCBOR)
            putEditor(c.editedBy)
        case .saga(let s):
            put(1, .text(s.date))
            put(2, .bytes(s.text))
            put(6, .int(s.updatedAt.seconds))
            put(7, .array(s.deletedParagraphs.map { .bytes($0) }))
            putEditor(s.editedBy)
        case .setting(let s):
            put(1, .text(s.name))
            put(2, .text(s.value))
            put(6, .int(s.updatedAt.seconds))
            putEditor(s.editedBy)
        case .memory(let e):
            put(1, .int(e.at.seconds))
            put(2, .text(e.kind))
            put(3, .text(e.text))
            put(4, .array(e.buries.map { .bytes($0.bytes) }))
        case .device(let d):
            put(1, .text(d.name))
            put(2, .bytes(d.certificate))
            if let r = d.revocation { put(3, .bytes(r)) }
        }
        return .map(m)
    }

    /// Decodes content of `namespace`. For notes stored without their body
    /// (offloaded, or kept in a separate column), pass the body separately.
    public static func decode(_ namespace: Namespace, fields cbor: CBOR, body externalBody: [UInt8]? = nil) throws(CBORError) -> RowContent {
        let f = try cbor.asFieldMap()
        func ts(_ k: UInt64, _ name: String) throws(CBORError) -> Timestamp { Timestamp(seconds: try f.required(k, name).asInt()) }
        func texts(_ k: UInt64, _ name: String) throws(CBORError) -> [String] {
            var out: [String] = []
            for item in try f.required(k, name).asArray() { out.append(try item.asText()) }
            return out
        }
        func hashes(_ k: UInt64) throws(CBORError) -> [[UInt8]] {
            guard let v = f.optional(k) else { return [] }
            var out: [[UInt8]] = []
            for item in try v.asArray() { out.append(try item.asBytes()) }
            return out
        }
        func editor() throws(CBORError) -> DeviceID? {
            guard let v = f.optional(15) else { return nil }
            guard let id = ID16(bytes: try v.asBytes()) else { throw .invalidValue("editor device id") }
            return id
        }
        switch namespace {
        case .notebook:
            let body = try f.optional(3)?.asBytes() ?? externalBody
            let hash = try f.required(4, "contentHash").asBytes()
            guard hash.count == 32 else { throw .invalidValue("contentHash must be 32 bytes") }
            if let body, Note.bodyDigest(body) != hash { throw .invalidValue("note body does not match its contentHash") }
            var note = Note(title: try f.required(1, "title").asText(), tags: try texts(2, "tags"), body: body, checkedHash: hash,
                            createdAt: try ts(5, "createdAt"), updatedAt: try ts(6, "updatedAt"),
                            deletedParagraphs: try hashes(7), editedBy: try editor())
            if body == nil, let length = try f.optional(8)?.asUInt() { note.length = Int(clamping: length) }
            if let kind = try f.optional(11)?.asUInt() {
                guard let known = UInt8(exactly: kind).flatMap(NoteKind.init(rawValue:)), known != .note else {
                    throw .invalidValue("notebook row kind \(kind)")
                }
                note.kind = known
            }
            if let folder = f.optional(12) {
                guard let key = ID16(bytes: try folder.asBytes()) else { throw .invalidValue("folder key") }
                note.folder = key
            }
            note.modifiedAt = try f.optional(13)?.asInt()
            note.placedAt = try f.optional(14).map { v throws(CBORError) in Timestamp(seconds: try v.asInt()) }
            if note.kind == .folder && !(body ?? []).isEmpty { throw .invalidValue("a folder with a body") }
            return .note(note)
        case .plans:
            let title = try f.required(1, "title").asText()
            guard let units = f.optional(9) else {
                return .plan(Plan(title: title, notes: try f.required(2, "notes").asText(),
                                  due: try f.optional(3).map { v throws(CBORError) in Timestamp(seconds: try v.asInt()) },
                                  isDone: try f.required(4, "done").asBool(),
                                  createdAt: try ts(5, "createdAt"), updatedAt: try ts(6, "updatedAt"), editedBy: try editor()))
            }
            return .plan(Plan(title: title, calendar: try CardText(unitsCBOR: units, removedCBOR: f.optional(10)),
                              createdAt: try ts(5, "createdAt"), updatedAt: try ts(6, "updatedAt"), editedBy: try editor()))
        case .contacts:
            let title = try f.required(1, "name").asText()
            guard let units = f.optional(9) else {
                return .contact(Contact.legacy(name: title, emails: try texts(2, "emails"), phones: try texts(3, "phones"),
                                               note: try f.optional(4)?.asText(), updatedAt: try ts(6, "updatedAt"),
                                               editedBy: try editor()))
            }
            return .contact(Contact(title: title, card: try CardText(unitsCBOR: units, removedCBOR: f.optional(10)),
                                    updatedAt: try ts(6, "updatedAt"), editedBy: try editor()))
        case .saga:
            let date = try f.required(1, "date").asText()
            guard SagaEntry.isValidDate(date) else { throw .invalidValue("journal date '\(date)'") }
            return .saga(SagaEntry(date: date, text: try f.required(2, "text").asBytes(), updatedAt: try ts(6, "updatedAt"),
                                   deletedParagraphs: try hashes(7), editedBy: try editor()))
        case .settings:
            return .setting(Setting(name: try f.required(1, "name").asText(), value: try f.required(2, "value").asText(),
                                    updatedAt: try ts(6, "updatedAt"), editedBy: try editor()))
        case .memory:
            var buried: [RowKey] = []
            for item in try f.optional(4)?.asArray() ?? [] {
                guard let k = ID16(bytes: try item.asBytes()) else { throw .invalidValue("buried event id") }
                buried.append(k)
            }
            return .memory(MemoryEvent(at: try ts(1, "at"), kind: try f.required(2, "kind").asText(),
                                       text: try f.required(3, "text").asText(), buries: buried))
        case .devices:
            return .device(DeviceRecord(name: try f.required(1, "name").asText(),
                                        certificate: try f.required(2, "certificate").asBytes(),
                                        revocation: try f.optional(3)?.asBytes()))
        }
    }
}

/// Heads on the wire and in the store: an array of [dot, fields], fields in
/// the row codec above. A row's context travels beside them.
extension Row {
    /// More heads than this is not a row any honest device makes (each
    /// needs a distinct concurrent writer); refused as hostile.
    public static let maxHeads = 64

    /// The heads as CBOR bytes. With `firstBodyApart`, the first head's
    /// note body is left out (the store keeps it in a column of its own, so
    /// offloading can clear it); every other body travels inline.
    public func encodedHeads(firstBodyApart: Bool) -> [UInt8] {
        var w = CBORWriter(capacity: 96 * heads.count)
        w.writeArrayHeader(heads.count)
        for (i, h) in heads.enumerated() {
            w.writeArrayHeader(2)
            h.dot.write(to: &w)
            if case .note(let n) = h.content, i == 0 && firstBodyApart {
                w.writeEncoded(n.storedFields())
            } else {
                w.write(h.content.fields(includeBody: true))
            }
        }
        return w.bytes
    }

    public var headsCBOR: CBOR {
        .array(heads.map { .array([$0.dot.cbor, $0.content.fields(includeBody: true)]) })
    }

    /// Decodes a row from its parts. Refuses a head whose dot the context
    /// does not cover, more than `maxHeads` heads, or an empty context.
    /// `firstBody`: the first head's note body kept apart (nil: offloaded);
    /// `firstBodyHash`: the hash the caller already checked that body
    /// against (the store does, to tell a damaged body from a good one);
    /// the head must name the same hash.
    public static func decode(_ namespace: Namespace, key: RowKey, context: VersionVector, heads cbor: CBOR,
                              firstBody: [UInt8]?? = .none, firstBodyHash: [UInt8]? = nil) throws(CBORError) -> Row {
        let items = try cbor.asArray()
        guard items.count <= maxHeads else { throw .invalidValue("\(items.count) heads (at most \(maxHeads))") }
        guard !context.isEmpty else { throw .invalidValue("a row with an empty causal context") }
        var heads: [RowHead] = []
        for (i, item) in items.enumerated() {
            let pair = try item.asArray()
            guard pair.count == 2 else { throw .invalidValue("head") }
            let dot = try Dot(cbor: pair[0])
            guard context.covers(dot) else { throw .invalidValue("head \(dot) outside the row's context") }
            var content: RowContent
            if i == 0, case .some(let body) = firstBody, namespace == .notebook {
                content = try RowContent.decode(namespace, fields: pair[1], body: nil)
                if case .note(var n) = content {
                    if let body {
                        let matches = firstBodyHash.map { $0 == n.contentHash } ?? (Note.bodyDigest(body) == n.contentHash)
                        guard matches else {
                            throw .invalidValue("note body does not match its contentHash")
                        }
                        n.restoreCheckedBody(body)
                        n.length = nil
                    } else {
                        n.body = nil
                    }
                    content = .note(n)
                }
            } else {
                content = try RowContent.decode(namespace, fields: pair[1])
            }
            heads.append(RowHead(dot: dot, content: content))
        }
        return Row(namespace: namespace, key: key, context: context, heads: RowMerge.deduplicated(heads))
    }
}
