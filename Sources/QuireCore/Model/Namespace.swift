/// One kind of synced data. The raw value fixes each namespace's slot in the
/// digest: changing this list changes the digest layout and therefore
/// requires a new `StateDigest.wireVersion`.
public enum Namespace: UInt8, CaseIterable, Comparable, Sendable, CustomStringConvertible {
    case notebook = 0
    case plans = 1
    case contacts = 2
    case saga = 3
    case settings = 4
    case memory = 5
    /// The account's device roster (certificates and revocations).
    case devices = 6

    public var name: String {
        switch self {
        case .notebook: return "notebook"
        case .plans: return "plans"
        case .contacts: return "contacts"
        case .saga: return "saga"
        case .settings: return "settings"
        case .memory: return "memory"
        case .devices: return "devices"
        }
    }

    public init?(name: String) {
        guard let ns = Namespace.allCases.first(where: { $0.name == name }) else { return nil }
        self = ns
    }

    /// Domain separator for this namespace's leaves: a leaf from one
    /// namespace can never equal a leaf from another.
    public var leafSeparator: String { "quire.state.\(name)" }
    /// The separator of one version's field digest inside a leaf.
    public var headSeparator: String { "quire.head.\(name)" }

    /// Namespaces whose deletions are per-row tombstones collected only by
    /// the barrier. `memory` is append-only (a deletion is itself an event).
    public var hasTombstones: Bool { self != .memory }

    public var description: String { name }

    public static func < (lhs: Namespace, rhs: Namespace) -> Bool { lhs.rawValue < rhs.rawValue }
}
