//! Batch assembly: the model inputs of a batch built from its requests'
//! tensors, control values and sequence states ([`Plan::inputs_into`]),
//! and the outputs split back into per-request results
//! ([`Plan::outputs`]), reusing the memory of earlier batches and of the
//! requests themselves ([`Spare`]).

use super::driver::InFlight;
use super::plan::{Layout, Plan};
use crate::batching::controls::ControlValues;
use crate::run::input::RunRequest;
use crate::run::stack::{copy_data, put, slice_axis_into};
use crate::tensor::{Tensor, TensorData};

/// Makes entry `k` of `buf` the tensor `t` (moved; copied into the memory
/// already there when it fits, see [`put`]).
fn put_tensor(buf: &mut Vec<(String, Tensor)>, k: usize, name: &str, t: Tensor) {
    match buf.get_mut(k) {
        Some((n, old)) if n == name => {
            if copy_data(&mut old.data, &t.data) {
                old.shape = t.shape;
            } else {
                *old = t;
            }
        }
        Some(slot) => *slot = (name.to_string(), t),
        None => buf.push((name.to_string(), t)),
    }
}

/// The memory of owned requests whose tensors are in a batch already,
/// kept to hold results: a result built in it needs no new memory, and
/// the request's is not freed (see [`Driver::start`](super::driver::Driver::start)). A kept tensor holds
/// at most twice the memory its result needs, or [`Spare::SMALL`] bytes.
#[derive(Default)]
pub(super) struct Spare {
    /// Emptied lists of tensors.
    pub(super) lists: Vec<Vec<(String, Tensor)>>,
    /// Names and tensors whose contents are to be overwritten.
    pub(super) tensors: Vec<(String, Tensor)>,
}

impl Spare {
    /// At most this many lists and tensors are kept (the rest is freed).
    pub(super) const KEEP: usize = 64;
    /// Memory any result may keep, whatever its size.
    const SMALL: usize = 256;

    pub(super) fn give(&mut self, mut list: Vec<(String, Tensor)>) {
        let room = Self::KEEP.saturating_sub(self.tensors.len());
        self.tensors.extend(list.drain(..).take(room));
        if list.capacity() > 0 && self.lists.len() < Self::KEEP {
            self.lists.push(list);
        }
    }

    /// An empty list for `n` tensors.
    pub(super) fn list(&mut self, n: usize) -> Vec<(String, Tensor)> {
        self.lists.pop().unwrap_or_else(|| Vec::with_capacity(n))
    }

    /// An entry named `name` with an empty shape, and data whose memory
    /// may be reused for `bytes` bytes (its contents are to be replaced).
    fn take(&mut self, name: &str, bytes: usize) -> (String, Tensor) {
        let Some((mut n, mut t)) = self.tensors.pop() else {
            return (
                name.to_string(),
                Tensor {
                    shape: Vec::new(),
                    data: TensorData::U8(Vec::new()),
                },
            );
        };
        if n.capacity() >= name.len() {
            n.clear();
            n.push_str(name);
        } else {
            n = name.to_string();
        }
        t.shape.clear();
        if t.data.capacity_bytes() > Self::SMALL.max(bytes.saturating_mul(2)) {
            t.data = TensorData::U8(Vec::new());
        }
        (n, t)
    }

    /// `name` with a copy of `data`, its shape the concatenation of
    /// `shape`.
    pub(super) fn tensor(
        &mut self,
        name: &str,
        shape: &[&[i64]],
        data: &TensorData,
    ) -> (String, Tensor) {
        let bytes = data.len() * data.dtype().element_size().unwrap_or(0);
        let (n, mut t) = self.take(name, bytes);
        for s in shape {
            t.shape.extend_from_slice(s);
        }
        t.data.assign(data);
        (n, t)
    }
}

fn control_data(v: ControlValues) -> TensorData {
    match v {
        ControlValues::Bool(v) => TensorData::Bool(v),
        ControlValues::Int32(v) => TensorData::I32(v),
        ControlValues::Fp32(v) => TensorData::F32(v),
        ControlValues::Int64(v) => TensorData::I64(v),
        ControlValues::Uint32(v) => TensorData::U32(v),
        ControlValues::Uint64(v) => TensorData::U64(v),
        ControlValues::Bytes(v) => {
            TensorData::Bytes(v.into_iter().map(String::into_bytes).collect())
        }
    }
}

impl Plan {
    /// Stateful backend: the stacking axis of data input `name`; 0 for a
    /// name the config lacks.
    fn input_axis(&self, name: &str) -> usize {
        self.input_axes
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |&(_, a)| a)
    }

    /// Assembles the inputs of one batch into `buf` (see [`Io`](super::pool::Io)).
    pub(super) fn inputs_into(
        &mut self,
        requests: &[RunRequest],
        flight: &InFlight,
        batch: &crate::batching::Batch,
        starts: &[bool],
        buf: &mut Vec<(String, Tensor)>,
        zeros: &mut Vec<crate::run::stack::Zeros>,
    ) -> Result<(), String> {
        // Every entry written below other than by stacking forgets where
        // it held zeros.
        use crate::run::stack::Zeros;
        let first = flight
            .tags
            .iter()
            .flatten()
            .map(|&i| &requests[i])
            .next()
            .ok_or("a batch without requests")?;
        let mut k = 0;
        for (name, sample) in &first.inputs {
            // A batch of one request: its tensor as it is (copied into the
            // buffer, no intermediate tensors).
            if let [Some(_)] = flight.tags.as_slice() {
                let axis = self.input_axis(name);
                let shape = match self.layout {
                    Layout::Single => Some(&sample.shape[..]),
                    Layout::Batch if !sample.shape.is_empty() => Some(&sample.shape[..]),
                    Layout::Stateful
                        if sample.shape.first() == Some(&1) && axis + 1 < sample.shape.len() =>
                    {
                        Some(&sample.shape[1..])
                    }
                    // Errors come from the general path.
                    _ => None,
                };
                if let Some(shape) = shape {
                    Zeros::forget(zeros, k);
                    put(buf, k, name, shape, &sample.data)?;
                    k += 1;
                    continue;
                }
            }
            if self.layout == Layout::Single {
                let t = match flight.tags.first() {
                    Some(Some(i)) => requests[*i].inputs.get(name).cloned().ok_or_else(|| {
                        format!("request {}: input '{name}' is missing", requests[*i].id)
                    })?,
                    _ => return Err("a batch without requests".into()),
                };
                Zeros::forget(zeros, k);
                put_tensor(buf, k, name, t);
                k += 1;
                continue;
            }
            // Rows stacked in place into the buffer's tensor: along axis 0,
            // or (stateful backend) with each request's leading batch
            // dimension of 1 dropped, along the config's -1 axis; padding
            // rows are zeros shaped like the first request's tensor.
            let stateful = self.layout == Layout::Stateful;
            let axis = if stateful { self.input_axis(name) } else { 0 };
            let pad_shape: &[i64] = if stateful {
                sample.shape.get(1..).unwrap_or(&[])
            } else {
                &sample.shape
            };
            // Batches of up to 16 rows keep this list on the stack.
            let mut parts: smallvec::SmallVec<[(&[i64], Option<&TensorData>); 16]> =
                smallvec::SmallVec::new();
            for tag in &flight.tags {
                let Some(i) = tag else {
                    parts.push((pad_shape, None));
                    continue;
                };
                let t = requests[*i].inputs.get(name).ok_or_else(|| {
                    format!(
                        "request {}: input '{name}' is missing (other requests of its batch have it)",
                        requests[*i].id
                    )
                })?;
                if stateful {
                    if t.shape.first() != Some(&1) {
                        return Err(format!(
                            "request {}: input '{name}' has shape {:?}; the stateful backend takes requests of batch size 1",
                            requests[*i].id, t.shape
                        ));
                    }
                    parts.push((&t.shape[1..], Some(&t.data)));
                } else {
                    parts.push((&t.shape, Some(&t.data)));
                }
            }
            if !matches!(buf.get(k), Some((n, _)) if n == name) {
                let t = Tensor {
                    shape: Vec::new(),
                    data: TensorData::empty(sample.dtype()),
                };
                Zeros::forget(zeros, k);
                match buf.get_mut(k) {
                    Some(slot) => *slot = (name.clone(), t),
                    None => buf.push((name.clone(), t)),
                }
            }
            if zeros.len() <= k {
                zeros.resize(k + 1, Default::default());
            }
            crate::run::stack::concat_parts_into(
                &mut buf[k].1,
                sample.dtype(),
                &parts,
                axis,
                &mut zeros[k],
            )
            .map_err(|e| format!("input '{name}': {e}"))?;
            k += 1;
        }
        // The client's tensors were checked and stacked in the `dims`
        // shape; the model takes its reshape (only the shape changes).
        if !self.input_reshapes.is_empty() {
            let batched = self.layout == Layout::Batch;
            for (name, t) in &mut buf[..k] {
                if let Some(r) = self.input_reshapes.iter().find(|r| &r.name == name) {
                    t.shape = r.to_model(&t.shape, batched)?;
                }
            }
        }
        if let Some(reset) = &self.reset_input {
            let n = starts.len() as i64;
            // Copied in place when the buffer holds a reset tensor of this
            // size already.
            Zeros::forget(zeros, k);
            let fits = matches!(buf.get(k), Some((nm, t)) if nm == reset
                && matches!(&t.data, TensorData::Bool(v) if v.len() == starts.len()));
            if fits {
                let (_, t) = &mut buf[k];
                if let TensorData::Bool(v) = &mut t.data {
                    v.copy_from_slice(starts);
                }
                if t.shape != [n, 1] {
                    t.shape = vec![n, 1];
                }
            } else {
                let t = Tensor::new(vec![n, 1], TensorData::Bool(starts.to_vec()))
                    .map_err(|e| e.to_string())?;
                put_tensor(buf, k, reset, t);
            }
            k += 1;
        } else if let Some(spec) = &self.controls {
            let records = batch.executed_slot_records();
            for c in spec.tensors(&records)? {
                if !self.session_inputs.contains(&c.name) {
                    continue;
                }
                let t = Tensor::new(c.shape, control_data(c.data)).map_err(|e| e.to_string())?;
                Zeros::forget(zeros, k);
                put_tensor(buf, k, &c.name, t);
                k += 1;
            }
        }
        if !self.store.specs().is_empty() {
            k = self
                .store
                .gather_into(&flight.keys, buf, k, zeros)
                .map_err(|e| e.to_string())?;
        }
        buf.truncate(k);
        zeros.truncate(k);
        Ok(())
    }

    /// Splits the outputs of one batch per row into `per_row` (one entry
    /// per row of the batch, `None` for padding rows); stores the states.
    pub(super) fn outputs(
        &mut self,
        flight: &InFlight,
        outs: &[(String, Tensor)],
        per_row: &mut Vec<Option<Vec<(String, Tensor)>>>,
        spare: &mut Spare,
    ) -> Result<(), String> {
        per_row.clear();
        if outs.len() != self.session_outputs {
            return Err(format!(
                "the model returned {} outputs instead of {}",
                outs.len(),
                self.session_outputs
            ));
        }
        if !self.store.specs().is_empty() {
            let at = &self.state_at;
            self.store
                .scatter_with(&flight.keys, |i, name| {
                    let (n, t) = &outs[at[i]];
                    debug_assert_eq!(n, name);
                    Some(t)
                })
                .map_err(|e| e.to_string())?;
        }
        let rows = flight.tags.len();
        let n = self.outputs.len();
        per_row.extend(flight.tags.iter().map(|t| t.map(|_| spare.list(n))));
        for (((name, &at), &axis), reshape) in self
            .outputs
            .iter()
            .zip(&self.output_at)
            .zip(&self.output_axes)
            .zip(&self.output_reshapes)
        {
            let (n, t) = &outs[at];
            debug_assert_eq!(n, name);
            match self.layout {
                Layout::Single => {
                    if let Some(Some(o)) = per_row.first_mut() {
                        let mut piece = spare.tensor(name, &[&t.shape], &t.data);
                        // The model gives the reshape shape; the client
                        // gets `dims`.
                        if let Some(r) = reshape {
                            piece.1.shape = r.to_client(&t.shape, false)?;
                        }
                        o.push(piece);
                    }
                }
                Layout::Batch => {
                    if let Some(r) = reshape {
                        // Checked on the whole batch first, so that a
                        // model output of the wrong rank fails before the
                        // rows are split.
                        r.to_client(&t.shape, true)?;
                    }
                    let mut start = 0;
                    for (&s, o) in flight.sizes.iter().zip(per_row.iter_mut()) {
                        let mut piece = t.rows(start, s).map_err(|e| {
                            format!("output '{name}' with shape {:?}: {e}", t.shape)
                        })?;
                        start += s;
                        if let Some(o) = o {
                            if let Some(r) = reshape {
                                piece.shape = r.to_client(&piece.shape, true)?;
                            }
                            o.push((name.clone(), piece));
                        }
                    }
                }
                Layout::Stateful => {
                    // Each real row's piece (padding rows are dropped), with
                    // the request's batch axis of 1 put back.
                    if rows == 1 && t.shape.get(axis) == Some(&1) {
                        // One row: the whole tensor.
                        if let Some(Some(o)) = per_row.first_mut() {
                            o.push(spare.tensor(name, &[&[1], &t.shape], &t.data));
                        }
                        continue;
                    }
                    if t.shape.get(axis) != Some(&(rows as i64)) {
                        return Err(format!(
                            "output '{name}' with shape {:?}: expected {rows} rows along axis {axis}",
                            t.shape
                        ));
                    }
                    let bytes = (t.data.len() / rows) * t.dtype().element_size().unwrap_or(0);
                    for (j, o) in per_row.iter_mut().enumerate() {
                        let Some(o) = o else {
                            continue;
                        };
                        let (n, mut piece) = spare.take(name, bytes);
                        slice_axis_into(&mut piece.data, &t.data, &t.shape, axis, j, 1).map_err(
                            |e| format!("output '{name}' with shape {:?}: {e}", t.shape),
                        )?;
                        piece.shape.push(1);
                        piece.shape.extend_from_slice(&t.shape);
                        piece.shape[axis + 1] = 1;
                        o.push((n, piece));
                    }
                }
            }
        }
        Ok(())
    }
}
