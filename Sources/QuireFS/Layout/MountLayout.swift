import QuireCore

/// The top of the mount: one folder per namespace and the read-only
/// `.quire` folder. The devices roster is not shown.
enum MountLayout {
    static let namespaces: [Namespace] = [.notebook, .plans, .contacts, .saga, .settings, .memory]
    static let controlFolderName = ".quire"

    static func namespace(named name: CanonicalName) -> Namespace? {
        namespaces.first { CanonicalName($0.name) == name }
    }

    /// What a namespace folder's row files are, in words (for refusals).
    static func holds(_ namespace: Namespace) -> String {
        switch namespace {
        case .notebook: return "notes and any other files"
        case .saga: return "one journal day per file, named YYYY-MM-DD.md"
        case .plans: return "todos as .ics files"
        case .contacts: return "cards as .vcf files"
        case .settings: return "settings as .txt files"
        case .memory, .devices: return "read-only rows"
        }
    }

    /// Folders whose rows cannot be written through the mount.
    static func isReadOnly(_ namespace: Namespace) -> Bool { namespace == .memory || namespace == .devices }
}
