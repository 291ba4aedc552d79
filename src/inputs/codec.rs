//! The encodings of tensor elements, one per data type, for `run` and
//! `perf` alike: base64 (perf_analyzer's `{"b64": ...}` values and BYTES
//! outputs), the 16-bit float formats (FP16, BF16) kept as raw bit patterns
//! in [`crate::tensor::TensorData`] (rounded by the `half` crate), and raw
//! little-endian tensor bytes (perf_analyzer's base64 contents,
//! initial-state files, binary request bodies).

use crate::tensor::{DataType, TensorData};
use half::{bf16, f16};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding.
pub fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (the `+/` alphabet; `-_` of the URL-safe one
/// is accepted too). Padding is optional, ASCII whitespace is skipped.
pub fn b64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut padding = 0usize;
    for (i, c) in text.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            c if c.is_ascii_whitespace() => continue,
            _ => {
                return Err(format!(
                    "invalid base64: unexpected character {:?} at offset {i}",
                    c as char
                ))
            }
        };
        if padding > 0 {
            return Err(format!(
                "invalid base64: data after '=' padding at offset {i}"
            ));
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A final group of 1 character cannot encode a byte.
    if bits == 6 {
        return Err("invalid base64: truncated input".into());
    }
    if padding > 2 {
        return Err("invalid base64: too much '=' padding".into());
    }
    Ok(out)
}

/// The FP16 bit pattern of `x`, rounded once to the nearest value (ties
/// to even), as numpy's `astype(np.float16)`; `None` when a finite `x` is
/// beyond the largest finite FP16 value (65504) and would become an
/// infinity. Infinities and NaN stay what they are.
pub fn f64_to_f16(x: f64) -> Option<u16> {
    let h = f16::from_f32(f64_to_f32_odd(x));
    (!x.is_finite() || h.is_finite()).then_some(h.to_bits())
}

/// The BF16 bit pattern of `x`, rounded once to the nearest value (ties to
/// even); `None` when a finite `x` would become an infinity.
pub fn f64_to_bf16(x: f64) -> Option<u16> {
    let b = bf16::from_f32(f64_to_f32_odd(x));
    (!x.is_finite() || b.is_finite()).then_some(b.to_bits())
}

/// `x` rounded to an `f32` "to odd": exact values stay, inexact ones take
/// the neighbour toward zero with its last mantissa bit set. `half`'s own
/// `from_f64` rounds twice (through `f32` where the CPU has F16C, else
/// after dropping the low 32 mantissa bits), so 1.0004882812509095 would
/// become 1.0; an `f32` rounded to odd keeps what decides the rounding to
/// the 16-bit types (it has at least two more bits), so rounding it to
/// nearest-even gives what rounding `x` once does.
fn f64_to_f32_odd(x: f64) -> f32 {
    let f = x as f32;
    if !x.is_finite() || f64::from(f) == x {
        return f;
    }
    let mut bits = f.to_bits();
    if f64::from(f).abs() > x.abs() {
        // Rounded away from zero (possibly to infinity): step back.
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// Rounds an `f32` to the nearest FP16 value (ties to even); too large
/// magnitudes become infinities, NaN stays NaN.
pub fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// The `f32` value of an FP16 bit pattern (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    f16::from_bits(h).to_f32()
}

/// Rounds an `f32` to the nearest BF16 value (ties to even).
pub fn f32_to_bf16(x: f32) -> u16 {
    bf16::from_f32(x).to_bits()
}

/// The `f32` value of a BF16 bit pattern (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    bf16::from_bits(b).to_f32()
}

/// Decodes raw tensor bytes: little-endian elements for fixed-size types
/// (BOOL: one byte each, non-zero is true), and for BYTES a sequence of
/// elements each prefixed by its length as a 4-byte little-endian integer
/// (Triton's serialization). The length must be a whole number of
/// elements.
pub fn decode_le(dtype: DataType, bytes: &[u8]) -> Result<TensorData, String> {
    fn fixed<const N: usize, T>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks_exact yields N bytes")))
            .collect()
    }
    if let Some(size) = dtype.element_size() {
        if !bytes.len().is_multiple_of(size) {
            return Err(format!(
                "{} bytes are not a whole number of {dtype} elements ({size} bytes each)",
                bytes.len()
            ));
        }
    }
    Ok(match dtype {
        DataType::Bool => TensorData::Bool(bytes.iter().map(|&b| b != 0).collect()),
        DataType::U8 => TensorData::U8(bytes.to_vec()),
        DataType::I8 => TensorData::I8(bytes.iter().map(|&b| b as i8).collect()),
        DataType::U16 => TensorData::U16(fixed(bytes, u16::from_le_bytes)),
        DataType::I16 => TensorData::I16(fixed(bytes, i16::from_le_bytes)),
        DataType::F16 => TensorData::F16(fixed(bytes, u16::from_le_bytes)),
        DataType::Bf16 => TensorData::Bf16(fixed(bytes, u16::from_le_bytes)),
        DataType::U32 => TensorData::U32(fixed(bytes, u32::from_le_bytes)),
        DataType::I32 => TensorData::I32(fixed(bytes, i32::from_le_bytes)),
        DataType::F32 => TensorData::F32(fixed(bytes, f32::from_le_bytes)),
        DataType::U64 => TensorData::U64(fixed(bytes, u64::from_le_bytes)),
        DataType::I64 => TensorData::I64(fixed(bytes, i64::from_le_bytes)),
        DataType::F64 => TensorData::F64(fixed(bytes, f64::from_le_bytes)),
        DataType::Bytes => {
            let mut out = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let Some((len, tail)) = rest.split_first_chunk::<4>() else {
                    return Err(format!(
                        "BYTES element {} is cut off inside its 4-byte length prefix",
                        out.len()
                    ));
                };
                let len = u32::from_le_bytes(*len) as usize;
                if tail.len() < len {
                    return Err(format!(
                        "BYTES element {} announces {len} bytes but only {} remain",
                        out.len(),
                        tail.len()
                    ));
                }
                out.push(tail[..len].to_vec());
                rest = &tail[len..];
            }
            TensorData::Bytes(out)
        }
    })
}

/// Raw little-endian bytes of tensor elements, laid out as [`decode_le`]
/// reads them (BOOL: one byte each; BYTES: each element after its 4-byte
/// little-endian length).
pub fn encode_le(data: &TensorData) -> Vec<u8> {
    fn fixed<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|x| f(*x)).collect()
    }
    match data {
        TensorData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
        TensorData::U8(v) => v.clone(),
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::U16(v) | TensorData::F16(v) | TensorData::Bf16(v) => fixed(v, u16::to_le_bytes),
        TensorData::I16(v) => fixed(v, i16::to_le_bytes),
        TensorData::U32(v) => fixed(v, u32::to_le_bytes),
        TensorData::I32(v) => fixed(v, i32::to_le_bytes),
        TensorData::F32(v) => fixed(v, f32::to_le_bytes),
        TensorData::U64(v) => fixed(v, u64::to_le_bytes),
        TensorData::I64(v) => fixed(v, i64::to_le_bytes),
        TensorData::F64(v) => fixed(v, f64::to_le_bytes),
        TensorData::Bytes(v) => {
            let mut out = Vec::with_capacity(v.iter().map(|b| b.len() + 4).sum());
            for b in v {
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
            }
            out
        }
    }
}

/// Why raw bytes do not hold the elements asked of [`decode_first`].
#[derive(Debug, Clone, PartialEq)]
pub enum Shortfall {
    /// Fewer bytes than `count` elements of a fixed-size type take.
    Bytes { need: usize, have: usize },
    /// Fewer strings than `count` (BYTES).
    Strings { have: usize },
    /// Bytes that are no sequence of length-prefixed strings (BYTES).
    Malformed(String),
}

/// The first `count` elements of `dtype` in raw bytes laid out as for
/// [`decode_le`] (as Triton reads warm-up and initial-state data files):
/// fixed-size types take their first `count` × size bytes, BYTES the
/// first `count` strings; the rest is ignored.
pub fn decode_first(dtype: DataType, count: usize, bytes: &[u8]) -> Result<TensorData, Shortfall> {
    match dtype.element_size() {
        Some(size) => {
            let need = count * size;
            if bytes.len() < need {
                return Err(Shortfall::Bytes {
                    need,
                    have: bytes.len(),
                });
            }
            decode_le(dtype, &bytes[..need]).map_err(Shortfall::Malformed)
        }
        None => {
            let TensorData::Bytes(mut items) =
                decode_le(dtype, bytes).map_err(Shortfall::Malformed)?
            else {
                unreachable!("BYTES decode yields BYTES data")
            };
            if items.len() < count {
                return Err(Shortfall::Strings { have: items.len() });
            }
            items.truncate(count);
            Ok(TensorData::Bytes(items))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_first_takes_what_is_asked_and_says_what_is_missing() {
        let floats: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        assert_eq!(
            decode_first(DataType::F32, 2, &floats),
            Ok(TensorData::F32(vec![1.0, 2.0]))
        );
        assert_eq!(
            decode_first(DataType::F32, 4, &floats),
            Err(Shortfall::Bytes { need: 16, have: 12 })
        );
        let strings = [1, 0, 0, 0, b'a', 0, 0, 0, 0, 2, 0, 0, 0, b'b', b'c'];
        assert_eq!(
            decode_first(DataType::Bytes, 2, &strings),
            Ok(TensorData::Bytes(vec![b"a".to_vec(), vec![]]))
        );
        assert_eq!(
            decode_first(DataType::Bytes, 4, &strings),
            Err(Shortfall::Strings { have: 3 })
        );
        assert!(matches!(
            decode_first(DataType::Bytes, 1, &[9, 0, 0, 0, b'x']),
            Err(Shortfall::Malformed(_))
        ));
    }

    #[test]
    fn base64_known_vectors() {
        // RFC 4648 §10.
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, enc) in cases {
            assert_eq!(b64_encode(plain.as_bytes()), enc);
            assert_eq!(b64_decode(enc).unwrap(), plain.as_bytes());
            assert_eq!(
                b64_decode(enc.trim_end_matches('=')).unwrap(),
                plain.as_bytes()
            );
        }
        assert_eq!(b64_decode("Zm9v\nYmFy").unwrap(), b"foobar");
        assert!(b64_decode("Zm9v!").is_err());
        assert!(b64_decode("Z").is_err());
        assert!(b64_decode("Zg==Zg").is_err());
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(b64_decode(&b64_encode(&all)).unwrap(), all);
    }

    #[test]
    fn little_endian_elements() {
        assert_eq!(
            decode_le(DataType::F32, &[0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]).unwrap(),
            TensorData::F32(vec![1.0, -2.0])
        );
        assert_eq!(
            decode_le(DataType::I16, &[0xff, 0xff, 0x02, 0x01]).unwrap(),
            TensorData::I16(vec![-1, 0x0102])
        );
        assert_eq!(
            decode_le(DataType::Bool, &[0, 1, 7]).unwrap(),
            TensorData::Bool(vec![false, true, true])
        );
        assert!(decode_le(DataType::I32, &[1, 2, 3]).is_err());
        assert_eq!(
            decode_le(DataType::Bytes, &[2, 0, 0, 0, b'h', b'i', 0, 0, 0, 0]).unwrap(),
            TensorData::Bytes(vec![b"hi".to_vec(), Vec::new()])
        );
        assert!(decode_le(DataType::Bytes, &[5, 0, 0, 0, b'h']).is_err());
        assert!(decode_le(DataType::Bytes, &[1, 0]).is_err());
    }

    #[test]
    fn half_precision_known_values() {
        // IEEE 754 binary16 reference bit patterns.
        let cases: [(f32, u16); 10] = [
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (0.333_333_34, 0x3555),
            (6.103_515_6e-5, 0x0400), // smallest normal
            (5.960_464_5e-8, 0x0001), // smallest subnormal
            (f32::INFINITY, 0x7c00),
            (1.0e6, 0x7c00), // overflow
        ];
        for (x, h) in cases {
            assert_eq!(f32_to_f16(x), h, "{x}");
        }
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
        // Ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        // 65520 is halfway to the next (non-existent) value: rounds to inf.
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        // Half of the smallest subnormal rounds to zero (even), more rounds up.
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0x0000);
        assert_eq!(f32_to_f16(2f32.powi(-25) * 1.5), 0x0001);
    }

    #[test]
    fn every_half_round_trips() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#06x} -> {f}");
            }
        }
        for b in 0..=u16::MAX {
            let f = bf16_to_f32(b);
            if !f.is_nan() {
                assert_eq!(f32_to_bf16(f), b);
            }
        }
    }

    #[test]
    fn encode_le_is_the_inverse_of_decode_le() {
        let cases = [
            TensorData::Bool(vec![true, false]),
            TensorData::I8(vec![-1, 5]),
            TensorData::I16(vec![-1, 0x0102]),
            TensorData::F32(vec![1.5, -2.0]),
            TensorData::F16(vec![0x3c00]),
            TensorData::U64(vec![u64::MAX]),
            TensorData::Bytes(vec![b"hi".to_vec(), Vec::new()]),
        ];
        for d in cases {
            assert_eq!(decode_le(d.dtype(), &encode_le(&d)).unwrap(), d);
        }
        assert_eq!(
            encode_le(&TensorData::Bytes(vec![b"hi".to_vec()])),
            [2, 0, 0, 0, b'h', b'i']
        );
    }

    #[test]
    fn doubles_round_once_to_half_precision() {
        // f64 -> f32 -> f16 would give 1.0: the value is just above the
        // halfway point 1 + 2^-11, which the f32 rounding lands on.
        let x = 1.000_488_281_250_909_5;
        assert_eq!(f64_to_f16(x), Some(0x3c01));
        assert_eq!(f16_to_f32(0x3c01), 1.000_976_6);
        // Halfway cases go to the even neighbour.
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), Some(0x3c00));
        assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11)), Some(0x3c02));
        assert_eq!(f64_to_f16(2f64.powi(-25)), Some(0x0000));
        assert_eq!(f64_to_f16(-(2f64.powi(-25) * 3.0)), Some(0x8002));
        // The largest finite value, the last value that rounds down to it,
        // and the first that does not fit.
        assert_eq!(f64_to_f16(65504.0), Some(0x7bff));
        assert_eq!(f64_to_f16(65519.99), Some(0x7bff));
        assert_eq!(f64_to_f16(65520.0), None);
        assert_eq!(f64_to_f16(-1e6), None);
        assert_eq!(f64_to_f16(f64::INFINITY), Some(0x7c00));
        assert_eq!(f64_to_f16(f64::NEG_INFINITY), Some(0xfc00));
        assert!(f16_to_f32(f64_to_f16(f64::NAN).unwrap()).is_nan());
    }

    #[test]
    fn doubles_round_once_to_bfloat16() {
        assert_eq!(f64_to_bf16(1.0), Some(0x3f80));
        // Halfway between 1 and 1 + 2^-7: to even; just above: up (a
        // truncation would give 0x3f80 for both).
        assert_eq!(f64_to_bf16(1.0 + 2f64.powi(-8)), Some(0x3f80));
        assert_eq!(
            f64_to_bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-40)),
            Some(0x3f81)
        );
        assert_eq!(f64_to_bf16(1.0 + 3.0 * 2f64.powi(-8)), Some(0x3f82));
        assert_eq!(f64_to_bf16(0.999_999), Some(0x3f80));
        assert_eq!(f64_to_bf16(1e39), None);
        assert_eq!(f64_to_bf16(-f64::MAX), None);
        assert_eq!(f64_to_bf16(f64::INFINITY), Some(0x7f80));
        assert!(bf16_to_f32(f64_to_bf16(f64::NAN).unwrap()).is_nan());
    }

    /// numpy has no BF16: each result is checked to be a nearest BF16 value
    /// of the f64 as given (its neighbours are not nearer; on a tie, the
    /// even one), for values just off halfway points (where rounding
    /// through f32 goes wrong) and pseudo-random ones. The differences are
    /// exact in f64 (Sterbenz: operands within a factor of 2).
    #[test]
    fn bfloat16_is_a_nearest_value_of_the_double_as_given() {
        let value = |b: u16| f64::from(bf16_to_f32(b));
        let mut xs = Vec::new();
        for e in [-100, -20, -1, 0, 1, 7, 60, 120] {
            for m in [0u64, 1, 2, 63, 127] {
                // Halfway between two BF16 values, and an f64 step either side.
                let halfway = (1.0 + (m as f64 + 0.5) / 128.0) * 2f64.powi(e);
                let bits = halfway.to_bits();
                xs.extend([halfway, f64::from_bits(bits + 1), f64::from_bits(bits - 1)]);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..5000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mantissa = 1.0 + (state >> 11) as f64 / (1u64 << 53) as f64;
            xs.push(mantissa * 2f64.powi((state % 240) as i32 - 120));
        }
        for x in xs.iter().flat_map(|x| [*x, -*x]) {
            let b = f64_to_bf16(x).expect("in range");
            let d = (x - value(b)).abs();
            for n in [b.wrapping_sub(1), b + 1] {
                let v = value(n);
                if v.is_finite() && v != 0.0 && v.signum() == x.signum() {
                    let dn = (x - v).abs();
                    assert!(d <= dn, "{x:?}: {b:#06x} is not nearest ({n:#06x} is)");
                    if d == dn {
                        assert_eq!(b & 1, 0, "{x:?}: tie not to even");
                    }
                }
            }
        }
    }

    #[test]
    fn bfloat16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(-2.0), 0xc000);
        // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: to even.
        assert_eq!(f32_to_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }
}
