import Glibc

/// Whether the disk that holds the replica has room to store a text of a
/// given size. Writes are kept in memory and stored at close, so without
/// this a full disk is heard of only from close(), which a shell's `>>`
/// never checks: its text would be lost without a word. A write that could
/// not be stored is refused at once instead (ENOSPC). A generous answer is
/// trusted for half a second; a refusal always asks the disk again, so the
/// first write after room is made goes through.
struct DiskRoom {
    /// Beside the text (stored once, and again in the WAL until a
    /// checkpoint), a commit writes index pages, the previous version's copy
    /// kept in the trash, and the log.
    static let margin: Int64 = 512 << 10
    static let trustedForNanoseconds: UInt64 = 500_000_000

    let path: String
    private var lastFree: Int64? = nil
    private var askedAt: UInt64 = 0

    init(path: String) { self.path = path }

    /// `bytes`: the size of the text once the write is in.
    mutating func hasRoom(forText bytes: Int) -> Bool {
        let needed = 2 * Int64(bytes) + Self.margin
        let now = Self.monotonicNanoseconds()
        if let lastFree, lastFree >= needed, now &- askedAt < Self.trustedForNanoseconds { return true }
        guard let free = Self.freeBytes(path) else { return true }   // unknown: the commit will tell
        lastFree = free
        askedAt = now
        return free >= needed
    }

    /// Bytes this process may still write there (root may use the reserve).
    static func freeBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let blocks = geteuid() == 0 ? info.f_bfree : info.f_bavail
        return Int64(clamping: UInt64(blocks).multipliedReportingOverflow(by: UInt64(info.f_frsize)).partialValue)
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
