//! Concatenating and splitting host tensors along any axis.
//!
//! [`crate::tensor::Tensor::concat`] and `rows` work on the first axis,
//! which is where Triton stacks requests. The stateful backend stacks
//! requests along the config's `-1` axis, which may be any axis
//! (`Input [4, -1, 5]`), and keeps states batched along the last dynamic
//! dimension of the ONNX tensor; these helpers cover that.

use crate::tensor::{element_count, Tensor, TensorData, TensorError};

/// Shapes of up to 8 dimensions stay on the stack.
type Dims = smallvec::SmallVec<[usize; 8]>;

fn dims_usize(shape: &[i64]) -> Result<Dims, TensorError> {
    shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| TensorError::Shape(shape.to_vec())))
        .collect()
}

/// Where a buffer filled by [`interleave_into`] holds zeros: the padding
/// parts of its last fill, when they all had one size. The default says
/// nothing is known. Whoever writes the buffer otherwise resets it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Zeros {
    outer: usize,
    chunk: usize,
    parts: usize,
    /// Bit `j`: part `j` was padding.
    mask: u64,
}

impl Zeros {
    /// Entry `k` of a list of buffers was written other than by
    /// [`interleave_into`]: nothing is known of it any more (entries past
    /// the end of `zeros` know nothing already).
    pub(crate) fn forget(zeros: &mut [Zeros], k: usize) {
        if let Some(z) = zeros.get_mut(k) {
            *z = Zeros::default();
        }
    }
}

/// Fills `dst` with, for each `o` in `0..outer`, the `o`-th chunk of every
/// part in turn: part `j` gives `parts[j].1` elements per outer index, from
/// `parts[j].0` (`None`: zeros). `dst` keeps its memory when it already
/// holds `dtype`. When it has the length needed it is overwritten in
/// place, and padding parts that `zeros` (of the buffer's last fill) shows
/// to hold zeros already, in the same layout, are not written again (a
/// padded batch writes only its real rows); else it is cleared and its
/// length reserved once. `zeros` is updated for the next fill.
pub(crate) fn interleave_into(
    dst: &mut TensorData,
    dtype: crate::tensor::DataType,
    parts: &[(Option<&TensorData>, usize)],
    outer: usize,
    zeros: &mut Zeros,
) -> Result<(), TensorError> {
    let known = std::mem::take(zeros);
    if dst.dtype() != dtype {
        *dst = TensorData::empty(dtype);
    }
    let total = outer * parts.iter().map(|p| p.1).sum::<usize>();
    // The layout this fill leaves, when its parts have one size.
    let chunk = parts.first().map_or(0, |p| p.1);
    let uniform = parts.len() <= 64 && parts.iter().all(|p| p.1 == chunk);
    let now = Zeros {
        outer,
        chunk,
        parts: parts.len(),
        // (Bits for the first 64 parts; the mask is kept only for up to 64.)
        mask: parts
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, p)| p.0.is_none())
            .fold(0, |m, (j, _)| m | (1u64 << j)),
    };
    let same_layout = uniform
        && known.mask != 0
        && Zeros {
            mask: known.mask,
            ..now
        } == known;
    macro_rules! fill {
        ($($var:ident),*) => {
            match dst {
                $(TensorData::$var(d) => {
                    let in_place = d.len() == total;
                    let skip = if in_place && same_layout { known.mask } else { 0 };
                    if !in_place {
                        d.clear();
                        d.reserve(total);
                    }
                    let mut at = 0;
                    for o in 0..outer {
                        for (j, &(part, chunk)) in parts.iter().enumerate() {
                            match part {
                                Some(TensorData::$var(s)) => {
                                    let src = s.get(o * chunk..(o + 1) * chunk).ok_or(
                                        TensorError::Size {
                                            shape: Vec::new(),
                                            expected: (o + 1) * chunk,
                                            got: s.len(),
                                        },
                                    )?;
                                    if in_place {
                                        d[at..at + chunk].clone_from_slice(src);
                                    } else {
                                        d.extend_from_slice(src);
                                    }
                                }
                                Some(other) => {
                                    return Err(TensorError::DataType {
                                        expected: dtype,
                                        got: other.dtype(),
                                    })
                                }
                                // Zeros there already (bit j of `skip`).
                                None if j < 64 && skip >> j & 1 == 1 => {}
                                None if in_place => d[at..at + chunk].fill(Default::default()),
                                None => d.resize(d.len() + chunk, Default::default()),
                            }
                            at += chunk;
                        }
                    }
                })*
            }
        };
    }
    fill!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, Bf16, Bytes);
    if uniform {
        *zeros = now;
    }
    Ok(())
}

/// Concatenates `parts` (shape, data; `None`: zeros of that shape) of
/// data type `dtype` along `axis` into `dst`, reusing its memory: all parts
/// have the same rank and dimensions except along `axis`. `zeros` is
/// `dst`'s, as in [`interleave_into`].
pub(crate) fn concat_parts_into(
    dst: &mut Tensor,
    dtype: crate::tensor::DataType,
    parts: &[(&[i64], Option<&TensorData>)],
    axis: usize,
    zeros: &mut Zeros,
) -> Result<(), TensorError> {
    // The checks below leave `dst` (and so `zeros`) as they are.
    let Some(&(first, _)) = parts.first() else {
        return Err(TensorError::Shape(Vec::new()));
    };
    if axis >= first.len() {
        return Err(TensorError::Shape(first.to_vec()));
    }
    let mut total = 0i64;
    for &(shape, data) in parts {
        // (Padding parts are given the first part's shape itself.)
        let same_rest = std::ptr::eq(shape, first)
            || (shape.len() == first.len()
                && shape[..axis] == first[..axis]
                && shape[axis + 1..] == first[axis + 1..]);
        if !same_rest {
            return Err(TensorError::Concat(first.to_vec(), shape.to_vec()));
        }
        if let Some(d) = data {
            if d.dtype() != dtype {
                return Err(TensorError::DataType {
                    expected: dtype,
                    got: d.dtype(),
                });
            }
            if Some(d.len()) != element_count(shape) {
                return Err(TensorError::Size {
                    shape: shape.to_vec(),
                    expected: element_count(shape).unwrap_or(0),
                    got: d.len(),
                });
            }
        }
        total += shape[axis];
    }
    let outer = element_count(&first[..axis]).ok_or_else(|| TensorError::Shape(first.to_vec()))?;
    let inner =
        element_count(&first[axis + 1..]).ok_or_else(|| TensorError::Shape(first.to_vec()))?;
    let mut chunks: smallvec::SmallVec<[(Option<&TensorData>, usize); 16]> =
        smallvec::SmallVec::new();
    for &(shape, data) in parts {
        chunks.push((data, shape[axis] as usize * inner));
    }
    interleave_into(&mut dst.data, dtype, &chunks, outer, zeros)?;
    dst.shape.clear();
    dst.shape.extend_from_slice(first);
    dst.shape[axis] = total;
    Ok(())
}

/// Concatenates `parts` along `axis`: all parts have the same rank, data
/// type and dimensions except along `axis`.
pub fn concat_axis(parts: &[&Tensor], axis: usize) -> Result<Tensor, TensorError> {
    let first = match parts.first() {
        Some(t) => *t,
        None => return Err(TensorError::Shape(Vec::new())),
    };
    let dtype = first.dtype();
    let spec: Vec<(&[i64], Option<&TensorData>)> = parts
        .iter()
        .map(|t| (t.shape.as_slice(), Some(&t.data)))
        .collect();
    let mut out = Tensor {
        shape: Vec::new(),
        data: TensorData::empty(dtype),
    };
    concat_parts_into(&mut out, dtype, &spec, axis, &mut Zeros::default())?;
    Ok(out)
}

/// Copies rows `start..start + len` along `axis` of `src` (of shape
/// `shape`) into `dst`, which is cleared first and keeps its memory when
/// it holds the same data type. Returns the piece's shape.
pub(crate) fn slice_axis_into(
    dst: &mut TensorData,
    src: &TensorData,
    shape: &[i64],
    axis: usize,
    start: usize,
    len: usize,
) -> Result<(), TensorError> {
    // The element counts before, along and after `axis` (no list of
    // dimensions is built: this runs once per output and result).
    let bad = || TensorError::Shape(shape.to_vec());
    let along = shape
        .get(axis)
        .and_then(|&d| usize::try_from(d).ok())
        .ok_or_else(bad)?;
    let outer = element_count(&shape[..axis]).ok_or_else(bad)?;
    let inner = element_count(&shape[axis + 1..]).ok_or_else(bad)?;
    if start.checked_add(len).is_none_or(|end| end > along) {
        return Err(bad());
    }
    let row = along.checked_mul(inner).ok_or_else(bad)?;
    if Some(src.len()) != outer.checked_mul(row) {
        return Err(TensorError::Size {
            shape: shape.to_vec(),
            expected: element_count(shape).unwrap_or(0),
            got: src.len(),
        });
    }
    if dst.dtype() != src.dtype() {
        *dst = TensorData::empty(src.dtype());
    }
    macro_rules! copy {
        ($($var:ident),*) => {
            match (dst, src) {
                $((TensorData::$var(d), TensorData::$var(s)) => {
                    d.clear();
                    d.reserve(outer * len * inner);
                    for o in 0..outer {
                        let begin = o * row + start * inner;
                        d.extend_from_slice(&s[begin..begin + len * inner]);
                    }
                    Ok(())
                })*
                (a, b) => Err(TensorError::DataType {
                    expected: a.dtype(),
                    got: b.dtype(),
                }),
            }
        };
    }
    copy!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, Bf16, Bytes)
}

/// Splits `t` along `axis` into pieces of the given sizes (which must add
/// up to the axis' length).
pub fn split_axis(t: &Tensor, axis: usize, sizes: &[usize]) -> Result<Vec<Tensor>, TensorError> {
    let dims = dims_usize(&t.shape)?;
    if axis >= dims.len() {
        return Err(TensorError::Shape(t.shape.clone()));
    }
    let total: usize = sizes.iter().sum();
    if total != dims[axis] {
        return Err(TensorError::Size {
            shape: t.shape.clone(),
            expected: dims[axis],
            got: total,
        });
    }
    let mut out = Vec::with_capacity(sizes.len());
    let mut offset = 0;
    for &size in sizes {
        let mut data = TensorData::empty(t.dtype());
        slice_axis_into(&mut data, &t.data, &t.shape, axis, offset, size)?;
        let mut shape = t.shape.clone();
        shape[axis] = size as i64;
        out.push(Tensor { shape, data });
        offset += size;
    }
    Ok(out)
}

/// Stacks tensors of equal shape along a new axis inserted at `axis`.
pub fn stack(parts: &[&Tensor], axis: usize) -> Result<Tensor, TensorError> {
    let expanded: Vec<Tensor> = parts
        .iter()
        .map(|t| insert_axis(t, axis))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&Tensor> = expanded.iter().collect();
    concat_axis(&refs, axis)
}

/// The inverse of [`stack`]: one tensor per index of `axis`, without it.
pub fn unstack(t: &Tensor, axis: usize) -> Result<Vec<Tensor>, TensorError> {
    let n = match t.shape.get(axis) {
        Some(&d) => usize::try_from(d).map_err(|_| TensorError::Shape(t.shape.clone()))?,
        None => return Err(TensorError::Shape(t.shape.clone())),
    };
    let mut parts = split_axis(t, axis, &vec![1; n])?;
    for p in &mut parts {
        p.shape.remove(axis);
    }
    Ok(parts)
}

fn insert_axis(t: &Tensor, axis: usize) -> Result<Tensor, TensorError> {
    if axis > t.shape.len() {
        return Err(TensorError::Shape(t.shape.clone()));
    }
    let mut shape = t.shape.clone();
    shape.insert(axis, 1);
    Ok(Tensor {
        shape,
        data: t.data.clone(),
    })
}

/// Copies `src` into `dst` without reallocating when both hold the same
/// element type and count; false (and `dst` untouched) otherwise.
pub(crate) fn copy_data(dst: &mut TensorData, src: &TensorData) -> bool {
    macro_rules! same {
        ($($v:ident),*) => {
            match (dst, src) {
                $((TensorData::$v(d), TensorData::$v(s)) if d.len() == s.len() => {
                    d.clone_from_slice(s);
                    true
                })*
                _ => false,
            }
        };
    }
    same!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, Bf16, Bytes)
}

/// Makes entry `k` of `buf` the tensor `name` with `shape` and a copy of
/// `data`, in the memory already there when it fits (same name, element
/// type and count). Entries past `k` are left alone (truncate afterwards).
// Used by the runner (feature `run`) alone.
#[cfg_attr(not(feature = "run"), allow(dead_code))]
pub(crate) fn put(
    buf: &mut Vec<(String, Tensor)>,
    k: usize,
    name: &str,
    shape: &[i64],
    data: &TensorData,
) -> Result<(), String> {
    if let Some((n, t)) = buf.get_mut(k) {
        if n == name && copy_data(&mut t.data, data) {
            if t.shape != shape {
                t.shape.clear();
                t.shape.extend_from_slice(shape);
            }
            return Ok(());
        }
    }
    let t = Tensor::new(shape.to_vec(), data.clone()).map_err(|e| e.to_string())?;
    match buf.get_mut(k) {
        Some(slot) => *slot = (name.to_string(), t),
        None => buf.push((name.to_string(), t)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;

    fn t(shape: &[i64], v: &[i32]) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::I32(v.to_vec())).unwrap()
    }

    #[test]
    fn padding_rows_already_zero_are_not_written_again_and_never_left_stale() {
        // Two outer blocks of three one-element parts, as a padded batch
        // of the stateful backend lays them out.
        let a = TensorData::I32(vec![1, 2]);
        let b = TensorData::I32(vec![3, 4]);
        let fresh = |parts: &[(Option<&TensorData>, usize)]| {
            let mut d = TensorData::empty(DataType::I32);
            interleave_into(&mut d, DataType::I32, parts, 2, &mut Zeros::default()).unwrap();
            d
        };
        let mut d = TensorData::empty(DataType::I32);
        let mut z = Zeros::default();
        let first = [(Some(&a), 1), (None, 1), (None, 1)];
        interleave_into(&mut d, DataType::I32, &first, 2, &mut z).unwrap();
        assert_eq!(d, TensorData::I32(vec![1, 0, 0, 2, 0, 0]));

        // The same layout: only the real row is written. (A value planted
        // in a padding row shows it is left alone; the runner never
        // writes a buffer without resetting its `Zeros`.)
        if let TensorData::I32(v) = &mut d {
            v[2] = 99;
        }
        let second = [(Some(&b), 1), (None, 1), (None, 1)];
        interleave_into(&mut d, DataType::I32, &second, 2, &mut z).unwrap();
        assert_eq!(d, TensorData::I32(vec![3, 0, 99, 4, 0, 0]));
        if let TensorData::I32(v) = &mut d {
            v[2] = 0;
        }

        // A real row where padding was and padding where a real row was:
        // the old row is zeroed.
        let third = [(None, 1), (Some(&a), 1), (None, 1)];
        interleave_into(&mut d, DataType::I32, &third, 2, &mut z).unwrap();
        assert_eq!(d, fresh(&third));

        // Another layout of the same length (one part of two elements per
        // block, then a padding part of one) is written whole.
        let wide = TensorData::I32(vec![5, 6, 7, 8]);
        let uneven = [(Some(&wide), 2), (None, 1)];
        interleave_into(&mut d, DataType::I32, &uneven, 2, &mut z).unwrap();
        assert_eq!(d, TensorData::I32(vec![5, 6, 0, 7, 8, 0]));
        assert_eq!(
            z,
            Zeros::default(),
            "parts of several sizes are not tracked"
        );
        interleave_into(&mut d, DataType::I32, &third, 2, &mut z).unwrap();
        assert_eq!(d, fresh(&third));

        // Three outer blocks of two parts: the same length, another
        // layout, so nothing is skipped.
        let c = TensorData::I32(vec![9, 9, 9]);
        let other = [(None, 1), (Some(&c), 1)];
        let mut z2 = z;
        if let TensorData::I32(v) = &mut d {
            v.iter_mut().for_each(|x| *x = 7);
        }
        interleave_into(&mut d, DataType::I32, &other, 3, &mut z2).unwrap();
        assert_eq!(d, TensorData::I32(vec![0, 9, 0, 9, 0, 9]));

        // A failed fill forgets what it knew.
        let short = TensorData::I32(vec![1]);
        let bad = [(Some(&short), 1), (None, 1), (None, 1)];
        assert!(interleave_into(&mut d, DataType::I32, &bad, 2, &mut z).is_err());
        assert_eq!(z, Zeros::default());
    }

    /// What [`interleave_into`] must leave: block by block, each part's
    /// chunk or zeros.
    fn reference(parts: &[(Option<Vec<i32>>, usize)], outer: usize) -> Vec<i32> {
        let mut v = Vec::new();
        for o in 0..outer {
            for (p, c) in parts {
                match p {
                    Some(s) => v.extend_from_slice(&s[o * c..(o + 1) * c]),
                    None => v.extend(std::iter::repeat_n(0, *c)),
                }
            }
        }
        v
    }

    proptest::proptest! {
        /// Fill after fill of one buffer (as the runner refills a batch's
        /// tensor), with layouts that repeat, change, and pad rows where
        /// real rows were: the buffer always holds exactly what a fresh
        /// fill gives, whatever is skipped as known zeros.
        #[test]
        fn every_fill_of_a_reused_buffer_equals_a_fresh_one(
            fills in proptest::collection::vec(
                (1usize..4, proptest::collection::vec((proptest::bool::ANY, 1usize..3), 1..6)),
                1..12,
            ),
            uniform in proptest::bool::ANY,
        ) {
            let mut d = TensorData::empty(DataType::I32);
            let mut z = Zeros::default();
            let mut next = 1;
            for (outer, layout) in fills {
                let parts: Vec<(Option<Vec<i32>>, usize)> = layout
                    .iter()
                    .map(|&(real, c)| {
                        let c = if uniform { 2 } else { c };
                        let data = real.then(|| {
                            (0..outer * c)
                                .map(|_| {
                                    next += 1;
                                    next
                                })
                                .collect()
                        });
                        (data, c)
                    })
                    .collect();
                let datas: Vec<Option<TensorData>> = parts
                    .iter()
                    .map(|(p, _)| p.clone().map(TensorData::I32))
                    .collect();
                let given: Vec<(Option<&TensorData>, usize)> = datas
                    .iter()
                    .zip(&parts)
                    .map(|(t, (_, c))| (t.as_ref(), *c))
                    .collect();
                interleave_into(&mut d, DataType::I32, &given, outer, &mut z).unwrap();
                proptest::prop_assert_eq!(&d, &TensorData::I32(reference(&parts, outer)));
            }
        }
    }

    #[test]
    fn batches_of_more_than_64_rows_with_padding_fill_like_fresh_ones() {
        // (Zeros are tracked for up to 64 parts; beyond, every fill is whole.)
        let real = TensorData::I32(vec![7, 8]);
        let mut parts: Vec<(Option<&TensorData>, usize)> = vec![(None, 1); 70];
        parts[3] = (Some(&real), 1);
        parts[67] = (Some(&real), 1);
        let mut d = TensorData::empty(DataType::I32);
        let mut z = Zeros::default();
        for _ in 0..2 {
            interleave_into(&mut d, DataType::I32, &parts, 2, &mut z).unwrap();
            let TensorData::I32(v) = &d else {
                unreachable!()
            };
            assert_eq!(v.len(), 140);
            let set: Vec<(usize, i32)> = v
                .iter()
                .enumerate()
                .filter(|(_, &x)| x != 0)
                .map(|(i, &x)| (i, x))
                .collect();
            assert_eq!(set, vec![(3, 7), (67, 7), (73, 8), (137, 8)]);
            assert_eq!(z, Zeros::default());
        }
    }

    #[test]
    fn concat_along_a_middle_axis_interleaves_blocks() {
        // a[i][j][k] = 100i + 10j + k; b has one column, c two.
        let a = t(&[2, 1, 2], &[0, 1, 100, 101]);
        let b = t(&[2, 2, 2], &[10, 11, 20, 21, 110, 111, 120, 121]);
        let c = concat_axis(&[&a, &b], 1).unwrap();
        assert_eq!(c.shape, vec![2, 3, 2]);
        assert_eq!(
            c.data,
            TensorData::I32(vec![0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121])
        );
        let back = split_axis(&c, 1, &[1, 2]).unwrap();
        assert_eq!(back, vec![a, b]);
    }

    #[test]
    fn axis_zero_agrees_with_tensor_concat() {
        let a = t(&[1, 3], &[1, 2, 3]);
        let b = t(&[2, 3], &[4, 5, 6, 7, 8, 9]);
        assert_eq!(
            concat_axis(&[&a, &b], 0).unwrap(),
            Tensor::concat(&[&a, &b]).unwrap()
        );
    }

    #[test]
    fn last_axis_and_stack_round_trip() {
        let a = t(&[2], &[1, 2]);
        let b = t(&[2], &[3, 4]);
        let s = stack(&[&a, &b], 1).unwrap();
        assert_eq!(s.shape, vec![2, 2]);
        assert_eq!(s.data, TensorData::I32(vec![1, 3, 2, 4]));
        assert_eq!(unstack(&s, 1).unwrap(), vec![a.clone(), b.clone()]);
        let s0 = stack(&[&a, &b], 0).unwrap();
        assert_eq!(s0.data, TensorData::I32(vec![1, 2, 3, 4]));
        assert_eq!(unstack(&s0, 0).unwrap(), vec![a, b]);
    }

    #[test]
    fn mismatches_are_errors() {
        let a = t(&[2, 2], &[0; 4]);
        let b = t(&[3, 1], &[0; 3]);
        assert!(concat_axis(&[&a, &b], 1).is_err());
        let f = Tensor::zeros(DataType::F32, vec![2, 1]).unwrap();
        assert!(matches!(
            concat_axis(&[&a, &f], 1),
            Err(TensorError::DataType { .. })
        ));
        assert!(concat_axis(&[&a], 2).is_err());
        assert!(concat_axis(&[], 0).is_err());
        assert!(split_axis(&a, 1, &[1]).is_err());
        assert!(split_axis(&a, 2, &[1]).is_err());
        assert!(unstack(&a, 2).is_err());
    }

    #[test]
    fn bytes_and_empty_parts() {
        let a = Tensor::new(
            vec![1, 2],
            TensorData::Bytes(vec![b"a".to_vec(), b"b".to_vec()]),
        )
        .unwrap();
        let e = Tensor::new(vec![1, 0], TensorData::Bytes(vec![])).unwrap();
        let c = concat_axis(&[&a, &e, &a], 1).unwrap();
        assert_eq!(c.shape, vec![1, 4]);
        assert_eq!(
            split_axis(&c, 1, &[2, 0, 2]).unwrap(),
            vec![a.clone(), e, a]
        );
    }
}
