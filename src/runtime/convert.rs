//! Host tensors ([`crate::tensor::Tensor`]) to ONNX Runtime values and
//! back.
//!
//! Inputs of fixed-size types are handed to ONNX Runtime as views of the
//! caller's memory (no copy; [`HostView`]); BYTES elements are copied once
//! into ONNX Runtime's strings. Outputs are copied once out of ONNX Runtime's memory,
//! into the vectors of a previous result when the caller hands them back
//! (so a steady loop does not allocate for them).

use std::ffi::c_void;
use std::ptr::{self, NonNull};

use ort::memory::{Allocator, MemoryInfo};
use ort::sys::ONNXTensorElementDataType as Elem;
use ort::value::{DynTensorValueType, DynValue, ValueType};
use ort::AsPointer;

use crate::tensor::{DataType, Tensor, TensorData};

/// The Triton data type of an ONNX `TensorProto.DataType` id.
pub(crate) fn data_type_of(elem: i32) -> Option<DataType> {
    Some(match elem {
        1 => DataType::F32,
        2 => DataType::U8,
        3 => DataType::I8,
        4 => DataType::U16,
        5 => DataType::I16,
        6 => DataType::I32,
        7 => DataType::I64,
        8 => DataType::Bytes,
        9 => DataType::Bool,
        10 => DataType::F16,
        11 => DataType::F64,
        12 => DataType::U32,
        13 => DataType::U64,
        16 => DataType::Bf16,
        _ => return None,
    })
}

/// The ONNX name of an element type id (`FLOAT`, `COMPLEX64`, ...), or
/// `element type N` for an id the ONNX reader does not know.
pub(crate) fn onnx_type_name(elem: i32) -> String {
    match crate::onnx::onnx_type_name(elem) {
        "UNDEFINED" if elem != 0 => format!("element type {elem}"),
        name => name.to_string(),
    }
}

pub(crate) fn status(s: ort::sys::OrtStatusPtr) -> Result<(), String> {
    // SAFETY: `s` was just returned by an ONNX Runtime API call.
    unsafe { ort::Error::result_from_status(s) }.map_err(|e| e.to_string())
}

/// The memory of a fixed-size tensor: (address, bytes, element type).
fn raw_parts(t: &Tensor) -> Option<(*const c_void, usize, Elem)> {
    let e = match &t.data {
        TensorData::Bool(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL,
        TensorData::U8(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
        TensorData::U16(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16,
        TensorData::U32(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32,
        TensorData::U64(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64,
        TensorData::I8(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
        TensorData::I16(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16,
        TensorData::I32(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
        TensorData::I64(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64,
        TensorData::F16(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16,
        TensorData::F32(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
        TensorData::F64(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE,
        TensorData::Bf16(_) => Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16,
        TensorData::Bytes(_) => return None,
    };
    let (at, bytes) = t.data.memory();
    Some((at.cast(), bytes, e))
}

/// An ONNX Runtime tensor viewing the memory of a host tensor, kept
/// between runs: when the next run's tensor has the same address, size,
/// type and shape (a caller reusing its input tensors), the view is
/// reused as it is, so steady loops create no ONNX Runtime value per
/// input. The view never owns the memory; it is only handed to ONNX
/// Runtime while the tensor it was checked against is borrowed.
pub(crate) struct HostView {
    addr: usize,
    bytes: usize,
    elem: Elem,
    shape: Vec<i64>,
    value: DynValue,
}

impl HostView {
    pub(crate) fn value(&self) -> &DynValue {
        &self.value
    }

    pub(crate) fn value_mut(&mut self) -> &mut DynValue {
        &mut self.value
    }
}

/// Makes `slot` a view of `t` (a fixed-size tensor), reusing the view
/// already there when it describes the same memory. Returns false for
/// BYTES tensors, which cannot be viewed.
pub(crate) fn refresh_view(
    slot: &mut Option<HostView>,
    t: &Tensor,
    info: &MemoryInfo<'_>,
) -> Result<bool, String> {
    let Some((addr, bytes, elem)) = raw_parts(t) else {
        *slot = None;
        return Ok(false);
    };
    if let Some(v) = slot {
        if v.addr == addr as usize && v.bytes == bytes && v.elem == elem && v.shape == t.shape {
            return Ok(true);
        }
    }
    *slot = None;
    let mut out: *mut ort::sys::OrtValue = ptr::null_mut();
    // SAFETY: ONNX Runtime records the address without reading it; the
    // value is only used while a tensor with exactly this memory is
    // borrowed (checked above on every run).
    let value = unsafe {
        status((ort::api().CreateTensorWithDataAsOrtValue)(
            info.ptr(),
            addr as *mut c_void,
            bytes,
            t.shape.as_ptr(),
            t.shape.len(),
            elem,
            &mut out,
        ))?;
        let out = NonNull::new(out).ok_or("ONNX Runtime returned no tensor")?;
        DynValue::from_ptr(out, Some(&Allocator::default()))
    };
    *slot = Some(HostView {
        addr: addr as usize,
        bytes,
        elem,
        shape: t.shape.clone(),
        value,
    });
    Ok(true)
}

/// Whether `slot` is a view of exactly `t`: the same memory, size,
/// element type and shape.
pub(crate) fn is_view_of(slot: &Option<HostView>, t: &Tensor) -> bool {
    match (slot, raw_parts(t)) {
        (Some(v), Some((addr, bytes, elem))) => {
            v.addr == addr as usize && v.bytes == bytes && v.elem == elem && v.shape == t.shape
        }
        _ => false,
    }
}

/// An owned ONNX Runtime value for a BYTES tensor (a copy).
pub(crate) fn bytes_value(t: &Tensor) -> Result<Option<DynValue>, String> {
    match &t.data {
        TensorData::Bytes(v) => string_value(v, &t.shape).map(Some),
        _ => Ok(None),
    }
}

/// An owned ONNX Runtime value holding a copy of `t` (for values that must
/// outlive the caller's tensor, as in a benchmark loop or bound state).
pub(crate) fn owned_value(t: &Tensor) -> Result<DynValue, String> {
    let shape = t.shape.clone();
    macro_rules! own {
        ($v:expr) => {
            ort::value::Tensor::from_array((shape, $v.clone().into_boxed_slice()))
                .map(|v| v.into_dyn())
                .map_err(|e| e.to_string())
        };
    }
    match &t.data {
        TensorData::Bool(v) => own!(v),
        TensorData::U8(v) => own!(v),
        TensorData::U16(v) => own!(v),
        TensorData::U32(v) => own!(v),
        TensorData::U64(v) => own!(v),
        TensorData::I8(v) => own!(v),
        TensorData::I16(v) => own!(v),
        TensorData::I32(v) => own!(v),
        TensorData::I64(v) => own!(v),
        TensorData::F32(v) => own!(v),
        TensorData::F64(v) => own!(v),
        TensorData::F16(v) | TensorData::Bf16(v) => {
            let elem = if t.dtype() == DataType::F16 {
                ort::value::TensorElementType::Float16
            } else {
                ort::value::TensorElementType::Bfloat16
            };
            let mut value = ort::value::DynTensor::new(&Allocator::default(), elem, shape)
                .map_err(|e| e.to_string())?;
            if !v.is_empty() {
                let dst = value.data_ptr_mut().cast::<u16>();
                // SAFETY: the new CPU tensor holds exactly `v.len()`
                // 16-bit elements.
                unsafe { ptr::copy_nonoverlapping(v.as_ptr(), dst, v.len()) };
            }
            Ok(value.into_dyn())
        }
        TensorData::Bytes(v) => string_value(v, &t.shape),
    }
}

/// A STRING tensor holding copies of `items` (arbitrary bytes, NULs
/// included).
fn string_value(items: &[Vec<u8>], shape: &[i64]) -> Result<DynValue, String> {
    let mut allocator = Allocator::default();
    let mut out: *mut ort::sys::OrtValue = ptr::null_mut();
    // SAFETY: plain ONNX Runtime API calls on a tensor created here; every
    // element buffer is written within the length it was resized to.
    unsafe {
        status((ort::api().CreateTensorAsOrtValue)(
            allocator.ptr_mut(),
            shape.as_ptr(),
            shape.len(),
            Elem::ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING,
            &mut out,
        ))?;
        let out = NonNull::new(out).ok_or("ONNX Runtime returned no tensor")?;
        let value = DynValue::from_ptr(out, Some(&allocator));
        for (i, s) in items.iter().enumerate() {
            let mut buf: *mut std::ffi::c_char = ptr::null_mut();
            status((ort::api().GetResizedStringTensorElementBuffer)(
                out.as_ptr(),
                i,
                s.len(),
                &mut buf,
            ))?;
            if !s.is_empty() {
                ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
            }
        }
        Ok(value)
    }
}

/// The element type and shape of an ONNX Runtime value, when it is a
/// tensor.
pub(crate) fn value_elem(v: &DynValue) -> Option<(i32, &[i64])> {
    match v.dtype() {
        ValueType::Tensor { ty, shape, .. } => Some((Elem::from(*ty) as i32, &shape[..])),
        _ => None,
    }
}

/// Copies `n` elements at `p` into `dst`, reusing its allocation.
///
/// # Safety
/// `p` must point to `n` initialized values of `T` (or `n` is 0).
unsafe fn fill_raw<T: Copy>(dst: &mut Vec<T>, p: *const c_void, n: usize) {
    dst.clear();
    if n > 0 {
        dst.extend_from_slice(std::slice::from_raw_parts(p.cast::<T>(), n));
    }
}

/// Copies a host-readable ONNX Runtime tensor into `out`, reusing `out`'s
/// vector when it has the right type.
pub(crate) fn read_value(v: &DynValue, out: &mut Tensor) -> Result<(), String> {
    let (elem, shape) = value_elem(v).ok_or("the value is not a tensor")?;
    let dtype = data_type_of(elem).ok_or_else(|| {
        format!(
            "its element type {} has no Triton data type",
            onnx_type_name(elem)
        )
    })?;
    let n = crate::tensor::element_count(shape).ok_or("invalid shape")?;
    if out.dtype() != dtype {
        out.data = TensorData::empty(dtype);
    }
    out.shape.clear();
    out.shape.extend_from_slice(shape);
    if dtype == DataType::Bytes {
        let TensorData::Bytes(d) = &mut out.data else {
            unreachable!("set above")
        };
        return read_strings(v, n, d);
    }
    let t = v
        .view()
        .downcast::<DynTensorValueType>()
        .map_err(|e| e.to_string())?;
    if !t.memory_info().is_cpu_accessible() {
        return Err("the tensor is not in host memory".into());
    }
    let p = if n > 0 { t.data_ptr() } else { ptr::null() };
    if n > 0 && p.is_null() {
        return Err("the tensor has no data".into());
    }
    // SAFETY: a host tensor of `n` elements of the type matched here.
    unsafe { fill_from_raw(&mut out.data, p, n) };
    Ok(())
}

/// Copies `n` elements at `p`, of `data`'s (numeric) element type, into
/// `data`, reusing its allocation.
///
/// # Safety
/// `p` must point to `n` initialized elements of `data`'s element type as
/// ONNX Runtime stores them (bools as bytes), or `n` must be 0. `data`
/// must not be BYTES.
pub(crate) unsafe fn fill_from_raw(data: &mut TensorData, p: *const c_void, n: usize) {
    match data {
        TensorData::Bool(d) => {
            // ONNX Runtime's bools are bytes; any non-zero is true.
            d.clear();
            if n > 0 {
                let bytes = std::slice::from_raw_parts(p.cast::<u8>(), n);
                d.extend(bytes.iter().map(|b| *b != 0));
            }
        }
        TensorData::U8(d) => fill_raw(d, p, n),
        TensorData::U16(d) | TensorData::F16(d) | TensorData::Bf16(d) => fill_raw(d, p, n),
        TensorData::U32(d) => fill_raw(d, p, n),
        TensorData::U64(d) => fill_raw(d, p, n),
        TensorData::I8(d) => fill_raw(d, p, n),
        TensorData::I16(d) => fill_raw(d, p, n),
        TensorData::I32(d) => fill_raw(d, p, n),
        TensorData::I64(d) => fill_raw(d, p, n),
        TensorData::F32(d) => fill_raw(d, p, n),
        TensorData::F64(d) => fill_raw(d, p, n),
        TensorData::Bytes(_) => unreachable!("BYTES tensors are not read from raw memory"),
    }
}

/// Reads the elements of a STRING tensor as bytes (one copy each).
fn read_strings(v: &DynValue, n: usize, out: &mut Vec<Vec<u8>>) -> Result<(), String> {
    out.truncate(n);
    out.resize_with(n, Vec::new);
    for (i, s) in out.iter_mut().enumerate() {
        let mut len = 0usize;
        // SAFETY: `v` is a STRING tensor of `n` elements; each element is
        // read into a buffer of its reported length.
        unsafe {
            status((ort::api().GetStringTensorElementLength)(
                v.ptr(),
                i,
                &mut len,
            ))?;
            s.clear();
            s.reserve(len);
            if len > 0 {
                status((ort::api().GetStringTensorElement)(
                    v.ptr(),
                    len,
                    i,
                    s.as_mut_ptr().cast::<c_void>(),
                ))?;
            }
            s.set_len(len);
        }
    }
    Ok(())
}

/// A new host tensor holding a copy of `v`.
pub(crate) fn to_tensor(v: &DynValue) -> Result<Tensor, String> {
    let mut t = Tensor {
        shape: Vec::new(),
        data: TensorData::Bool(Vec::new()),
    };
    read_value(v, &mut t)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_type_ids_match_the_onnx_names() {
        for d in DataType::ALL {
            let id = (1..=16)
                .find(|&i| data_type_of(i) == Some(d))
                .unwrap_or_else(|| panic!("{d} has no ONNX id"));
            let onnx = onnx_type_name(id);
            // Triton's config names match ONNX's except for these three.
            let want = match d {
                DataType::F32 => "FLOAT",
                DataType::F64 => "DOUBLE",
                DataType::Bytes => "STRING",
                DataType::F16 => "FLOAT16",
                DataType::Bf16 => "BFLOAT16",
                _ => d.wire_name(),
            };
            assert_eq!(onnx, want);
        }
        assert_eq!(data_type_of(14), None);
        assert_eq!(onnx_type_name(14), "COMPLEX64");
    }
}
