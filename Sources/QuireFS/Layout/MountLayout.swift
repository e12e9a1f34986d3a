import QuireCore

/// The top of the mount: one folder per namespace and the read-only
/// `.quire` folder. The devices roster is not shown.
enum MountLayout {
    static let namespaces: [Namespace] = [.notebook, .plans, .contacts, .saga, .settings, .memory]
    static let controlFolderName = ".quire"

    static func namespace(named name: CanonicalName) -> Namespace? {
        namespaces.first { CanonicalName($0.name) == name }
    }

    /// Folders whose rows cannot be written through the mount.
    static func isReadOnly(_ namespace: Namespace) -> Bool { namespace == .memory || namespace == .devices }
}
