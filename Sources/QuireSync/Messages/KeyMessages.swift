import QuireCore

extension SubKind {
    /// A device that knows a rotation but lacks its key (admitted
    /// concurrently with the revocation, or its sealed copy damaged) asks
    /// a trusted sibling for it: `{1: [rotation ids]}`.
    public static let keyRequest = SubKind("key_req")
    /// The answer, sealed to the asker like every frame: `[[id, key], ...]`.
    public static let keyResponse = SubKind("key_resp")

    static let keyKinds: Set<SubKind> = [.keyRequest, .keyResponse]
}

/// The rotation ids a `key_req` asks for.
struct KeyRequest: Equatable, Sendable {
    var ids: [DeviceID]

    func encoded() -> [UInt8] { CBORWriter.encode(.map([(.unsigned(1), .array(ids.map { .bytes($0.bytes) }))])) }

    static func decode(_ bytes: [UInt8]) throws(CBORError) -> KeyRequest {
        let f = try CBORReader.decode(bytes, limits: .init(maxDepth: 3, maxItemLength: 64 << 10)).asFieldMap()
        var ids: [DeviceID] = []
        for item in try f.required(1, "ids").asArray().prefix(1024) {
            guard let id = ID16(bytes: try item.asBytes()) else { throw .invalidValue("a rotation id") }
            ids.append(id)
        }
        return KeyRequest(ids: ids)
    }
}
