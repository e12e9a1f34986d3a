/// What went wrong in a cryptographic operation, in one line: the operation,
/// and why. Codes are a struct over a private enum so adding one never breaks
/// a caller's `switch`.
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case authenticationFailed, invalidLength, keyDerivationFailed, operationFailed
        }
        private let kind: Kind

        /// The bytes were not sealed by the expected key, or were altered.
        public static let authenticationFailed = Code(kind: .authenticationFailed)
        /// A key, nonce, salt, signature or ciphertext has the wrong size.
        public static let invalidLength = Code(kind: .invalidLength)
        /// Argon2id could not run (usually: not enough memory for the strength).
        public static let keyDerivationFailed = Code(kind: .keyDerivationFailed)
        /// libsodium reported a failure that is none of the above.
        public static let operationFailed = Code(kind: .operationFailed)

        public var description: String {
            switch kind {
            case .authenticationFailed: "authentication failed"
            case .invalidLength: "invalid length"
            case .keyDerivationFailed: "key derivation failed"
            case .operationFailed: "operation failed"
            }
        }
    }

    public let code: Code
    /// The operation, e.g. `Box.open`.
    public let operation: String
    /// Why, in words a user can act on.
    public let detail: String

    public init(_ code: Code, operation: String, detail: String) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    public var description: String { "\(operation): \(detail)" }

    static func length(_ operation: String, _ what: String, expected: Int, got: Int) -> CryptoError {
        CryptoError(.invalidLength, operation: operation, detail: "\(what) must be \(expected) bytes, got \(got)")
    }

    static func tooShort(_ operation: String, minimum: Int, got: Int) -> CryptoError {
        CryptoError(.invalidLength, operation: operation,
                    detail: "input is \(got) bytes, shorter than the \(minimum)-byte minimum (truncated?)")
    }
}
