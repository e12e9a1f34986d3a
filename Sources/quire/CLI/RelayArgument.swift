import QuireRelay

extension Arguments {
    /// `--relay SPEC` as given, checked before anything runs: a spec that
    /// names no relay (`bogus://x`, `local:relative`) is a mistake in the
    /// call, exit 2; a well-formed one that does not answer fails later,
    /// exit 1, like any other relay outage.
    func relaySpec() throws(UsageError) -> String? {
        guard let spec = value("relay") else { return nil }
        do { _ = try RelaySpec(parsing: spec) } catch { throw UsageError("\(error)") }
        return spec
    }
}
