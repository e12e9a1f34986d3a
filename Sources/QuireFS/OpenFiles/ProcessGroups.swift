import Foundation

/// Which process a request comes from. The kernel names the calling
/// thread, and one program may read a note on one thread and save it on
/// another (node's thread pool does): its thread group is the program.
struct ProcessGroups {
    private var groupOfThread: [Int32: Int32] = [:]

    /// The thread group (process id) of `thread`, from `/proc`; nil when
    /// it is gone already or unknown.
    mutating func process(of thread: Int32) -> Int32? {
        guard thread > 0 else { return nil }
        if let known = groupOfThread[thread] { return known }
        guard let group = Self.threadGroup(thread) else { return nil }
        if groupOfThread.count >= 4096 { groupOfThread.removeAll() }
        groupOfThread[thread] = group
        return group
    }

    /// Whether `process` still runs (or is a zombie not yet reaped).
    static func isRunning(_ process: Int32) -> Bool {
        kill(process, 0) == 0 || errno == EPERM
    }

    static func threadGroup(_ thread: Int32) -> Int32? {
        guard let status = try? String(contentsOfFile: "/proc/\(thread)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Tgid:") {
            return Int32(line.dropFirst(5).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
