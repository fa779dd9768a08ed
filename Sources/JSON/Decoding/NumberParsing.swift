/// Numbers read straight from a number token's bytes (already validated against the JSON
/// grammar), without making a `String` on the common paths.
enum NumberParsing {
    /// An integer of type `T`, or nil when the number is not exactly an integer `T` can hold.
    /// A fraction or exponent is fine when the value is whole (`1.0`, `1e2`).
    @inline(__always)
    static func integer<T: FixedWidthInteger>(_ text: UnsafePointer<UInt8>, length: Int, fractional: Bool) -> T? {
        guard !fractional else { return wholeNumber(text, length: length) }
        let negative = text[0] == UInt8(ascii: "-")
        var index = negative ? 1 : 0
        var magnitude: UInt64 = 0
        if length - index <= 18 {
            // Eighteen digits cannot overflow.
            while index < length {
                magnitude = magnitude &* 10 &+ UInt64(text[index] &- UInt8(ascii: "0"))
                index += 1
            }
        } else {
            while index < length {
                let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, carry) = shifted.addingReportingOverflow(UInt64(text[index] &- UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                magnitude = sum
                index += 1
            }
        }
        return make(magnitude, negative: negative)
    }

    @inline(__always)
    private static func make<T: FixedWidthInteger>(_ magnitude: UInt64, negative: Bool) -> T? {
        guard negative, magnitude != 0 else { return T(exactly: magnitude) }
        guard T.isSigned else { return nil }
        if magnitude <= UInt64(Int64.max) { return T(exactly: -Int64(magnitude)) }
        return magnitude == UInt64(Int64.max) + 1 ? T(exactly: Int64.min) : nil
    }

    /// A number with a fraction or exponent, read as an integer as Foundation reads it: when
    /// its nearest `Double` is a whole number that `T` can hold, the number's integer part
    /// (`1.0`, `1e2`, `12345678901234567.1`); otherwise nil (`1.5`).
    private static func wholeNumber<T: FixedWidthInteger>(_ text: UnsafePointer<UInt8>, length: Int) -> T? {
        guard let nearest = double(text, length: length) ?? underflowedZero(text, length: length),
            T(exactly: nearest) != nil
        else { return nil }
        let decimal = DecimalDigits(text, length: length)
        var mantissa = decimal.mantissa
        var exponent = decimal.exponent
        if exponent >= 0 {
            // Dropped digits (after the 19th) weigh up to 10^(exponent - 1): part of the
            // integer when the exponent is positive.
            guard !decimal.truncated || exponent == 0 else { return nil }
            while exponent > 0, mantissa != 0 {
                let (shifted, overflow) = mantissa.multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                mantissa = shifted
                exponent -= 1
            }
        } else {
            while exponent < 0, mantissa != 0 {
                mantissa /= 10
                exponent += 1
            }
        }
        return make(mantissa, negative: decimal.negative)
    }

    /// Zero for a number too small for a `Double` (`1e-400`), which is a whole number.
    private static func underflowedZero(_ text: UnsafePointer<UInt8>, length: Int) -> Double? {
        guard let value = Double(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)),
            value == 0
        else { return nil }
        return 0
    }

    /// Up to 19 significant digits and a power of ten.
    private struct DecimalDigits {
        var mantissa: UInt64 = 0
        var exponent = 0
        var negative = false
        /// Non-zero digits were dropped after the 19th.
        var truncated = false

        @inline(__always)
        init(_ text: UnsafePointer<UInt8>, length: Int) {
            var index = 0
            var significant = 0
            if text[0] == UInt8(ascii: "-") {
                negative = true
                index = 1
            }
            var inFraction = false
            while index < length {
                let byte = text[index]
                if byte == UInt8(ascii: ".") {
                    inFraction = true
                    index += 1
                    continue
                }
                let digit = byte &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                if significant < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(digit)
                    if mantissa != 0 { significant += 1 }
                    if inFraction { exponent -= 1 }
                } else {
                    if digit != 0 { truncated = true }
                    if !inFraction { exponent += 1 }
                }
                index += 1
            }
            if index < length {
                // An exponent: e, an optional sign, digits (clamped: the value is long out of
                // range by then).
                index += 1
                var exponentNegative = false
                if text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
                    exponentNegative = text[index] == UInt8(ascii: "-")
                    index += 1
                }
                var value = 0
                while index < length {
                    value = min(value &* 10 &+ Int(text[index] &- UInt8(ascii: "0")), 100_000)
                    index += 1
                }
                exponent += exponentNegative ? -value : value
            }
        }
    }

    private static let powersOfTen: [Double] = (0...22).map { (0..<$0).reduce(1.0) { value, _ in value * 10 } }

    /// The nearest `Double`, or nil when the number overflows to infinity or a non-zero number
    /// underflows to zero (as Foundation treats them). Exact in one multiplication or division
    /// when the digits fit in 53 bits and the power of ten is at most 22 (Clinger's fast path),
    /// else by the C library's correctly rounded conversion.
    @inline(__always)
    static func double(_ text: UnsafePointer<UInt8>, length: Int) -> Double? {
        let decimal = DecimalDigits(text, length: length)
        if !decimal.truncated {
            if decimal.mantissa <= 1 << 53, decimal.exponent >= -22, decimal.exponent <= 22 {
                var value = Double(decimal.mantissa)
                if decimal.exponent < 0 {
                    value /= powersOfTen[-decimal.exponent]
                } else {
                    value *= powersOfTen[decimal.exponent]
                }
                return decimal.negative ? -value : value
            }
            if decimal.mantissa == 0 { return decimal.negative ? -0.0 : 0.0 }
            #if arch(x86_64) && !os(Windows)
            if let value = extendedPrecision(decimal) { return value }
            #endif
        }
        guard let value = Double(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)),
            value.isFinite, value != 0 || !hasNonZeroDigit(text, length: length)
        else { return nil }
        return value
    }

    #if arch(x86_64) && !os(Windows)
    private static let extendedPowersOfTen: [Float80] = (0...27).map {
        (0..<$0).reduce(Float80(1)) { value, _ in value * 10 }
    }

    /// Up to 19 digits and a power of ten up to 27, both exact in `Float80`'s 64-bit
    /// significand: one rounded operation there, then a rounding to `Double`. That second
    /// rounding is the correct one unless the first left the value within one unit of a
    /// `Double` halfway point; those rare cases return nil (and go to the C library).
    private static func extendedPrecision(_ decimal: DecimalDigits) -> Double? {
        guard decimal.exponent >= -27, decimal.exponent <= 27 else { return nil }
        var value = Float80(decimal.mantissa)
        if decimal.exponent < 0 {
            value /= extendedPowersOfTen[-decimal.exponent]
        } else {
            value *= extendedPowersOfTen[decimal.exponent]
        }
        guard value.isNormal else { return nil }
        // The 11 significand bits a Double drops; 0x400 is exactly halfway.
        let dropped = Int(value.significandBitPattern & 0x7FF)
        guard abs(dropped - 0x400) > 1 else { return nil }
        let result = Double(value)
        guard result.isFinite, result.isNormal else { return nil }
        return decimal.negative ? -result : result
    }
    #endif

    /// The nearest `Float`, parsed directly (not through `Double`, which could round twice).
    static func float(_ text: UnsafePointer<UInt8>, length: Int) -> Float? {
        let decimal = DecimalDigits(text, length: length)
        if !decimal.truncated,
            decimal.mantissa <= 1 << 24, decimal.exponent >= -10, decimal.exponent <= 10
        {
            var value = Float(decimal.mantissa)
            let power = Float(powersOfTen[abs(decimal.exponent)])
            if decimal.exponent < 0 { value /= power } else { value *= power }
            return decimal.negative ? -value : value
        }
        guard let value = Float(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)),
            value.isFinite, value != 0 || !hasNonZeroDigit(text, length: length)
        else { return nil }
        return value
    }

    /// Whether a digit before the exponent is not zero.
    private static func hasNonZeroDigit(_ text: UnsafePointer<UInt8>, length: Int) -> Bool {
        for index in 0..<length {
            let byte = text[index]
            if byte | 0x20 == UInt8(ascii: "e") { return false }
            if byte >= UInt8(ascii: "1"), byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }
}
