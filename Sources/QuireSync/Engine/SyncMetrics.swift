import QuireCore

/// Byte and message counts, for the benchmark and for tests.
public struct SyncMetrics: Equatable, Sendable {
    public var framesIn = 0
    public var framesOut = 0
    public var bytesIn = 0
    public var bytesOut = 0
    /// Encoded size of the rows this engine sent / received in responses.
    public var rowBytesOut = 0
    public var rowBytesIn = 0
    public var digestsSent = 0
    public var requestsSent = 0
    public var responsesSent = 0
    /// The most requests one pull needed (its sequential round trips).
    public var maxPullRequests = 0
    public var rounds = 0
    public var rowsApplied = 0
    /// Rows sent in a response of their own (larger than the response budget).
    public var rowsSentAlone = 0
    /// Rows sent ahead of their response, in rows-only batches (an answer
    /// larger than one response, streamed while the puller merges).
    public var rowsStreamed = 0
    public var sendErrors = 0
    /// Notices sent to revoked devices whose frames were refused (`revoked_notice`).
    public var revocationNoticesSent = 0
    /// From the first send that failed after one that went through, until
    /// the next that goes through (nil: the relay takes frames).
    public var relayUnreachableSince: Timestamp? = nil
    public var dropped: [FrameDrop: Int] = [:]

    public init() {}
}
