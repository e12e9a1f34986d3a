import QuireCore

/// What this device last showed of each prose row (the bytes an open read,
/// or the last write): the baseline a save-by-rename's paragraph deletions
/// are computed against. Bounded: a mount that `cat`s 10,000 notes must not
/// keep 10,000 bodies. An evicted row falls back to its stored text as the
/// baseline, which errs towards keeping paragraphs, never losing them.
struct ShownBaselines {
    static let capacity = 256
    private var bytes: [RowRef: [UInt8]] = [:]
    private var order: [RowRef] = []

    subscript(ref: RowRef) -> [UInt8]? {
        get { bytes[ref] }
        set {
            guard ref.namespace == .notebook || ref.namespace == .saga else { return }
            guard let newValue else { bytes[ref] = nil; return }
            if bytes.updateValue(newValue, forKey: ref) == nil { order.append(ref) }
            if order.count > ShownBaselines.capacity * 2 { order = order.filter { bytes[$0] != nil } }
            while bytes.count > ShownBaselines.capacity, !order.isEmpty {
                bytes[order.removeFirst()] = nil
            }
        }
    }
}
