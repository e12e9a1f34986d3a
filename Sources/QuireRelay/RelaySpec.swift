#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which relay to use, as written on a command line or in prefs:
/// `local`, `local:/path/to/dir`, or `redis://host:port`.
public enum RelaySpec: Hashable, Sendable, CustomStringConvertible {
    case local(directory: String)
    case redis(url: String)

    public init(parsing spec: String) throws {
        if spec == "local" {
            self = .local(directory: Self.defaultLocalDirectory())
        } else if spec.hasPrefix("local:") {
            let directory = String(spec.dropFirst("local:".count))
            guard directory.hasPrefix("/") else {
                throw RelayError(.invalidAddress, "invalid relay \"\(spec)\": the local relay directory must be an absolute path")
            }
            self = .local(directory: directory)
        } else if spec.hasPrefix("redis://") {
            _ = try RedisEndpoint(url: spec)
            self = .redis(url: spec)
        } else {
            throw RelayError(.invalidAddress, "invalid relay \"\(RedisEndpoint.redacted(spec))\": use local, local:/path or redis://host:port")
        }
    }

    /// `$XDG_RUNTIME_DIR/quire-relay` (per-user, private, cleared at logout),
    /// else `/tmp/quire-relay-<uid>`.
    public static func defaultLocalDirectory() -> String {
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/") {
            return runtime + "/quire-relay"
        }
        return "/tmp/quire-relay-\(getuid())"
    }

    public var description: String {
        switch self {
        case .local(let directory): "local:\(directory)"
        case .redis(let url): RedisEndpoint.redacted(url)
        }
    }
}

/// Opens the relay a spec names; see `RelaySpec`.
public func makeRelay(from spec: String) throws -> any Relay {
    switch try RelaySpec(parsing: spec) {
    case .local(let directory): try LocalRelay(directory: directory)
    case .redis(let url): try RedisRelay(url: url)
    }
}
