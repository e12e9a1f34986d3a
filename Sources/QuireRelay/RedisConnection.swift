import CHiredis
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a Redis server listens: `redis://[:password@]host[:port][/]`.
public struct RedisEndpoint: Hashable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// Sent with AUTH after connecting; never printed.
    let password: String?
    /// The ACL user AUTH names (Redis 6); nil: the default user.
    let user: String?

    public init(url: String) throws {
        func invalid(_ why: String) -> RelayError {
            RelayError(.invalidAddress, "invalid Redis URL \"\(Self.redacted(url))\": \(why) (expected redis://host:port)")
        }
        guard url.hasPrefix("redis://") else { throw invalid("the scheme must be redis://") }
        var rest = Substring(url.dropFirst("redis://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else { throw invalid("a path or database number is not used by pub/sub") }
        var password: String?
        var user: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            // user:password (Redis 6 ACL users), :password or password alone;
            // percent-escapes are decoded, so a password may hold ':' or '@'.
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let secret = parts.count == 2 ? parts[1] : parts[0]
            password = secret.isEmpty ? nil : percentDecoded(secret)
            if parts.count == 2, !parts[0].isEmpty { user = percentDecoded(parts[0]) }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            // [IPv6]:port
            guard let close = rest.firstIndex(of: "]") else { throw invalid("unclosed '['") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw invalid("no host") }
        var port = 6379
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { throw invalid("port \"\(portText)\" is not 1 to 65535") }
            port = value
        }
        self.host = String(host)
        self.port = port
        self.password = password
        self.user = password == nil ? nil : user
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The URL with any password replaced, for error messages.
    static func redacted(_ url: String) -> String {
        guard url.hasPrefix("redis://"), let at = url.lastIndex(of: "@") else { return url }
        return "redis://***" + String(url[at...])
    }
}

/// A decoded Redis reply.
indirect enum RedisReply {
    case string([UInt8])
    case status(String)
    case error(String)
    case integer(Int64)
    case array([RedisReply])
    case null

    init(_ reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        let bytes: () -> [UInt8] = {
            guard let text = value.str else { return [] }
            return Array(UnsafeRawBufferPointer(start: text, count: value.len))
        }
        switch value.type {
        case chiredis_reply_string(): self = .string(bytes())
        case chiredis_reply_status(): self = .status(String(decoding: bytes(), as: UTF8.self))
        case chiredis_reply_error(): self = .error(String(decoding: bytes(), as: UTF8.self))
        case chiredis_reply_integer(): self = .integer(value.integer)
        case chiredis_reply_array():
            var elements: [RedisReply] = []
            for index in 0..<value.elements {
                if let element = value.element[index] { elements.append(RedisReply(element)) }
            }
            self = .array(elements)
        default: self = .null
        }
    }
}

/// One blocking hiredis connection. Not thread-safe: it is used either under
/// the publisher's lock or by exactly one subscriber thread, which is why the
/// `@unchecked Sendable` holds (it is handed over, never shared).
final class RedisConnection: @unchecked Sendable {
    let endpoint: RedisEndpoint
    private let context: UnsafeMutablePointer<redisContext>

    /// Connects, and authenticates if the endpoint has a password. A refused
    /// or timed-out connection throws `.unreachable` naming the address.
    init(endpoint: RedisEndpoint, timeoutMilliseconds: Int = 2000) throws {
        self.endpoint = endpoint
        let timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        guard let context = redisConnectWithTimeout(endpoint.host, Int32(endpoint.port), timeout) else {
            throw RelayError(.unreachable, "cannot reach Redis at \(endpoint): out of memory")
        }
        self.context = context
        if context.pointee.err != 0 {
            // Fully initialised, so `deinit` frees the context when we throw.
            let why = Self.errorText(context)
            throw RelayError(.unreachable, "cannot reach Redis at \(endpoint): \(why)")
        }
        _ = redisEnableKeepAlive(context)
        if let password = endpoint.password {
            let reply = try command([Array("AUTH".utf8)] + (endpoint.user.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)])
            if case .error(let message) = reply {
                throw RelayError(.serverError, "Redis at \(endpoint) refused the \(endpoint.user.map { "user '\($0)' and its " } ?? "")password: \(message)")
            }
        }
    }

    deinit { redisFree(context) }

    var fileDescriptor: Int32 { context.pointee.fd }

    /// Sets the read and write timeout for blocking commands.
    func setTimeout(milliseconds: Int) {
        _ = redisSetTimeout(context, timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000))
    }

    /// Sends one command, binary-safe, and waits for its reply. A Redis error
    /// reply is returned, not thrown; a broken connection throws `.unreachable`.
    func command(_ arguments: [[UInt8]]) throws -> RedisReply {
        // One contiguous buffer keeps every argument's pointer valid at once.
        var flat: [UInt8] = []
        flat.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
        var offsets: [Int] = []
        for argument in arguments {
            offsets.append(flat.count)
            flat += argument
        }
        flat.append(0)
        let lengths = arguments.map(\.count)
        let raw: UnsafeMutableRawPointer? = flat.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            var argv: [UnsafePointer<CChar>?] = offsets.map { (base + $0).assumingMemoryBound(to: CChar.self) }
            return argv.withUnsafeMutableBufferPointer { argvBuffer in
                lengths.withUnsafeBufferPointer { lengthBuffer in
                    redisCommandArgv(context, Int32(arguments.count), argvBuffer.baseAddress, lengthBuffer.baseAddress)
                }
            }
        }
        guard let raw else { throw connectionLost() }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// A reply already read from the socket, if a whole one is buffered.
    func bufferedReply() throws -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisReaderGetReply(context.pointee.reader, &raw) == REDIS_OK else {
            throw RelayError(.unreachable, "Redis at \(endpoint) sent a reply that cannot be parsed")
        }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Reads what the socket has into hiredis's buffer; call when readable.
    func readAvailable() throws {
        guard redisBufferRead(context) == REDIS_OK else { throw connectionLost() }
    }

    private func connectionLost() -> RelayError {
        RelayError(.unreachable, "lost Redis at \(endpoint): \(Self.errorText(context))")
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        let text = withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if text.isEmpty { return "error \(context.pointee.err)" }
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}

/// `%XX` escapes decoded (a malformed escape is kept as it is): how a URL
/// carries a ':' or '@' inside a user name or password.
func percentDecoded(_ text: Substring) -> String {
    var out: [UInt8] = []
    let bytes = Array(text.utf8)
    var i = 0
    while i < bytes.count {
        if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
           let value = UInt8(String(decoding: bytes[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
            out.append(value)
            i += 3
        } else {
            out.append(bytes[i])
            i += 1
        }
    }
    return String(decoding: out, as: UTF8.self)
}
