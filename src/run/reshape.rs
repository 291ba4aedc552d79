//! `reshape` as Triton applies it around a backend (docs/spec/validation.md
//! on `reshape`; docs/spec/v2-protocol.md for the shapes a client sees).
//!
//! A request's input has the config shape (`dims`, after the batch
//! dimension when `max_batch_size > 0`): that is what the request checks
//! compare. Before the backend sees it, Triton gives it the `reshape`
//! shape instead, each `-1` of the reshape taking, in order, the value the
//! request gave a `-1` of `dims`; the backend stacks the requests along the
//! batch dimension as usual. An output with a `reshape` is produced by the
//! model in the reshape shape; each response's piece goes back to the
//! client in the `dims` shape, the `-1` of `dims` taking the values of the
//! `-1` of the reshape in order. A reshape only reinterprets the data: the
//! `validate` rules (reshape-size-mismatch, reshape-variable-dims-mismatch)
//! make both shapes hold the same number of elements.

use crate::schema::inference::ModelConfig;

/// One tensor's two shapes, without the batch dimension (the fields of
/// `crate::model::Io` for a reshaped tensor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reshape {
    pub name: String,
    /// `dims`: the shape the client sends or receives.
    pub dims: Vec<i64>,
    /// `reshape.shape`: the shape the model takes or gives.
    pub model_dims: Vec<i64>,
}

impl Reshape {
    /// The inputs of `cfg` whose shape the model sees differently, in
    /// config order (from the loaded model's form, `model::inputs_of`).
    pub fn inputs(cfg: &ModelConfig) -> Vec<Reshape> {
        Self::reshaped(crate::model::inputs_of(cfg))
    }

    /// The outputs of `cfg` whose shape the model produces differently, in
    /// config order (`model::outputs_of`).
    pub fn outputs(cfg: &ModelConfig) -> Vec<Reshape> {
        Self::reshaped(crate::model::outputs_of(cfg))
    }

    fn reshaped(io: Vec<crate::model::Io>) -> Vec<Reshape> {
        io.into_iter()
            .filter(crate::model::Io::reshaped)
            .map(|io| Reshape {
                name: io.name,
                dims: io.dims,
                model_dims: io.model_dims,
            })
            .collect()
    }

    /// An input's shape as the model takes it: `shape` (the client's, with
    /// the batch dimension first when `batched`) rewritten from `dims` to
    /// the reshape.
    pub fn to_model(&self, shape: &[i64], batched: bool) -> Result<Vec<i64>, String> {
        map_shape(shape, batched, &self.dims, &self.model_dims).map_err(|e| {
            format!(
                "input '{}' with shape {shape:?} cannot take its reshape {:?} (dims {:?}): {e}",
                self.name, self.model_dims, self.dims
            )
        })
    }

    /// An output's shape as the client receives it: `shape` (the model's,
    /// with the batch dimension first when `batched`) rewritten from the
    /// reshape to `dims`.
    pub fn to_client(&self, shape: &[i64], batched: bool) -> Result<Vec<i64>, String> {
        map_shape(shape, batched, &self.model_dims, &self.dims).map_err(|e| {
            format!(
                "output '{}' with shape {shape:?} does not match its reshape {:?} (dims {:?}): {e}",
                self.name, self.model_dims, self.dims
            )
        })
    }
}

/// `shape` (a batch dimension first when `batched`, then one dimension per
/// entry of `from`) rewritten to `to`: the batch dimension is kept, each
/// fixed entry of `to` is itself and each `-1` of `to` takes the next of
/// the values `shape` has where `from` has `-1`. Fails when `shape` does
/// not have the rank of `from`, when `to` has more `-1` than `from`, or
/// when the two shapes hold different numbers of elements.
pub fn map_shape(
    shape: &[i64],
    batched: bool,
    from: &[i64],
    to: &[i64],
) -> Result<Vec<i64>, String> {
    let (lead, rest) = if batched {
        shape
            .split_first()
            .map(|(b, r)| (Some(*b), r))
            .ok_or("it has no batch dimension")?
    } else {
        (None, shape)
    };
    if rest.len() != from.len() {
        let after = if batched {
            " after the batch dimension"
        } else {
            ""
        };
        return Err(format!("expected {} dimensions{after}", from.len()));
    }
    let mut variable = rest
        .iter()
        .zip(from)
        .filter(|(_, &f)| f == -1)
        .map(|(&s, _)| s);
    let mut out = Vec::with_capacity(to.len() + usize::from(batched));
    out.extend(lead);
    for &d in to {
        if d == -1 {
            out.push(
                variable
                    .next()
                    .ok_or("the reshape has more variable-size dimensions than dims")?,
            );
        } else {
            out.push(d);
        }
    }
    let count = |s: &[i64]| {
        s.iter()
            .try_fold(1i64, |n, &d| (d >= 0).then(|| n.checked_mul(d)).flatten())
    };
    match (count(rest), count(&out[usize::from(batched)..])) {
        (Some(a), Some(b)) if a == b => Ok(out),
        (Some(a), Some(b)) => Err(format!("{a} elements against {b}")),
        _ => Err("a dimension is negative or the element count overflows".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(dims: &[i64], model_dims: &[i64]) -> Reshape {
        Reshape {
            name: "X".into(),
            dims: dims.to_vec(),
            model_dims: model_dims.to_vec(),
        }
    }

    #[test]
    fn an_empty_reshape_drops_the_one_dimension_and_keeps_the_batch() {
        // autoconfig's form for a [batch]-shaped model: dims [1], reshape [].
        let x = r(&[1], &[]);
        assert_eq!(x.to_model(&[5, 1], true).unwrap(), vec![5]);
        assert_eq!(x.to_client(&[5], true).unwrap(), vec![5, 1]);
        assert_eq!(x.to_client(&[1], true).unwrap(), vec![1, 1]);
    }

    #[test]
    fn without_batching_the_whole_shape_is_rewritten() {
        let x = r(&[2, 3], &[6]);
        assert_eq!(x.to_model(&[2, 3], false).unwrap(), vec![6]);
        assert_eq!(x.to_client(&[6], false).unwrap(), vec![2, 3]);
        // With batching the same reshape leaves the batch dimension alone.
        assert_eq!(x.to_model(&[4, 2, 3], true).unwrap(), vec![4, 6]);
        assert_eq!(x.to_client(&[4, 6], true).unwrap(), vec![4, 2, 3]);
    }

    #[test]
    fn variable_dimensions_carry_their_values_over_in_order() {
        // The example of reshape-variable-dims-mismatch's documentation:
        // [2,4,-1,6] <-> [8,-1,1,6], 8 and 6 on both sides.
        let x = r(&[2, 4, -1, 6], &[8, -1, 1, 6]);
        assert_eq!(
            x.to_model(&[3, 2, 4, 7, 6], true).unwrap(),
            vec![3, 8, 7, 1, 6]
        );
        assert_eq!(
            x.to_client(&[3, 8, 7, 1, 6], true).unwrap(),
            vec![3, 2, 4, 7, 6]
        );
        // Two variable dimensions, first to first and second to second.
        let y = r(&[-1, 4, -1], &[-1, 2, 2, -1]);
        assert_eq!(y.to_model(&[5, 4, 9], false).unwrap(), vec![5, 2, 2, 9]);
        assert_eq!(y.to_client(&[5, 2, 2, 9], false).unwrap(), vec![5, 4, 9]);
    }

    #[test]
    fn shapes_that_do_not_fit_are_errors_not_garbage() {
        let x = r(&[1], &[]);
        // The model gave a rank the reshape does not have.
        let e = x.to_client(&[5, 1], true).unwrap_err();
        assert!(e.contains("output 'X'") && e.contains("[5, 1]"), "{e}");
        assert!(x
            .to_model(&[], true)
            .unwrap_err()
            .contains("no batch dimension"));
        // More -1 in the target than in the source.
        let y = r(&[4], &[-1, 2]);
        assert!(y
            .to_model(&[4], false)
            .unwrap_err()
            .contains("more variable-size"));
        // Element counts differ (validate refuses such a config; the runner
        // still reports instead of handing ONNX Runtime a wrong shape).
        let z = r(&[-1, 2], &[-1, 3]);
        assert!(z
            .to_model(&[2, 2], false)
            .unwrap_err()
            .contains("4 elements against 6"));
        assert!(z.to_model(&[-5, 2], false).is_err());
    }
}
