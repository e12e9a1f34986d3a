import QuireCore

/// What a file name the mount shows stands for, for the command line
/// (`quire get notebook 'Ideas%~1a2b3c4d.md'`): the row's title, and the
/// hex key prefix of its `%~` marker when rows share the title.
public enum ShownName {
    /// Nil when `name` is no row's name in `namespace` (editor junk, a
    /// journal name that is not a date).
    public static func row(_ name: String, in namespace: Namespace) -> (title: String, keyPrefix: String?)? {
        guard case .row(let title, _) = FileNames.meaning(of: name, in: namespace) else { return nil }
        return (title, FileNames.markerKeyPrefix(of: name, in: namespace))
    }
}
