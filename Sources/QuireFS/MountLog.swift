import Foundation

/// Problems worth a person's attention: written to the device's log file
/// (one timestamped line each) and kept, most recent last, for
/// `.quire/status`. Its own lock, so any code may call it.
public final class MountLog: @unchecked Sendable {
    public let path: String?
    private let lock = NSLock()
    private var recent: [(line: String, kind: String?, count: Int)] = []
    private let keep = 50

    public init(path: String?) { self.path = path }

    /// A problem: logged and shown in `.quire/status`. Problems of one
    /// `kind` (a program's link calls refused one per file: git's) show
    /// as the latest with a count, so a burst cannot push the others out.
    public func problem(_ text: String, kind: String? = nil) {
        let line = Self.stamp() + " " + text
        lock.lock()
        var count = 1
        if let kind, let earlier = recent.firstIndex(where: { $0.kind == kind }) {
            count += recent.remove(at: earlier).count
        }
        recent.append((line, kind, count))
        if recent.count > keep { recent.removeFirst(recent.count - keep) }
        lock.unlock()
        append(line)
    }

    /// Routine information: only in the log file.
    public func info(_ text: String) { append(Self.stamp() + " " + text) }

    public var recentProblems: [String] {
        lock.lock()
        defer { lock.unlock() }
        return recent.map { $0.count > 1 ? $0.line + " (and \($0.count - 1) more like it before)" : $0.line }
    }

    private func append(_ line: String) {
        guard let path else { return }
        lock.lock()
        defer { lock.unlock() }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }

    /// UTC, whole seconds (a formatter per line would cost more than the write).
    private static func stamp() -> String {
        TextDates.formatDateTime(Int64(Date().timeIntervalSince1970))
    }
}
