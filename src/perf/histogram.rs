//! The latency histograms of a level: their range, the percentiles and
//! quantiles read from them, and their portable form in the JSON document
//! (HDR histogram's compressed V2 encoding in base64, docs/spec/cli.md,
//! "Mergeable results"), which `perf merge` reads back and adds up.

use super::report::{Latency, CDF_QUANTILES};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::io::Read;

/// The largest value a histogram holds: 1 hour in microseconds.
pub const HIGHEST_US: u64 = 3_600_000_000;

/// Significant digits kept (a value is known within 0.1%).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// An empty histogram of 1 µs .. 1 hour at 3 significant digits: every
/// histogram of a level, and what `perf merge` adds into.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_US, SIGNIFICANT_DIGITS).expect("histogram bounds")
}

/// The percentiles of `h`, and with `chosen` (`--percentile`) that one.
pub fn latency(h: &Histogram<u64>, chosen: Option<u8>) -> Latency {
    Latency {
        chosen: chosen.map(|p| (p, h.value_at_quantile(f64::from(p) / 100.0))),
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p95: h.value_at_quantile(0.95),
        p99: h.value_at_quantile(0.99),
        max: h.max(),
        mean: h.mean(),
    }
}

/// `h` at each of [`CDF_QUANTILES`]: the level's distribution for
/// `--plot`.
pub fn cdf(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    CDF_QUANTILES
        .iter()
        .map(|&q| (q, h.value_at_quantile(q)))
        .collect()
}

/// `h` in the compressed V2 encoding, base64 with padding (null when
/// empty).
pub fn encode(h: &Histogram<u64>) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("a histogram of 64-bit counts encodes");
    Some(crate::inputs::codec::b64_encode(&bytes))
}

/// The cookies of the V2 encoding (32-bit word size), as HdrHistogram's
/// implementations write them: plain and compressed (zlib).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// The plain V2 header: cookie, payload length, normalizing offset,
/// significant digits, lowest and highest trackable value, and the
/// integer-to-double ratio.
const V2_HEADER: usize = 40;

/// The most a compressed histogram may inflate to. A histogram of the
/// widest range at 5 significant digits (HDR histogram's most) has about
/// 6.3 million counts; stored densely at up to 9 bytes each that is about
/// 57 MB, but a histogram of latencies is sparse: 16 MiB is far above any
/// that `perf` writes (1 µs .. 1 hour at 3 digits: 23,552 counts, at most
/// 212 KB) and bounds what a hostile file can make us allocate.
const MAX_INFLATED: u64 = 16 << 20;

/// Reads a histogram of [`encode`]'s form (or a plain, uncompressed V2
/// one). The lengths the encoding declares are checked against the bytes
/// there are before anything is allocated for them.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = crate::inputs::codec::b64_decode(text)?;
    let word = |b: &[u8], at: usize| -> Option<u32> {
        b.get(at..at + 4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    };
    let plain = match word(&bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => {
            let len = word(&bytes, 4).ok_or("truncated: no length after the cookie")? as usize;
            let body = bytes
                .get(8..)
                .filter(|b| b.len() >= len)
                .ok_or("truncated: shorter than its declared length")?;
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&body[..len])
                .take(MAX_INFLATED + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("not zlib data ({e})"))?;
            if out.len() as u64 > MAX_INFLATED {
                return Err(format!(
                    "inflates to more than {MAX_INFLATED} bytes, more than any latency histogram"
                ));
            }
            out
        }
        Some(V2_COOKIE) => bytes,
        _ => return Err(
            "not an HDR histogram in the V2 encoding (its cookie is not 0x1c849314 or 0x1c849313)"
                .into(),
        ),
    };
    if word(&plain, 0) != Some(V2_COOKIE) {
        return Err("the compressed data is not a V2 histogram (wrong inner cookie)".into());
    }
    let payload = word(&plain, 4).ok_or("truncated header")? as usize;
    if plain.len() < V2_HEADER || plain.len() - V2_HEADER < payload {
        return Err("truncated: shorter than its declared length".into());
    }
    // the deserializer allocates and walks counts for the declared range:
    // only perf's own range is taken (significant digits at byte 12, lowest
    // and highest trackable value at 16 and 24, all big-endian)
    let long = |at: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&plain[at..at + 8]);
        u64::from_be_bytes(w)
    };
    let (digits, lowest, highest) = (word(&plain, 12).unwrap_or(0), long(16), long(24));
    if lowest != 1 || highest > HIGHEST_US || digits > u32::from(SIGNIFICANT_DIGITS) {
        return Err(format!(
            "declares values {lowest} .. {highest} at {digits} significant digits; perf's histograms hold 1 .. {HIGHEST_US} at {SIGNIFICANT_DIGITS}"
        ));
    }
    Deserializer::new()
        .deserialize::<u64, _>(&mut &plain[..V2_HEADER + payload])
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_keeps_every_count() {
        let mut h = new_histogram();
        for v in [1, 2, 999, 1000, 1001, 123_456, 3_599_999_999, HIGHEST_US] {
            h.record(v).unwrap();
        }
        h.record_n(5000, 7).unwrap();
        let text = encode(&h).unwrap();
        // the V2 compressed cookie, as HdrHistogram's encoders write it
        assert!(text.starts_with("HISTFAAA"), "{text}");
        let back = decode(&text).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.len(), 15);
        assert_eq!(back.max(), h.max());
        assert_eq!(back.min(), h.min());
        assert_eq!(encode(&new_histogram()), None);
    }

    /// A histogram HdrHistogram's Python implementation encoded
    /// (scripts/gen-hdr-reference.py): 50 x 100 µs, 40 x 1000 µs, 9 x
    /// 10000 µs, 1 x 2000000 µs.
    #[test]
    fn a_reference_encoding_decodes_to_its_samples() {
        let doc: serde_json::Value = serde_json::from_str(include_str!(
            "../../testdata/perf-merge/hdrhistogram-python.json"
        ))
        .unwrap();
        let h = decode(doc["encoded"].as_str().unwrap()).unwrap();
        assert_eq!((h.low(), h.high(), h.sigfig()), (1, HIGHEST_US, 3));
        assert_eq!(h.len(), 100);
        // below 2048 every value has its own count (3 digits: 2048
        // sub-buckets of width 1)
        assert_eq!(h.count_at(100), 50);
        assert_eq!(h.count_at(1000), 40);
        assert_eq!(h.value_at_quantile(0.5), 100);
        assert_eq!(h.value_at_quantile(0.9), 1000);
        // 10000 is in [8192, 16384), whose sub-buckets are 8 wide:
        // [10000, 10007], reported as its highest value
        assert_eq!(h.count_at(10000), 9);
        assert_eq!(h.value_at_quantile(0.99), 10007);
        // 2000000 is in [2^20, 2^21), sub-buckets 1024 wide: 1953 x 1024
        // = 1999872 .. 2000895
        assert_eq!(h.value_at_quantile(1.0), 2000895);
        assert_eq!(h.max(), 2000895);
        // the mean takes each sub-bucket's middle: 10004 and 2000384
        let mean = (50.0 * 100.0 + 40.0 * 1000.0 + 9.0 * 10004.0 + 2000384.0) / 100.0;
        assert_eq!(h.mean(), mean);
        // and it adds into perf's own histograms as one of them would
        let mut own = new_histogram();
        for (v, n) in [(100, 50), (1000, 40), (10000, 9), (2_000_000, 1)] {
            own.record_n(v, n).unwrap();
        }
        assert_eq!(h, own);
        assert_eq!(decode(&encode(&own).unwrap()).unwrap(), h);
    }

    #[test]
    fn bad_encodings_are_errors_not_panics() {
        let good = encode(&{
            let mut h = new_histogram();
            h.record(42).unwrap();
            h
        })
        .unwrap();
        let bytes = crate::inputs::codec::b64_decode(&good).unwrap();
        let b64 = crate::inputs::codec::b64_encode;
        // every truncation
        for n in 0..bytes.len() {
            assert!(decode(&b64(&bytes[..n])).is_err(), "{n}");
        }
        // a declared length far above the data
        let mut long = bytes.clone();
        long[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&b64(&long)).unwrap_err().contains("truncated"));
        // a plain V2 header that declares 4 GB of payload
        let mut plain = V2_COOKIE.to_be_bytes().to_vec();
        plain.extend(u32::MAX.to_be_bytes());
        plain.extend([0u8; 32]);
        assert!(decode(&b64(&plain)).unwrap_err().contains("truncated"));
        // not base64, not a histogram
        assert!(decode("HIST!!!").is_err());
        assert!(decode(&b64(b"hello, world"))
            .unwrap_err()
            .contains("cookie"));
        // a zlib bomb: 64 MiB of zeros behind the cookies
        let mut zeros = V2_COOKIE.to_be_bytes().to_vec();
        zeros.extend(vec![0u8; 64 << 20]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &zeros).unwrap();
        let z = z.finish().unwrap();
        let mut bomb = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        bomb.extend((z.len() as u32).to_be_bytes());
        bomb.extend(z);
        assert!(decode(&b64(&bomb)).unwrap_err().contains("inflates"));
    }

    /// A plain V2 header with no counts, declaring this range.
    fn header(digits: u32, lowest: u64, highest: u64) -> String {
        let mut h = V2_COOKIE.to_be_bytes().to_vec();
        h.extend(0u32.to_be_bytes()); // payload length
        h.extend(0u32.to_be_bytes()); // normalizing offset
        h.extend(digits.to_be_bytes());
        h.extend(lowest.to_be_bytes());
        h.extend(highest.to_be_bytes());
        h.extend(1.0f64.to_bits().to_be_bytes());
        crate::inputs::codec::b64_encode(&h)
    }

    #[test]
    fn a_range_beyond_perfs_is_refused_before_it_is_allocated() {
        // 1 .. 2^62 at 5 digits: millions of counts to allocate and walk
        let e = decode(&header(5, 1, 1 << 62)).unwrap_err();
        assert!(
            e.contains("declares values 1 .. 4611686018427387904 at 5 significant digits"),
            "{e}"
        );
        assert!(decode(&header(3, 1, 1 << 62)).is_err());
        assert!(decode(&header(4, 1, HIGHEST_US)).is_err());
        assert!(decode(&header(3, 2, HIGHEST_US)).is_err());
        // perf's own range decodes (to an empty histogram here)
        let h = decode(&header(3, 1, HIGHEST_US)).unwrap();
        assert_eq!(
            (h.low(), h.high(), h.sigfig(), h.len()),
            (1, HIGHEST_US, 3, 0)
        );
    }
}
