/// The date and date-time forms of iCalendar (RFC 5545 §3.3.4, §3.3.5) and
/// vCard, in UTC, without Foundation (QuireCore is pure). A floating time
/// or one with a TZID is read as if it were UTC: listing a due date a few
/// hours off is harmless, and the file keeps what was written.
public enum CardDates {
    /// `20240501T120000Z`.
    public static func formatDateTime(_ seconds: Int64) -> String {
        let (y, m, d, time) = civil(seconds)
        return pad(y, 4) + pad(m, 2) + pad(d, 2) + "T" + pad(time / 3600, 2) + pad(time / 60 % 60, 2) + pad(time % 60, 2) + "Z"
    }

    /// `20240501`.
    public static func formatDate(_ seconds: Int64) -> String {
        let (y, m, d, _) = civil(seconds)
        return pad(y, 4) + pad(m, 2) + pad(d, 2)
    }

    /// A `DATE` or `DATE-TIME` value (also with dashes and colons, as some
    /// writers do); nil when it is neither.
    public static func parse(_ value: String) -> Int64? {
        let digits = Array(value.utf8.filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: ":") })
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= digits.count else { return nil }
            var n: Int64 = 0
            for c in digits[range] {
                guard c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") else { return nil }
                n = n * 10 + Int64(c - UInt8(ascii: "0"))
            }
            return n
        }
        guard digits.count >= 8, let y = number(0..<4), let m = number(4..<6), let d = number(6..<8),
              (1...12).contains(m), (1...31).contains(d) else { return nil }
        var seconds = daysFromCivil(y, m, d) * 86_400
        if digits.count == 8 { return seconds }
        guard digits[8] == UInt8(ascii: "T"), let h = number(9..<11), let mi = number(11..<13), let s = number(13..<15),
              h < 24, mi < 60, s < 61 else { return nil }
        let rest = digits.count - 15
        guard rest == 0 || (rest == 1 && digits[15] == UInt8(ascii: "Z")) else { return nil }
        seconds += h * 3600 + mi * 60 + s
        return seconds
    }

    /// Whether a time falls on midnight UTC (a due date without a time).
    public static func isMidnight(_ seconds: Int64) -> Bool { ((seconds % 86_400) + 86_400) % 86_400 == 0 }

    // Howard Hinnant's days_from_civil and civil_from_days.
    static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(_ seconds: Int64) -> (Int64, Int64, Int64, Int64) {
        var days = seconds / 86_400
        var time = seconds % 86_400
        if time < 0 { time += 86_400; days -= 1 }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d, time)
    }

    private static func pad(_ n: Int64, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
