import QuireCore
import QuireStore

/// One pull of one namespace from one sibling: a chain of requests, one in
/// flight at a time, each descending into the ranges the last response said
/// differ. It ends when a response needs no follow-up, or after an idle
/// timeout (a responder with nothing to give sends nothing at all).
struct PullSession {
    let namespace: Namespace
    let sibling: DeviceID
    /// Also the salt of every range hash in this pull.
    let id: [UInt8]
    var step: UInt64 = 0
    var lastActivityMs: UInt64
    var requestsSent = 0
    var receivedRows = false
    /// The last request, kept to send once more if it meets silence.
    var lastItems: [RequestItem] = []
    var answeredLast = false
    var retried = false
    /// Pull again when this one ends: a newer digest arrived, or the
    /// responder truncated its rows.
    var pullAgain = false

    init(namespace: Namespace, sibling: DeviceID, id: [UInt8], nowMs: UInt64) {
        self.namespace = namespace
        self.sibling = sibling
        self.id = id
        self.lastActivityMs = nowMs
    }
}
