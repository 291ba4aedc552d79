//! A small, conservative shape propagation for graph outputs.
//!
//! ORT reports a graph output's shape after merging its own shape inference
//! into the declared one (docs/spec/autoconfig.md §3.2). Full ONNX shape
//! inference is out of scope; this module covers the ops that keep the shape of
//! their input, which is what exporters most often leave undeclared at the end
//! of a graph:
//!
//! * element-wise unary ops (Identity, Relu, Sigmoid, Tanh, Abs, Neg, Exp,
//!   Log, Sqrt, Softmax, Clip, …): output = input;
//! * `Cast` (element type from the `to` attribute) and `CastLike` (element
//!   type of the second input);
//! * multi-input element-wise ops with numpy broadcasting (Add, Sub, Mul,
//!   Div, Pow, Max, Min, Sum, Mean, PRelu, …) and the comparison / logic ops
//!   (Equal, Less, And, …, producing BOOL);
//! * `Dropout` (output and mask keep the input shape).
//!
//! Types are known for graph inputs, initializers, `value_info` entries and
//! declared graph outputs; nodes are visited in file order (ONNX requires a
//! topological order; a few extra passes cover files that are not sorted).
//! A result only ever *fills in* what is unknown (missing element type,
//! missing shape, unknown dims); declared fixed or symbolic dims are kept, as
//! ORT keeps them. Whatever cannot be derived stays unknown and the
//! signature says so ([`super::Signature::output_shapes_complete`]).

use std::collections::HashMap;

use super::parse::RawNode;
use super::Dim;

/// How an op's outputs follow from its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Output 0 has the type and shape of input 0.
    Unary,
    /// Output 0 has the shape of input 0 and the element type `to`.
    Cast,
    /// Output 0 has the shape of input 0 and the element type of input 1.
    CastLike,
    /// Numpy broadcasting over all inputs; element type of input 0.
    Broadcast,
    /// Numpy broadcasting over all inputs; element type BOOL.
    Compare,
    /// Output 0 like input 0; output 1 (mask) BOOL with the same shape.
    Dropout,
}

const UNARY: &[&str] = &[
    "Identity",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Abs",
    "Neg",
    "Exp",
    "Log",
    "Sqrt",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Erf",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "LeakyRelu",
    "Elu",
    "Selu",
    "Celu",
    "Softplus",
    "Softsign",
    "HardSigmoid",
    "HardSwish",
    "Mish",
    "Gelu",
    "ThresholdedRelu",
    "Softmax",
    "LogSoftmax",
    "Hardmax",
    "Not",
    "BitwiseNot",
    "Clip",
];

const BROADCAST: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Mod",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "PRelu",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
];

const COMPARE: &[&str] = &[
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
];

/// ONNX element type id of BOOL.
const BOOL: i32 = 9;

impl Op {
    /// The category of a default-domain op, `None` for ops outside the
    /// propagation subset.
    pub(crate) fn from_name(op_type: &str) -> Option<Op> {
        if UNARY.contains(&op_type) {
            Some(Op::Unary)
        } else if BROADCAST.contains(&op_type) {
            Some(Op::Broadcast)
        } else if COMPARE.contains(&op_type) {
            Some(Op::Compare)
        } else {
            match op_type {
                "Cast" => Some(Op::Cast),
                "CastLike" => Some(Op::CastLike),
                "Dropout" => Some(Op::Dropout),
                _ => None,
            }
        }
    }
}

/// What is known about a value: element type (0 = unknown) and shape
/// (`None` = unknown rank).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Ty {
    pub elem: i32,
    pub shape: Option<Vec<Dim>>,
}

impl Ty {
    /// Fills what is unknown in `self` from `other`; true when anything
    /// changed. Known dims are never overwritten; shapes of a different rank
    /// are ignored.
    pub(crate) fn refine(&mut self, other: &Ty) -> bool {
        let mut changed = false;
        if self.elem == 0 && other.elem != 0 {
            self.elem = other.elem;
            changed = true;
        }
        match (&mut self.shape, &other.shape) {
            (None, Some(s)) => {
                self.shape = Some(s.clone());
                changed = true;
            }
            (Some(mine), Some(theirs)) if mine.len() == theirs.len() => {
                for (a, b) in mine.iter_mut().zip(theirs) {
                    if *a == Dim::Unknown && *b != Dim::Unknown {
                        *a = b.clone();
                        changed = true;
                    }
                }
            }
            _ => {}
        }
        changed
    }
}

/// Numpy-style multidirectional broadcasting of known shapes.
pub(crate) fn broadcast(shapes: &[&[Dim]]) -> Vec<Dim> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            // The dims of every operand aligned on position i (from the left
            // of the result), skipping operands of lower rank.
            let dims: Vec<&Dim> = shapes
                .iter()
                .filter_map(|s| (i + s.len()).checked_sub(rank).map(|j| &s[j]))
                .collect();
            if let Some(d) = dims.iter().find(|d| matches!(d, Dim::Fixed(v) if *v != 1)) {
                return (*d).clone();
            }
            let rest: Vec<&&Dim> = dims.iter().filter(|d| ***d != Dim::Fixed(1)).collect();
            match rest.first() {
                None => Dim::Fixed(1),
                Some(first) => match first {
                    Dim::Symbolic(_) if rest.iter().all(|d| d == first) => (**first).clone(),
                    _ => Dim::Unknown,
                },
            }
        })
        .collect()
}

/// The output types of one node given the current environment.
fn apply(node: &RawNode, env: &HashMap<String, Ty>) -> Vec<(usize, Ty)> {
    let input = |i: usize| {
        node.inputs
            .get(i)
            .filter(|n| !n.is_empty())
            .and_then(|n| env.get(n))
    };
    match node.op {
        Op::Unary => input(0).map(|t| vec![(0, t.clone())]).unwrap_or_default(),
        Op::Dropout => input(0)
            .map(|t| {
                let mask = Ty {
                    elem: BOOL,
                    shape: t.shape.clone(),
                };
                vec![(0, t.clone()), (1, mask)]
            })
            .unwrap_or_default(),
        Op::Cast => {
            let elem = node
                .cast_to
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0);
            let shape = input(0).and_then(|t| t.shape.clone());
            vec![(0, Ty { elem, shape })]
        }
        Op::CastLike => {
            let elem = input(1).map(|t| t.elem).unwrap_or(0);
            let shape = input(0).and_then(|t| t.shape.clone());
            vec![(0, Ty { elem, shape })]
        }
        Op::Broadcast | Op::Compare => {
            let elem = if node.op == Op::Compare {
                BOOL
            } else {
                input(0).map(|t| t.elem).unwrap_or(0)
            };
            let mut shapes = Vec::with_capacity(node.inputs.len());
            for i in 0..node.inputs.len() {
                match input(i).and_then(|t| t.shape.as_deref()) {
                    Some(s) => shapes.push(s),
                    None => {
                        shapes.clear();
                        break;
                    }
                }
            }
            let shape = (!shapes.is_empty()).then(|| broadcast(&shapes));
            vec![(0, Ty { elem, shape })]
        }
    }
}

/// Runs the propagation over `nodes`, refining `env` in place.
pub(crate) fn propagate(nodes: &[RawNode], env: &mut HashMap<String, Ty>) {
    // One pass suffices for a topologically sorted graph; allow a few more
    // for files that are not sorted.
    for _ in 0..4 {
        let mut changed = false;
        for node in nodes {
            for (i, ty) in apply(node, env) {
                let Some(name) = node.outputs.get(i).filter(|n| !n.is_empty()) else {
                    continue;
                };
                let entry = env.entry(name.clone()).or_default();
                changed |= entry.refine(&ty);
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: i64) -> Dim {
        Dim::Fixed(v)
    }
    fn s(n: &str) -> Dim {
        Dim::Symbolic(n.into())
    }

    #[test]
    fn broadcasting_follows_numpy_rules() {
        assert_eq!(broadcast(&[&[s("N"), f(3)], &[f(3)]]), vec![s("N"), f(3)]);
        assert_eq!(broadcast(&[&[s("N"), f(1)], &[f(4)]]), vec![s("N"), f(4)]);
        assert_eq!(broadcast(&[&[s("N")], &[s("M")]]), vec![Dim::Unknown]);
        assert_eq!(broadcast(&[&[s("N")], &[f(1)]]), vec![s("N")]);
        assert_eq!(broadcast(&[&[Dim::Unknown], &[f(5)]]), vec![f(5)]);
        assert_eq!(broadcast(&[&[Dim::Unknown], &[f(1)]]), vec![Dim::Unknown]);
        assert_eq!(broadcast(&[&[], &[f(2), f(2)]]), vec![f(2), f(2)]);
        assert_eq!(broadcast(&[&[], &[]]), Vec::<Dim>::new());
    }

    #[test]
    fn refine_fills_only_unknowns() {
        let mut declared = Ty {
            elem: 0,
            shape: Some(vec![s("B"), Dim::Unknown]),
        };
        let inferred = Ty {
            elem: 1,
            shape: Some(vec![s("N"), f(4)]),
        };
        assert!(declared.refine(&inferred));
        assert_eq!(declared.elem, 1);
        assert_eq!(declared.shape, Some(vec![s("B"), f(4)]));
        assert!(!declared.refine(&inferred));
        // a different rank is ignored
        let mut d = Ty {
            elem: 1,
            shape: Some(vec![Dim::Unknown]),
        };
        assert!(!d.refine(&inferred));
    }

    #[test]
    fn unknown_ops_do_not_propagate() {
        assert_eq!(Op::from_name("Relu"), Some(Op::Unary));
        assert_eq!(Op::from_name("Add"), Some(Op::Broadcast));
        assert_eq!(Op::from_name("Transpose"), None);
        assert_eq!(Op::from_name("MatMul"), None);
    }
}
