//! Host tensors in Triton's data types, shared by the local runner (`run`)
//! and the load tester (`perf`).
//!
//! A [`Tensor`] is a shape plus a typed, row-major vector of elements.
//! FP16 and BF16 elements are kept as their raw 16-bit patterns; BYTES
//! (Triton's `TYPE_STRING`) elements are arbitrary byte strings.

use serde::Serialize;
use std::fmt;

/// Triton's tensor data types (the KServe v2 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(into = "&'static str")]
pub enum DataType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Bf16,
    Bytes,
}

impl DataType {
    pub const ALL: [DataType; 14] = [
        DataType::Bool,
        DataType::U8,
        DataType::U16,
        DataType::U32,
        DataType::U64,
        DataType::I8,
        DataType::I16,
        DataType::I32,
        DataType::I64,
        DataType::F16,
        DataType::F32,
        DataType::F64,
        DataType::Bf16,
        DataType::Bytes,
    ];

    /// The KServe v2 / Triton protocol name: `FP32`, `BYTES`, ...
    pub fn wire_name(self) -> &'static str {
        match self {
            DataType::Bool => "BOOL",
            DataType::U8 => "UINT8",
            DataType::U16 => "UINT16",
            DataType::U32 => "UINT32",
            DataType::U64 => "UINT64",
            DataType::I8 => "INT8",
            DataType::I16 => "INT16",
            DataType::I32 => "INT32",
            DataType::I64 => "INT64",
            DataType::F16 => "FP16",
            DataType::F32 => "FP32",
            DataType::F64 => "FP64",
            DataType::Bf16 => "BF16",
            DataType::Bytes => "BYTES",
        }
    }

    /// The model configuration name: `TYPE_FP32`, `TYPE_STRING`, ...
    pub fn config_name(self) -> &'static str {
        match self {
            DataType::Bool => "TYPE_BOOL",
            DataType::U8 => "TYPE_UINT8",
            DataType::U16 => "TYPE_UINT16",
            DataType::U32 => "TYPE_UINT32",
            DataType::U64 => "TYPE_UINT64",
            DataType::I8 => "TYPE_INT8",
            DataType::I16 => "TYPE_INT16",
            DataType::I32 => "TYPE_INT32",
            DataType::I64 => "TYPE_INT64",
            DataType::F16 => "TYPE_FP16",
            DataType::F32 => "TYPE_FP32",
            DataType::F64 => "TYPE_FP64",
            DataType::Bf16 => "TYPE_BF16",
            DataType::Bytes => "TYPE_STRING",
        }
    }

    /// Parses a protocol name (`FP32`) or a config name (`TYPE_FP32`).
    pub fn parse(name: &str) -> Option<DataType> {
        let n = name.strip_prefix("TYPE_").unwrap_or(name);
        Some(match n {
            "BOOL" => DataType::Bool,
            "UINT8" => DataType::U8,
            "UINT16" => DataType::U16,
            "UINT32" => DataType::U32,
            "UINT64" => DataType::U64,
            "INT8" => DataType::I8,
            "INT16" => DataType::I16,
            "INT32" => DataType::I32,
            "INT64" => DataType::I64,
            "FP16" => DataType::F16,
            "FP32" => DataType::F32,
            "FP64" => DataType::F64,
            "BF16" => DataType::Bf16,
            "BYTES" => DataType::Bytes,
            "STRING" if name.starts_with("TYPE_") => DataType::Bytes,
            _ => return None,
        })
    }

    /// From the `DataType` enum value of the typed model config.
    pub fn from_config(value: i32) -> Option<DataType> {
        Self::parse(&crate::schema::data_type_name(value))
    }

    /// Size of one element in bytes (`None` for BYTES).
    pub fn element_size(self) -> Option<usize> {
        Some(match self {
            DataType::Bool | DataType::U8 | DataType::I8 => 1,
            DataType::U16 | DataType::I16 | DataType::F16 | DataType::Bf16 => 2,
            DataType::U32 | DataType::I32 | DataType::F32 => 4,
            DataType::U64 | DataType::I64 | DataType::F64 => 8,
            DataType::Bytes => return None,
        })
    }
}

impl From<DataType> for &'static str {
    fn from(d: DataType) -> Self {
        d.wire_name()
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}

/// Typed element storage, row-major.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// IEEE half-precision bit patterns.
    F16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// bfloat16 bit patterns.
    Bf16(Vec<u16>),
    Bytes(Vec<Vec<u8>>),
}

/// Applies `$body` to the vector inside any [`TensorData`] variant.
macro_rules! with_vec {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            TensorData::Bool($v) => $body,
            TensorData::U8($v) => $body,
            TensorData::U16($v) => $body,
            TensorData::U32($v) => $body,
            TensorData::U64($v) => $body,
            TensorData::I8($v) => $body,
            TensorData::I16($v) => $body,
            TensorData::I32($v) => $body,
            TensorData::I64($v) => $body,
            TensorData::F16($v) => $body,
            TensorData::F32($v) => $body,
            TensorData::F64($v) => $body,
            TensorData::Bf16($v) => $body,
            TensorData::Bytes($v) => $body,
        }
    };
}

impl TensorData {
    /// An empty vector of `dtype`.
    pub fn empty(dtype: DataType) -> Self {
        Self::zeros(dtype, 0)
    }

    /// `n` zero (false, empty string) elements of `dtype`.
    pub fn zeros(dtype: DataType, n: usize) -> Self {
        match dtype {
            DataType::Bool => TensorData::Bool(vec![false; n]),
            DataType::U8 => TensorData::U8(vec![0; n]),
            DataType::U16 => TensorData::U16(vec![0; n]),
            DataType::U32 => TensorData::U32(vec![0; n]),
            DataType::U64 => TensorData::U64(vec![0; n]),
            DataType::I8 => TensorData::I8(vec![0; n]),
            DataType::I16 => TensorData::I16(vec![0; n]),
            DataType::I32 => TensorData::I32(vec![0; n]),
            DataType::I64 => TensorData::I64(vec![0; n]),
            DataType::F16 => TensorData::F16(vec![0; n]),
            DataType::F32 => TensorData::F32(vec![0.0; n]),
            DataType::F64 => TensorData::F64(vec![0.0; n]),
            DataType::Bf16 => TensorData::Bf16(vec![0; n]),
            DataType::Bytes => TensorData::Bytes(vec![Vec::new(); n]),
        }
    }

    pub fn dtype(&self) -> DataType {
        match self {
            TensorData::Bool(_) => DataType::Bool,
            TensorData::U8(_) => DataType::U8,
            TensorData::U16(_) => DataType::U16,
            TensorData::U32(_) => DataType::U32,
            TensorData::U64(_) => DataType::U64,
            TensorData::I8(_) => DataType::I8,
            TensorData::I16(_) => DataType::I16,
            TensorData::I32(_) => DataType::I32,
            TensorData::I64(_) => DataType::I64,
            TensorData::F16(_) => DataType::F16,
            TensorData::F32(_) => DataType::F32,
            TensorData::F64(_) => DataType::F64,
            TensorData::Bf16(_) => DataType::Bf16,
            TensorData::Bytes(_) => DataType::Bytes,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_vec!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the elements are and how many bytes they take (BYTES: the
    /// vector of strings itself, not their bytes).
    pub fn memory(&self) -> (*const u8, usize) {
        fn parts<T>(v: &[T]) -> (*const u8, usize) {
            (v.as_ptr().cast(), std::mem::size_of_val(v))
        }
        with_vec!(self, v => parts(v))
    }

    /// Bytes of memory the vector holds (BYTES: not counting the memory
    /// of its elements).
    pub fn capacity_bytes(&self) -> usize {
        fn bytes<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        with_vec!(self, v => bytes(v))
    }

    /// Makes `self` a copy of `other`, in `self`'s memory when it holds
    /// the same type.
    pub fn assign(&mut self, other: &TensorData) {
        macro_rules! assign {
            ($($var:ident),*) => {
                match (&mut *self, other) {
                    $((TensorData::$var(a), TensorData::$var(b)) => a.clone_from(b),)*
                    (a, b) => *a = b.clone(),
                }
            };
        }
        assign!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, Bf16, Bytes)
    }

    /// Makes room for `additional` more elements, or says that the memory
    /// cannot be had (instead of aborting, as a failed allocation does).
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), TensorError> {
        let dtype = self.dtype();
        with_vec!(self, v => v.try_reserve_exact(additional)).map_err(|_| TensorError::Alloc {
            dtype,
            elements: additional,
        })
    }

    /// [`Self::zeros`], or an error when the memory cannot be had (sizes
    /// that come from a config or a request).
    pub fn try_zeros(dtype: DataType, n: usize) -> Result<Self, TensorError> {
        let mut d = TensorData::empty(dtype);
        d.try_reserve(n)?;
        with_vec!(&mut d, v => v.resize(n, Default::default()));
        Ok(d)
    }

    /// Appends the elements of `other` (same data type) to `self`.
    pub fn extend_from(&mut self, other: &TensorData) -> Result<(), TensorError> {
        macro_rules! ext {
            ($($var:ident),*) => {
                match (self, other) {
                    $((TensorData::$var(a), TensorData::$var(b)) => {
                        a.extend_from_slice(b);
                        Ok(())
                    })*
                    (a, b) => Err(TensorError::DataType {
                        expected: a.dtype(),
                        got: b.dtype(),
                    }),
                }
            };
        }
        ext!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, Bf16, Bytes)
    }

    /// Elements `start..end` as a new vector of the same type.
    pub fn slice(&self, start: usize, end: usize) -> TensorData {
        macro_rules! sl {
            ($($var:ident),*) => {
                match self {
                    $(TensorData::$var(v) => TensorData::$var(v[start..end].to_vec()),)*
                }
            };
        }
        sl!(Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, Bf16, Bytes)
    }
}

/// A tensor on the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Dimensions, all non-negative.
    pub shape: Vec<i64>,
    pub data: TensorData,
}

/// Problems assembling or splitting tensors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TensorError {
    #[error("data type mismatch: expected {expected}, got {got}")]
    DataType { expected: DataType, got: DataType },
    #[error("shape {shape:?} holds {expected} elements but {got} were given")]
    Size {
        shape: Vec<i64>,
        expected: usize,
        got: usize,
    },
    #[error("invalid shape {0:?}: dimensions must be non-negative")]
    Shape(Vec<i64>),
    #[error("tensors to concatenate differ in shape beyond the batch dimension: {0:?} and {1:?}")]
    Concat(Vec<i64>, Vec<i64>),
    #[error("cannot allocate {elements} elements of {dtype}: not enough memory")]
    Alloc { dtype: DataType, elements: usize },
}

/// Number of elements of `shape` (`None` when a dimension is negative or
/// the product overflows).
pub fn element_count(shape: &[i64]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    })
}

impl Tensor {
    /// A tensor, checking that `data` fills `shape` exactly.
    pub fn new(shape: Vec<i64>, data: TensorData) -> Result<Self, TensorError> {
        let expected = element_count(&shape).ok_or_else(|| TensorError::Shape(shape.clone()))?;
        if expected != data.len() {
            return Err(TensorError::Size {
                shape,
                expected,
                got: data.len(),
            });
        }
        Ok(Tensor { shape, data })
    }

    /// A zero-filled tensor (an error when its memory cannot be had).
    pub fn zeros(dtype: DataType, shape: Vec<i64>) -> Result<Self, TensorError> {
        let n = element_count(&shape).ok_or_else(|| TensorError::Shape(shape.clone()))?;
        Ok(Tensor {
            shape,
            data: TensorData::try_zeros(dtype, n)?,
        })
    }

    pub fn dtype(&self) -> DataType {
        self.data.dtype()
    }

    /// Concatenates tensors along the first (batch) dimension.
    pub fn concat(parts: &[&Tensor]) -> Result<Tensor, TensorError> {
        let first = match parts.first() {
            Some(t) => *t,
            None => return Err(TensorError::Shape(Vec::new())),
        };
        if first.shape.is_empty() {
            return Err(TensorError::Shape(first.shape.clone()));
        }
        let mut data = TensorData::empty(first.dtype());
        let mut rows = 0i64;
        for t in parts {
            if t.shape.len() != first.shape.len() || t.shape[1..] != first.shape[1..] {
                return Err(TensorError::Concat(first.shape.clone(), t.shape.clone()));
            }
            data.extend_from(&t.data)?;
            rows += t.shape[0];
        }
        let mut shape = first.shape.clone();
        shape[0] = rows;
        Ok(Tensor { shape, data })
    }

    /// Splits off rows `start..start + rows` of the batch dimension.
    pub fn rows(&self, start: usize, rows: usize) -> Result<Tensor, TensorError> {
        let total = self
            .shape
            .first()
            .and_then(|&d| usize::try_from(d).ok())
            .ok_or_else(|| TensorError::Shape(self.shape.clone()))?;
        if start + rows > total {
            return Err(TensorError::Size {
                shape: self.shape.clone(),
                expected: total,
                got: start + rows,
            });
        }
        let per_row = element_count(&self.shape[1..]).unwrap_or(0);
        let data = self.data.slice(start * per_row, (start + rows) * per_row);
        let mut shape = self.shape.clone();
        shape[0] = rows as i64;
        Ok(Tensor { shape, data })
    }
}

/// Tensors by name, in name order: a small map kept in one vector (a
/// request has a few inputs; a tree node per request costs more to build
/// and to read than a search of a short sorted list).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedTensors(Vec<(String, Tensor)>);

impl NamedTensors {
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name` to `t`; returns the tensor it replaces.
    pub fn insert(&mut self, name: String, t: Tensor) -> Option<Tensor> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, t)),
            Err(i) => {
                self.0.insert(i, (name, t));
                None
            }
        }
    }

    /// The `(name, tensor)` pairs in name order, moved out.
    pub fn into_vec(self) -> Vec<(String, Tensor)> {
        self.0
    }

    /// The `(name, tensor)` pairs in name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &Tensor)> + Clone {
        self.0.iter().map(|(n, t)| (n, t))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> + Clone {
        self.0.iter().map(|(n, _)| n)
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &Tensor> + Clone {
        self.0.iter().map(|(_, t)| t)
    }
}

impl std::ops::Index<&str> for NamedTensors {
    type Output = Tensor;
    fn index(&self, name: &str) -> &Tensor {
        self.get(name)
            .unwrap_or_else(|| panic!("no tensor named '{name}'"))
    }
}

impl FromIterator<(String, Tensor)> for NamedTensors {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> Self {
        let mut v: Vec<(String, Tensor)> = iter.into_iter().collect();
        // Stable: of equal names the last one stays, as when inserting.
        v.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, Tensor)> = Vec::with_capacity(v.len());
        for p in v {
            match out.last_mut() {
                Some(last) if last.0 == p.0 => *last = p,
                _ => out.push(p),
            }
        }
        Self(out)
    }
}

impl<'a> IntoIterator for &'a NamedTensors {
    type Item = (&'a String, &'a Tensor);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Tensor)>,
        fn(&'a (String, Tensor)) -> (&'a String, &'a Tensor),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, t)| (n, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_where_the_elements_are_and_their_size_in_bytes() {
        let v = vec![1.0f32, 2.0, 3.0, 4.0, 5.0];
        let d = TensorData::F32(v);
        let TensorData::F32(inner) = &d else {
            unreachable!()
        };
        assert_eq!(d.memory(), (inner.as_ptr().cast::<u8>(), 20));
        let b = TensorData::Bytes(vec![b"ab".to_vec(), Vec::new()]);
        let TensorData::Bytes(inner) = &b else {
            unreachable!()
        };
        // The vector of strings itself.
        assert_eq!(
            b.memory(),
            (
                inner.as_ptr().cast::<u8>(),
                2 * std::mem::size_of::<Vec<u8>>()
            )
        );
        assert_eq!(TensorData::empty(DataType::I64).memory().1, 0);
    }

    #[test]
    fn names_round_trip() {
        for d in DataType::ALL {
            assert_eq!(DataType::parse(d.wire_name()), Some(d));
            assert_eq!(DataType::parse(d.config_name()), Some(d));
        }
        assert_eq!(DataType::parse("STRING"), None);
        assert_eq!(DataType::parse("TYPE_INVALID"), None);
    }

    #[test]
    fn named_tensors_keep_name_order_and_one_tensor_per_name() {
        let t = |v: i32| Tensor::new(vec![1], TensorData::I32(vec![v])).unwrap();
        let mut m = NamedTensors::new();
        assert!(m.is_empty());
        for (n, v) in [("b", 1), ("c", 2), ("a", 3)] {
            assert_eq!(m.insert(n.to_string(), t(v)), None);
        }
        assert_eq!(
            m.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        // Inserting a name again replaces its tensor and returns the old.
        assert_eq!(m.insert("b".into(), t(9)), Some(t(1)));
        assert_eq!(m.len(), 3);
        assert_eq!(m["b"], t(9));
        assert_eq!(m.get("d"), None);
        assert!(m.contains_key("c") && !m.contains_key("C"));
        let pairs: Vec<(String, i32)> = (&m)
            .into_iter()
            .map(|(n, x)| match &x.data {
                TensorData::I32(v) => (n.clone(), v[0]),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            pairs,
            [
                ("a".to_string(), 3),
                ("b".to_string(), 9),
                ("c".to_string(), 2)
            ]
        );
        // Collected pairs are sorted, and of repeated names the last stays
        // (as with repeated inserts).
        let c: NamedTensors = [("z", 1), ("y", 2), ("z", 3)]
            .into_iter()
            .map(|(n, v)| (n.to_string(), t(v)))
            .collect();
        assert_eq!(c.keys().map(String::as_str).collect::<Vec<_>>(), ["y", "z"]);
        assert_eq!(c["z"], t(3));
    }

    #[test]
    fn concat_and_split_rows() {
        let a = Tensor::new(vec![1, 2], TensorData::F32(vec![1.0, 2.0])).unwrap();
        let b = Tensor::new(vec![2, 2], TensorData::F32(vec![3.0, 4.0, 5.0, 6.0])).unwrap();
        let c = Tensor::concat(&[&a, &b]).unwrap();
        assert_eq!(c.shape, vec![3, 2]);
        assert_eq!(c.rows(1, 2).unwrap(), b);
        assert_eq!(c.rows(0, 1).unwrap(), a);
        assert!(c.rows(2, 2).is_err());
        let d = Tensor::new(vec![1, 3], TensorData::F32(vec![0.0; 3])).unwrap();
        assert!(matches!(
            Tensor::concat(&[&a, &d]),
            Err(TensorError::Concat(..))
        ));
        let e = Tensor::new(vec![1, 2], TensorData::I32(vec![0; 2])).unwrap();
        assert!(matches!(
            Tensor::concat(&[&a, &e]),
            Err(TensorError::DataType { .. })
        ));
    }

    #[test]
    fn size_is_checked() {
        assert!(Tensor::new(vec![2, 2], TensorData::I64(vec![1, 2, 3])).is_err());
        assert!(Tensor::new(vec![-1], TensorData::I64(vec![])).is_err());
        assert!(Tensor::new(vec![i64::MAX, i64::MAX], TensorData::I64(vec![])).is_err());
        assert_eq!(
            Tensor::zeros(DataType::Bytes, vec![0, 3])
                .unwrap()
                .data
                .len(),
            0
        );
    }
}
