//! Tests of the runner's parts that need no ONNX Runtime: request
//! signatures, prefetching, the spare memory kept for results.

use super::assemble::Spare;
use super::driver::{prefetch, prefetch_of};
use super::plan::Signatures;
use super::*;
use crate::tensor::{Tensor, TensorData};
use std::sync::Arc;

fn f32s(shape: &[i64], v: Vec<f32>) -> Tensor {
    Tensor::new(shape.to_vec(), TensorData::F32(v)).unwrap()
}

fn addr(t: &Tensor) -> *const f32 {
    match &t.data {
        TensorData::F32(v) => v.as_ptr(),
        _ => std::ptr::null(),
    }
}

#[test]
fn a_requests_signature_is_its_names_and_shapes_shared_between_equal_ones() {
    let req = |inputs: &[(&str, &[i64])]| RunRequest {
        id: String::new(),
        index: 0,
        origin: String::new(),
        arrival_us: None,
        sequence_id: None,
        start: false,
        end: false,
        priority: 0,
        timeout_us: 0,
        inputs: inputs
            .iter()
            .map(|(n, s)| {
                let len = s.iter().product::<i64>() as usize;
                (n.to_string(), f32s(s, vec![0.0; len]))
            })
            .collect(),
    };
    let a = req(&[("X", &[1, 2]), ("Y", &[3])]);
    let b = req(&[("X", &[2, 1]), ("Y", &[3])]);
    let c = req(&[("X", &[1, 2]), ("Z", &[3])]);
    let mut sigs = Signatures::default();
    let first = sigs.of(&a);
    assert_eq!(&*first, "X[1, 2];Y[3]");
    // The same names and shapes: the same shared text.
    assert!(Arc::ptr_eq(&sigs.of(&a.clone()), &first));
    let other = sigs.of(&b);
    assert_eq!(&*other, "X[2, 1];Y[3]");
    assert_eq!(&*sigs.of(&c), "X[1, 2];Z[3]");
    // Back to the first: found again, shared, after others.
    assert!(Arc::ptr_eq(&sigs.of(&a), &first));
    assert!(Arc::ptr_eq(&sigs.of(&b), &other));
    assert_eq!(&*sigs.of(&req(&[("X", &[1, 2])])), "X[1, 2]");
    assert_eq!(&*sigs.of(&req(&[])), "");
}

#[test]
fn prefetching_any_address_is_harmless() {
    // A hint only: no address, mapped or not, may fault.
    for addr in [0usize, 8, 4096, usize::MAX - 63, 0xdead_0000] {
        prefetch(addr as *const u8, 256);
    }
    prefetch(std::ptr::null(), 0);
    let v = vec![7u8; 1000];
    prefetch(v.as_ptr(), v.len());
    prefetch_of(&v);
    assert_eq!(v[999], 7);
}

#[test]
fn spare_memory_holds_results_of_the_right_contents_and_never_too_much_memory() {
    let mut spare = Spare::default();
    let small = f32s(&[1, 20], vec![7.0; 20]);
    let small_at = addr(&small);
    let big = f32s(&[1, 100_000], vec![1.0; 100_000]);
    spare.give(vec![("Input".to_string(), small)]);
    spare.give(vec![("Big".to_string(), big)]);

    // The last tensor given is taken first: 400 kB are not kept for a
    // result of 20 bytes.
    let out = f32s(&[1, 5], vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    let (name, t) = spare.tensor("Output", &[&[1], &out.shape], &out.data);
    assert_eq!(name, "Output");
    assert_eq!(t.shape, vec![1, 1, 5]);
    assert_eq!(t.data, out.data);
    assert!(
        t.data.capacity_bytes() < 1000,
        "{}",
        t.data.capacity_bytes()
    );

    // 80 bytes are (they are under the small size any result may keep).
    let (name, t) = spare.tensor("Out", &[&out.shape], &out.data);
    assert_eq!((name.as_str(), &t.shape[..]), ("Out", &[1i64, 5][..]));
    assert_eq!(t.data, out.data);
    assert_eq!(addr(&t), small_at, "the request's memory holds the result");

    // Other types and an empty pool give plain copies.
    let ints = Tensor::new(vec![2], TensorData::I64(vec![3, 4])).unwrap();
    spare.give(vec![("X".to_string(), f32s(&[1], vec![0.0]))]);
    let (_, t) = spare.tensor("I", &[&ints.shape], &ints.data);
    assert_eq!(t, ints);
    let (name, t) = spare.tensor("J", &[&ints.shape], &ints.data);
    assert_eq!((name.as_str(), t), ("J", ints));

    // Lists keep their memory; at most `KEEP` of each are held.
    for _ in 0..Spare::KEEP + 10 {
        spare.give(vec![("A".to_string(), f32s(&[1], vec![0.0]))]);
    }
    assert_eq!(spare.tensors.len(), Spare::KEEP);
    assert_eq!(spare.lists.len(), Spare::KEEP);
    assert!(spare.list(3).capacity() >= 1);
}

#[test]
fn too_many_requests_for_memory_is_an_error_not_an_abort() {
    // The per-request lists are reserved fallibly (docs/hostile.md).
    let e = super::pool::per_request::<[u8; 4096]>(usize::MAX / 8192).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("not enough memory") && m.contains("split the input"),
        "{m}"
    );
    assert!(super::pool::per_request::<u64>(4).is_ok());
}
