// quire-simulate: runs seeded histories of a whole simulated fleet (real
// replicas, engines and merges; simulated time, network and disk) and checks
// the invariants of issue 11 after each. See tools/simulate.
import Foundation
import QuireSimulation

let usage = """
    usage: quire-simulate [--seeds N] [--from S] [--minutes M] [--jobs J] [options]
           quire-simulate --replay SEED [--steps-kept I,J,...] [--frames] [--shrink] [options]

      --seeds N               seeds to run (default 100), starting at --from (default 1)
      --minutes M             stop starting seeds after M minutes of wall time
      --jobs J                run in J processes (default 1)
      --replay SEED           run one seed and print its trace
      --steps-kept I,J,...    run only these steps of the seed's history (a shrunk history)
      --shrink                cut a failing seed's history to a short one that still fails
      --frames                include every frame in printed traces
      --devices N             devices at the start (2...6; default: the seed chooses)
      --steps N               steps per history (default: the seed chooses, 20...50)
      --restore-by-copy       restore devices by copying a backup back into the same files (as a VM snapshot
                              does), which the replica cannot tell from its own: no new incarnation
                              (issue 10, #2; without it a restore is 'quire restore', which mints one)
      --copy-back-as-new-files  the same, but as new files ('cp -a'): the replica tells and mints a new
                              incarnation at open, and no dot may be minted twice (implies --restore-by-copy)
      --three-way-edit-delete also let a delete that saw one of two concurrent edits meet the other (issue 10, #1)
      --tied-stamps           also let an edit tie the stamp of the value it replaces beside a concurrent write (issue 10, #1)
      --small-response-budgets  also shrink response budgets below a long note (a livelock the simulator found)
      --recreate-deleted-prose  also write a deleted journal day or note again
      --cloud-and-power-faults  also lose the cloud folder on a device, put conflict copies and older or dangling
                              anchors in it, and cut a device's power (unsynced writes lost)
      --lagging-cloud         the same, and let a device's view of the cloud folder fall behind as a file-sync
                              service's does: it reads the folder as it was, and what it writes lands when it
                              catches up, as a conflict copy where the folder changed the same file (implies
                              --cloud-and-power-faults)
      --counted-copies-kept   also demand that an offloaded body keep the resident copies its offload counted
                              (a counted device pins its copy)
      --everything            all of the above but --copy-back-as-new-files and --lagging-cloud
      --revocations           also lose devices and revoke them from another (the code of 'quire devices revoke'); a
                              thief may turn one on again after the fleet settled: nothing it writes may reach the roster
      --require-heads, --no-require-heads
                              demand (default) or not that every concurrent unsuperseded write survive as a head
      --phantom-write STEP    test the simulator itself: record STEP's write with a token the replica never
                              got, so the seed fails with a lost write (traces, replay, shrinking)
      --no-join, --no-faults  leave out devices joining mid-history, or network faults
      --no-offload            leave out the homebase, offloads, recalls and reads of offloaded notes
      --json                  print the report as JSON
      --quiet                 no per-seed progress on stderr
    exit status: 0 every seed passed, 1 a seed failed, 64 usage error
    """

// Swift seeds Dictionary and Set hashing per process (and per table) unless
// told otherwise; the engines iterate dictionaries, so a run is byte-for-byte
// repeatable only with deterministic hashing. Re-run this process with it on.
if ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] == nil {
    setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
    let argv = CommandLine.unsafeArgv
    execv("/proc/self/exe", argv)
    FileHandle.standardError.write(Data("quire-simulate: cannot re-run with deterministic hashing (errno \(errno))\n".utf8))
    exit(70)
}

// A crash inside a replica or an engine (a failed precondition) is a finding
// too: the handler says which seed was running and how to replay it.
nonisolated(unsafe) let crashNote = UnsafeMutablePointer<CChar>.allocate(capacity: 512)
crashNote.initialize(to: 0)

func armCrashNote(_ text: String) {
    let bytes = Array(text.utf8.prefix(510))
    for (i, b) in bytes.enumerated() { crashNote[i] = CChar(bitPattern: b) }
    crashNote[bytes.count] = 0
}

for crash in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
    signal(crash) { received in
        _ = write(2, crashNote, strlen(crashNote))
        signal(received, SIG_DFL)
        raise(received)
    }
}

struct Arguments {
    var seeds = 100
    var from: UInt64 = 1
    var minutes: Double?
    var jobs = 1
    /// Run every n-th seed (how --jobs splits a range among its workers).
    var every = 1
    var replay: UInt64?
    var stepsKept: Set<Int>?
    var shrink = false
    var frames = false
    var json = false
    var quiet = false
    var options = WorkloadOptions()
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("quire-simulate: \(message)\n\(usage)\n".utf8))
    exit(64)
}

func parse(_ args: [String]) -> Arguments {
    var a = Arguments()
    var i = 0
    func value() -> String {
        i += 1
        guard i < args.count else { fail("\(args[i - 1]) needs a value") }
        return args[i]
    }
    func number<T: FixedWidthInteger>(_ text: String, _ what: String) -> T {
        guard let n = T(text) else { fail("\(what) must be a whole number, not '\(text)'") }
        return n
    }
    while i < args.count {
        switch args[i] {
        case "-h", "--help", "help": print(usage); exit(0)
        case "--seeds": a.seeds = number(value(), "--seeds")
        case "--from": a.from = number(value(), "--from")
        case "--minutes": guard let m = Double(value()), m > 0 else { fail("--minutes must be a positive number") }; a.minutes = m
        case "--jobs": a.jobs = max(1, number(value(), "--jobs"))
        case "--every": a.every = max(1, number(value(), "--every"))
        case "--replay": a.replay = number(value(), "--replay")
        case "--steps-kept":
            let list = value()
            a.stepsKept = Set(list.split(separator: ",").map { number(String($0), "--steps-kept") as Int })
        case "--shrink": a.shrink = true
        case "--frames": a.frames = true
        case "--devices":
            let n: Int = number(value(), "--devices")
            guard (2...6).contains(n) else { fail("--devices must be 2 to 6") }
            a.options.deviceCount = n
        case "--steps": a.options.stepCount = number(value(), "--steps")
        case "--restore-by-copy": a.options.allowsRestoreByCopy = true
        case "--copy-back-as-new-files": a.options.allowsRestoreByCopy = true; a.options.copiesBackAsNewFiles = true
        case "--three-way-edit-delete": a.options.allowsThreeWayEditDelete = true
        case "--tied-stamps": a.options.allowsTiedStamps = true
        case "--small-response-budgets": a.options.allowsSmallResponseBudgets = true
        case "--recreate-deleted-prose": a.options.allowsRecreatingDeletedProse = true
        case "--cloud-and-power-faults": a.options.injectsCloudAndPowerFaults = true
        case "--lagging-cloud": a.options.injectsCloudAndPowerFaults = true; a.options.cloudViewsLag = true
        case "--revocations": a.options.allowsRevocation = true
        case "--everything": a.options = WorkloadOptions.everything.merging(deviceCount: a.options.deviceCount, stepCount: a.options.stepCount)
        case "--require-heads": a.options.requiresHeads = true
        case "--no-require-heads": a.options.requiresHeads = false
        case "--phantom-write": a.options.phantomWriteStep = number(value(), "--phantom-write")
        case "--no-join": a.options.allowsJoin = false
        case "--no-offload": a.options.offloads = false
        case "--counted-copies-kept": a.options.requiresCountedCopiesKept = true
        case "--no-faults": a.options.injectsFaults = false
        case "--json": a.json = true
        case "--quiet": a.quiet = true
        default: fail("unknown argument '\(args[i])'")
        }
        i += 1
    }
    return a
}

let arguments = parse(Array(CommandLine.arguments.dropFirst()))
let stderr = FileHandle.standardError
func note(_ line: String) { if !arguments.quiet { stderr.write(Data((line + "\n").utf8)) } }

func printJSON<T: Encodable>(_ value: T) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try! encoder.encode(value), as: UTF8.self))
}

// MARK: One seed

func crashText(_ seed: UInt64, _ options: WorkloadOptions) -> String {
    "\nquire-simulate: crashed while running seed \(seed); replay: tools/simulate --replay \(seed) "
        + options.flags.joined(separator: " ") + "\n"
}

if let seed = arguments.replay {
    let started = Date()
    armCrashNote(crashText(seed, arguments.options))
    var result = Simulation(seed: seed, options: arguments.options, keptSteps: arguments.stepsKept, keepsTrace: true,
                            framesTraced: arguments.frames).run()
    if arguments.shrink && !result.passed {
        var shrinker = Shrinker(seed: seed, options: arguments.options)
        shrinker.progress = { note("shrink: " + $0) }
        if let shorter = shrinker.shrink(from: result), let kept = shorter.keptSteps {
            result = Simulation(seed: seed, options: arguments.options, keptSteps: Set(kept), keepsTrace: true,
                                framesTraced: arguments.frames).run()
        }
    }
    var report = SoakReport(firstSeed: seed)
    report.add(result)
    report.wallSeconds = Date().timeIntervalSince(started)
    if arguments.json {
        printJSON(report)
    } else {
        print(result.trace ?? "")
        print("trace hash: \(result.traceHash) (\(result.traceLines) lines)")
        print(report.render())
        if !result.passed { print("replay: \(result.replayCommand)") }
    }
    exit(result.passed ? 0 : 1)
}

// MARK: Many seeds

let started = Date()
var workerFailures: [String] = []
let deadline = arguments.minutes.map { started.addingTimeInterval($0 * 60) }
var report = SoakReport(firstSeed: arguments.from)

if arguments.jobs > 1 {
    // Interleaved seeds, one child process each (worker k runs from + k,
    // from + k + jobs, ...), so a run cut short by --minutes still covers
    // one range from its start; reports merged.
    var children: [(Process, Pipe, String)] = []
    for job in 0..<min(arguments.jobs, arguments.seeds) {
        let first = arguments.from + UInt64(job)
        let count = (arguments.seeds - job + arguments.jobs - 1) / arguments.jobs
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var args = ["--seeds", String(count), "--from", String(first), "--every", String(arguments.jobs), "--json", "--jobs", "1"]
            + arguments.options.flags
        if let m = arguments.minutes { args += ["--minutes", String(m)] }
        if arguments.quiet { args.append("--quiet") }
        p.arguments = args
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        children.append((p, pipe, "every \(arguments.jobs)th seed from \(first)"))
    }
    for (p, pipe, range) in children {
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard let part = try? JSONDecoder().decode(SoakReport.self, from: data) else {
            // A crash in a replica or an engine is a finding: the worker
            // said which seed on stderr. The others' results still count.
            workerFailures.append("the worker for \(range) ended with status \(p.terminationStatus) (\(p.terminationReason == .uncaughtSignal ? "signal" : "exit")) without a report")
            continue
        }
        report.add(part)
    }
} else {
    for offset in 0..<arguments.seeds {
        if let deadline, Date() >= deadline { note("time is up after \(offset) seeds"); break }
        let seed = arguments.from + UInt64(offset * arguments.every)
        armCrashNote(crashText(seed, arguments.options))
        let t0 = Date()
        let result = Simulation(seed: seed, options: arguments.options).run()
        report.add(result)
        let status = result.passed ? "ok" : "FAILED " + result.failedInvariants.map(\.description).joined(separator: ", ")
        note(String(format: "seed %llu: %@ (%d devices, %d steps, %.1f device-h, %.2f s)", seed, status, result.deviceCount,
                    result.stepCount, result.deviceHours, Date().timeIntervalSince(t0)))
    }
}
report.wallSeconds = Date().timeIntervalSince(started)

if arguments.shrink, let first = report.failures.first {
    var shrinker = Shrinker(seed: first.seed, options: arguments.options)
    shrinker.progress = { note("shrink seed \(first.seed): " + $0) }
    if let shorter = shrinker.shrink() {
        note("seed \(first.seed) shrunk to \(shorter.stepCount) steps: \(shorter.replayCommand)")
        if let index = report.failures.firstIndex(where: { $0.seed == first.seed }) { report.failures[index].replay = shorter.replayCommand }
    }
}

if arguments.json { printJSON(report) } else { print(report.render()) }
for line in workerFailures { FileHandle.standardError.write(Data("quire-simulate: \(line)\n".utf8)) }
if !arguments.json, let first = report.failures.first {
    // The first failing history, step by step (frames left out; --replay
    // with --frames shows them).
    let result = Simulation(seed: first.seed, options: arguments.options, keepsTrace: true, framesTraced: false).run()
    print("\ntrace of seed \(first.seed) (operations only; \(first.replay) for faults too, with --frames for every frame):")
    print(result.operationsTrace ?? "")
}
if !workerFailures.isEmpty { exit(70) }
exit(report.failures.isEmpty ? 0 : 1)
