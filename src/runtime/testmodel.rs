//! Tiny ONNX models written by hand (protobuf encoded here), for tests and
//! the runtime benchmark: shapes the committed fixtures do not have.
//!
//! - [`accumulate`]: the stateful accumulate model of the reference
//!   measurements: `INPUT` FP32 `[B, 4]`, `STATE_IN` FP32 `[B, 1]`,
//!   `RESET` BOOL `[B, 1]`; `OUTPUT = (RESET ? 0 : STATE_IN) +
//!   sum(INPUT, axis 1)`, `STATE_OUT = OUTPUT`.
//! - [`accumulate_at_most_two_rows`]: the same, its `SUM` multiplied by
//!   ones of shape `[2, 1]` first: runs of more than two rows fail in ONNX
//!   Runtime (no broadcast of 4 rows against 2), and a run of two rows
//!   gives what [`accumulate`] gives.
//! - [`nonzero`]: `Y = NonZero(X)`, whose output shape depends on the values.
//! - [`matmul_unknown_shapes`]: `Y = MatMul(A, B)` with no declared shapes,
//!   so only ONNX Runtime can refuse mismatched inputs.

/// A dim of a declared shape.
enum Dim<'a> {
    Value(i64),
    Param(&'a str),
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            buf.push(b);
            return;
        }
        buf.push(b | 0x80);
    }
}

fn int_field(buf: &mut Vec<u8>, field: u32, v: i64) {
    varint(buf, u64::from(field << 3));
    varint(buf, v as u64);
}

fn bytes_field(buf: &mut Vec<u8>, field: u32, data: &[u8]) {
    varint(buf, u64::from(field << 3 | 2));
    varint(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

/// `ValueInfoProto` of a tensor; `dims: None` declares no shape.
fn value_info(name: &str, elem: i64, dims: Option<&[Dim]>) -> Vec<u8> {
    let mut tensor = Vec::new();
    int_field(&mut tensor, 1, elem);
    if let Some(dims) = dims {
        let mut shape = Vec::new();
        for d in dims {
            let mut dim = Vec::new();
            match d {
                Dim::Value(v) => int_field(&mut dim, 1, *v),
                Dim::Param(p) => bytes_field(&mut dim, 2, p.as_bytes()),
            }
            bytes_field(&mut shape, 1, &dim);
        }
        bytes_field(&mut tensor, 2, &shape);
    }
    let mut ty = Vec::new();
    bytes_field(&mut ty, 1, &tensor);
    let mut vi = Vec::new();
    bytes_field(&mut vi, 1, name.as_bytes());
    bytes_field(&mut vi, 2, &ty);
    vi
}

fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        bytes_field(&mut n, 1, i.as_bytes());
    }
    for o in outputs {
        bytes_field(&mut n, 2, o.as_bytes());
    }
    bytes_field(&mut n, 4, op.as_bytes());
    n
}

/// `TensorProto` with raw little-endian data.
fn initializer(name: &str, elem: i64, dims: &[i64], raw: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    for d in dims {
        int_field(&mut t, 1, *d);
    }
    int_field(&mut t, 2, elem);
    bytes_field(&mut t, 8, name.as_bytes());
    bytes_field(&mut t, 9, raw);
    t
}

struct Graph {
    nodes: Vec<Vec<u8>>,
    inits: Vec<Vec<u8>>,
    inputs: Vec<Vec<u8>>,
    outputs: Vec<Vec<u8>>,
}

fn model(g: Graph) -> Vec<u8> {
    let mut graph = Vec::new();
    for n in &g.nodes {
        bytes_field(&mut graph, 1, n);
    }
    bytes_field(&mut graph, 2, b"g");
    for t in &g.inits {
        bytes_field(&mut graph, 5, t);
    }
    for i in &g.inputs {
        bytes_field(&mut graph, 11, i);
    }
    for o in &g.outputs {
        bytes_field(&mut graph, 12, o);
    }
    let mut opset = Vec::new();
    bytes_field(&mut opset, 1, b"");
    int_field(&mut opset, 2, 13);
    let mut m = Vec::new();
    int_field(&mut m, 1, 8);
    bytes_field(&mut m, 7, &graph);
    bytes_field(&mut m, 8, &opset);
    m
}

const FLOAT: i64 = 1;
const INT64: i64 = 7;
const BOOL: i64 = 9;

/// The accumulate model (see the module docs).
pub fn accumulate() -> Vec<u8> {
    accumulate_graph(false)
}

/// The accumulate model that cannot run more than two rows (see the
/// module docs).
pub fn accumulate_at_most_two_rows() -> Vec<u8> {
    accumulate_graph(true)
}

fn accumulate_graph(two_rows: bool) -> Vec<u8> {
    let batch = |n| [Dim::Param("B"), Dim::Value(n)];
    let mut nodes = vec![node("ReduceSum", &["INPUT", "AXES"], &["SUM"])];
    let mut inits = vec![
        initializer("AXES", INT64, &[1], &1i64.to_le_bytes()),
        initializer("ZERO", FLOAT, &[], &0f32.to_le_bytes()),
    ];
    let sum = if two_rows {
        let ones: Vec<u8> = [1f32, 1f32].iter().flat_map(|v| v.to_le_bytes()).collect();
        inits.push(initializer("TWO_ONES", FLOAT, &[2, 1], &ones));
        nodes.push(node("Mul", &["SUM", "TWO_ONES"], &["SUM2"]));
        "SUM2"
    } else {
        "SUM"
    };
    nodes.extend([
        node("Where", &["RESET", "ZERO", "STATE_IN"], &["KEPT"]),
        node("Add", &["KEPT", sum], &["OUTPUT"]),
        node("Identity", &["OUTPUT"], &["STATE_OUT"]),
    ]);
    model(Graph {
        nodes,
        inits,
        inputs: vec![
            value_info("INPUT", FLOAT, Some(&batch(4))),
            value_info("STATE_IN", FLOAT, Some(&batch(1))),
            value_info("RESET", BOOL, Some(&batch(1))),
        ],
        outputs: vec![
            value_info("OUTPUT", FLOAT, Some(&batch(1))),
            value_info("STATE_OUT", FLOAT, Some(&batch(1))),
        ],
    })
}

/// `Y = MatMul(A, B)`, nothing declared about the shapes.
pub fn matmul_unknown_shapes() -> Vec<u8> {
    model(Graph {
        nodes: vec![node("MatMul", &["A", "B"], &["Y"])],
        inits: Vec::new(),
        inputs: vec![value_info("A", FLOAT, None), value_info("B", FLOAT, None)],
        outputs: vec![value_info("Y", FLOAT, None)],
    })
}

/// `Y = NonZero(X)` for an INT64 `X [N]`: `Y` is INT64 `[1, count]`, a
/// shape that depends on the values, not only on the input's shape.
pub fn nonzero() -> Vec<u8> {
    model(Graph {
        nodes: vec![node("NonZero", &["X"], &["Y"])],
        inits: Vec::new(),
        inputs: vec![value_info("X", INT64, Some(&[Dim::Param("N")]))],
        outputs: vec![value_info("Y", INT64, None)],
    })
}
