//! FP16 encoding against numpy: the values of `run --input` and
//! `perf --input-data` must become the FP16 values numpy's
//! `astype(np.float16)` gives (one rounding from f64, ties to even).
//! Skipped with a message when python3 lacks numpy, unless
//! `TRITONCTL_REQUIRE_ORT=1`.

use crate::common::require_ort;
use tritonctl::inputs::codec::f64_to_f16;

/// Values that test the rounding: halfway points between neighbouring
/// FP16 values and their f64 neighbours, subnormals, the ends of the
/// range, and pseudo-random values over the whole exponent range.
fn values() -> Vec<f64> {
    let mut out = vec![
        1.000_488_281_250_909_5,
        0.0,
        -0.0,
        65504.0,
        65_519.999_999,
        65520.0,
        -65520.0,
        1e-8,
        2f64.powi(-25),
        3.0 * 2f64.powi(-26),
        0.1,
        1.0 / 3.0,
    ];
    for e in [-24, -20, -14, -10, -1, 0, 1, 7, 15] {
        for m in [1u32, 2, 3, 511, 1023] {
            // Halfway between two FP16 values of exponent e, and just off it.
            let ulp = 2f64.powi(e - 10).max(2f64.powi(-24));
            let half = (f64::from(m) + 0.5) * ulp + if e >= -14 { 2f64.powi(e) } else { 0.0 };
            let bits = half.to_bits();
            out.extend([
                half,
                f64::from_bits(bits + 1),
                f64::from_bits(bits - 1),
                -half,
            ]);
        }
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mantissa = 1.0 + (state >> 11) as f64 / (1u64 << 53) as f64;
        let exp = (state % 44) as i32 - 28;
        let sign = if state & 1 == 0 { 1.0 } else { -1.0 };
        out.push(sign * mantissa * 2f64.powi(exp));
    }
    out
}

#[test]
fn fp16_rounds_as_numpy_does() {
    let has_numpy = std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_numpy {
        if require_ort() {
            panic!("TRITONCTL_REQUIRE_ORT=1 but python3 lacks numpy");
        }
        eprintln!("skipped the numpy comparison: python3 lacks numpy");
        return;
    }
    let xs = values();
    // Rust prints the shortest text that reads back as the same f64, as
    // Python's float() reads it.
    let text: Vec<String> = xs.iter().map(|x| format!("{x:?}")).collect();
    let script = "import sys, numpy as np\n\
                  xs = np.array([float(t) for t in sys.stdin.read().split()], dtype=np.float64)\n\
                  with np.errstate(over='ignore'):\n    \
                      h = xs.astype(np.float16)\n\
                  print(' '.join(str(b) for b in h.view(np.uint16)))\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(text.join(" ").as_bytes()).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let numpy: Vec<u16> = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .map(|b| b.parse().unwrap())
        .collect();
    assert_eq!(numpy.len(), xs.len());
    assert!(xs.len() >= 300, "{} values", xs.len());
    for (x, want) in xs.iter().zip(numpy) {
        let overflow = want & 0x7fff == 0x7c00;
        match f64_to_f16(*x) {
            Some(got) => assert_eq!(got, want, "{x:?}: {got:#06x}, numpy {want:#06x}"),
            None => assert!(overflow, "{x:?} refused, numpy gives {want:#06x}"),
        }
        if overflow {
            assert_eq!(f64_to_f16(*x), None, "{x:?} does not fit FP16");
        }
    }
}
