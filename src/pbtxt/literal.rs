//! Values of literals, decoded the way protobuf's tokenizer does.

use super::ast::IntRadix;

/// Decodes one string literal, quotes included, into bytes.
/// The grammar has already checked the escapes.
pub fn unescape_into(lit: &str, out: &mut Vec<u8>) {
    let body = &lit.as_bytes()[1..lit.len() - 1];
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        i += 1;
        let e = body[i];
        i += 1;
        match e {
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 && i < body.len() && body[i].is_ascii_hexdigit() {
                    v = v * 16 + (body[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut n = 1;
                while n < 3 && i < body.len() && (b'0'..=b'7').contains(&body[i]) {
                    v = v * 8 + (body[i] - b'0') as u32;
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            b'u' | b'U' => {
                let n = if e == b'u' { 4 } else { 8 };
                let hex = std::str::from_utf8(&body[i..i + n]).unwrap_or("0");
                i += n;
                let cp = u32::from_str_radix(hex, 16).unwrap_or(0xFFFD);
                let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            other => out.push(other),
        }
    }
}

/// The magnitude of an integer literal, or `None` when it does not fit in 64 bits.
pub fn parse_uint(lit: &str, radix: IntRadix) -> Option<u64> {
    match radix {
        IntRadix::Hex => u64::from_str_radix(&lit[2..], 16).ok(),
        IntRadix::Octal => u64::from_str_radix(&lit[1..], 8).ok(),
        IntRadix::Decimal => lit.parse::<u64>().ok(),
    }
}

/// A float literal (`1.5`, `1e3`, `2f`, `.5`) as f64.
pub fn parse_float(lit: &str) -> f64 {
    let t = lit.trim_end_matches(['f', 'F']);
    t.parse::<f64>().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut out = Vec::new();
        unescape_into(r#""a\x41\101\u00e9\n\"\\\'""#, &mut out);
        assert_eq!(out, "aAA\u{e9}\n\"\\'".as_bytes());
        out.clear();
        unescape_into(r"'\377'", &mut out);
        assert_eq!(out, vec![0xff]);
    }

    #[test]
    fn integers() {
        assert_eq!(parse_uint("0x10", IntRadix::Hex), Some(16));
        assert_eq!(parse_uint("010", IntRadix::Octal), Some(8));
        assert_eq!(
            parse_uint("18446744073709551615", IntRadix::Decimal),
            Some(u64::MAX)
        );
        assert_eq!(parse_uint("18446744073709551616", IntRadix::Decimal), None);
        assert_eq!(parse_float("1.5f"), 1.5);
        assert_eq!(parse_float(".5"), 0.5);
        assert_eq!(parse_float("1e3"), 1000.0);
    }
}
