//! [`StateStore`]: the states of the live sequences of a run, kept per
//! sequence and gathered into (and scattered from) the batched state
//! tensors of each execution.

use super::{StateError, StateSpec};
use crate::batching::FxMap;
use crate::inputs::codec::{f16_to_f32, f32_to_f16};
use crate::run::stack::stack;
use crate::tensor::{Tensor, TensorData, TensorError};
use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;

/// The states of the live sequences, keyed by an opaque sequence key.
///
/// Every sequence has its own copy of every state; batches are assembled
/// from (and taken apart into) those copies, so no row of one sequence can
/// reach another.
#[derive(Debug, Clone)]
pub struct StateStore<K> {
    specs: Vec<StateSpec>,
    fp16_storage: bool,
    /// Fx-hashed: sequence keys are the scheduler's handles, hashed on
    /// every step.
    seqs: FxMap<K, Vec<Tensor>>,
}

impl<K: Eq + Hash + Clone + fmt::Debug> StateStore<K> {
    pub fn new(specs: Vec<StateSpec>) -> Self {
        StateStore {
            specs,
            fp16_storage: false,
            seqs: FxMap::default(),
        }
    }

    /// Rounds stored FP32 states to FP16 precision, as the stateful
    /// backend's `store_states_as_fp16: "1"` does.
    pub fn with_fp16_storage(mut self, on: bool) -> Self {
        self.fp16_storage = on;
        self
    }

    pub fn specs(&self) -> &[StateSpec] {
        &self.specs
    }

    /// Number of live sequences.
    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    pub fn contains(&self, key: &K) -> bool {
        self.seqs.contains_key(key)
    }

    /// The states of one sequence (per spec, without the batch axis).
    pub fn get(&self, key: &K) -> Option<&[Tensor]> {
        self.seqs.get(key).map(Vec::as_slice)
    }

    /// (Re)starts a sequence from the initial values. Returns whether the
    /// key held state before.
    pub fn reset(&mut self, key: K) -> bool {
        let fresh = self.specs.iter().map(|s| s.initial.clone()).collect();
        self.seqs.insert(key, fresh).is_some()
    }

    /// Forgets a sequence. Returns whether it was live.
    pub fn release(&mut self, key: &K) -> bool {
        self.seqs.remove(key).is_some()
    }

    fn check_unique(keys: &[Option<K>]) -> Result<(), StateError> {
        // Padded batches often hold one sequence: nothing to compare.
        if keys.iter().flatten().nth(1).is_none() {
            return Ok(());
        }
        // Batches are small: pairwise comparison, no set to allocate.
        if keys.len() <= 32 {
            for (j, k) in keys.iter().enumerate() {
                if let Some(k) = k {
                    if keys[..j].iter().flatten().any(|o| o == k) {
                        return Err(StateError::DuplicateSequence(format!("{k:?}")));
                    }
                }
            }
            return Ok(());
        }
        let mut seen = HashSet::with_capacity(keys.len());
        for k in keys.iter().flatten() {
            if !seen.insert(k) {
                return Err(StateError::DuplicateSequence(format!("{k:?}")));
            }
        }
        Ok(())
    }

    /// [`StateStore::gather`] into entries `k..` of `buf`, reusing the
    /// memory of the tensors already there (see [`crate::run::stack::put`]).
    /// `zeros[i]` tells where entry `i` of `buf` holds zeros (see
    /// [`crate::run::stack::Zeros`]): padding rows already zero are not written
    /// again. Returns the index after the last entry written.
    // Used by the runner (feature `run`) alone.
    #[cfg_attr(not(feature = "run"), allow(dead_code))]
    pub(crate) fn gather_into(
        &self,
        keys: &[Option<K>],
        buf: &mut Vec<(String, Tensor)>,
        k: usize,
        zeros: &mut Vec<crate::run::stack::Zeros>,
    ) -> Result<usize, StateError> {
        if let [Some(key)] = keys {
            // One sequence: its states as they are, with a batch axis of 1.
            let states = self.states_of(key)?;
            // Shapes of up to 8 dimensions stay on the stack.
            let mut shape: smallvec::SmallVec<[i64; 8]> = smallvec::SmallVec::new();
            for (i, spec) in self.specs.iter().enumerate() {
                let t = &states[i];
                shape.clear();
                shape.extend_from_slice(&t.shape);
                if let Some(axis) = spec.batch_axis {
                    if axis > shape.len() {
                        return Err(StateError::Tensor(TensorError::Shape(t.shape.clone())));
                    }
                    shape.insert(axis, 1);
                }
                crate::run::stack::Zeros::forget(zeros, k + i);
                crate::run::stack::put(buf, k + i, &spec.input_name, &shape, &t.data)
                    .map_err(StateError::Batch)?;
            }
            return Ok(k + self.specs.len());
        }
        // Several rows: stacked in place into the buffer's tensors.
        Self::check_unique(keys)?;
        if zeros.len() < k + self.specs.len() {
            zeros.resize(k + self.specs.len(), Default::default());
        }
        // Batches of up to 16 rows keep these lists on the stack.
        let mut rows: smallvec::SmallVec<[Option<&Vec<Tensor>>; 16]> = smallvec::SmallVec::new();
        for k in keys {
            rows.push(match k {
                Some(k) => Some(self.states_of(k)?),
                None => None,
            });
        }
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(axis) = spec.batch_axis else {
                return Err(StateError::Batch(format!(
                    "state '{}': a model without batching runs one sequence at a time, \
                     not a batch of {}",
                    spec.input_name,
                    keys.len()
                )));
            };
            let reference = rows
                .iter()
                .flatten()
                .map(|s| &s[i])
                .next()
                .unwrap_or(&spec.initial);
            for t in rows.iter().flatten().map(|s| &s[i]) {
                if !std::ptr::eq(t, reference)
                    && (t.shape != reference.shape || t.dtype() != reference.dtype())
                {
                    return Err(StateError::Batch(format!(
                        "state '{}' cannot be batched: sequences hold {} {:?} and {} {:?}",
                        spec.input_name,
                        reference.dtype(),
                        reference.shape,
                        t.dtype(),
                        t.shape
                    )));
                }
            }
            if axis > reference.shape.len() {
                return Err(StateError::Tensor(TensorError::Shape(
                    reference.shape.clone(),
                )));
            }
            let outer = crate::tensor::element_count(&reference.shape[..axis])
                .ok_or_else(|| StateError::Tensor(TensorError::Shape(reference.shape.clone())))?;
            let chunk = crate::tensor::element_count(&reference.shape[axis..])
                .ok_or_else(|| StateError::Tensor(TensorError::Shape(reference.shape.clone())))?;
            let mut parts: smallvec::SmallVec<[(Option<&TensorData>, usize); 16]> =
                smallvec::SmallVec::new();
            for r in &rows {
                parts.push((r.map(|s| &s[i].data), chunk));
            }
            let at = k + i;
            if !matches!(buf.get(at), Some((n, _)) if *n == spec.input_name) {
                let t = Tensor {
                    shape: Vec::new(),
                    data: TensorData::empty(reference.dtype()),
                };
                crate::run::stack::Zeros::forget(zeros, at);
                match buf.get_mut(at) {
                    Some(slot) => *slot = (spec.input_name.clone(), t),
                    None => buf.push((spec.input_name.clone(), t)),
                }
            }
            let dst = &mut buf[at].1;
            crate::run::stack::interleave_into(
                &mut dst.data,
                reference.dtype(),
                &parts,
                outer,
                &mut zeros[at],
            )?;
            dst.shape.clear();
            dst.shape.extend_from_slice(&reference.shape);
            dst.shape.insert(axis, keys.len() as i64);
        }
        Ok(k + self.specs.len())
    }

    fn states_of(&self, key: &K) -> Result<&Vec<Tensor>, StateError> {
        self.seqs
            .get(key)
            .ok_or_else(|| StateError::UnknownSequence(format!("{key:?}")))
    }

    /// The batched state inputs of one run, as `(input name, tensor)` in
    /// spec order. Row *j* (along each spec's batch axis) belongs to
    /// `keys[j]`; `None` is a padding row, filled with zeros.
    pub fn gather(&self, keys: &[Option<K>]) -> Result<Vec<(String, Tensor)>, StateError> {
        Self::check_unique(keys)?;
        let rows: Vec<Option<&Vec<Tensor>>> = keys
            .iter()
            .map(|k| k.as_ref().map(|k| self.states_of(k)).transpose())
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(self.specs.len());
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(axis) = spec.batch_axis else {
                let [Some(states)] = rows.as_slice() else {
                    return Err(StateError::Batch(format!(
                        "state '{}': a model without batching runs one sequence at a time, \
                         not a batch of {}",
                        spec.input_name,
                        keys.len()
                    )));
                };
                out.push((spec.input_name.clone(), states[i].clone()));
                continue;
            };
            let real: Vec<&Tensor> = rows.iter().flatten().map(|s| &s[i]).collect();
            let reference = real.first().copied().unwrap_or(&spec.initial);
            for t in &real {
                if t.shape != reference.shape || t.dtype() != reference.dtype() {
                    return Err(StateError::Batch(format!(
                        "state '{}' cannot be batched: sequences hold {} {:?} and {} {:?}",
                        spec.input_name,
                        reference.dtype(),
                        reference.shape,
                        t.dtype(),
                        t.shape
                    )));
                }
            }
            let padding = Tensor::zeros(reference.dtype(), reference.shape.clone())?;
            let parts: Vec<&Tensor> = rows.iter().map(|r| r.map_or(&padding, |s| &s[i])).collect();
            out.push((spec.input_name.clone(), stack(&parts, axis)?));
        }
        Ok(out)
    }

    /// Stores the state outputs of one run: `output(name)` gives the
    /// model's output tensor `name`; row *j* goes to `keys[j]`, padding
    /// rows (`None`) are dropped. Nothing is stored when an error is
    /// returned.
    pub fn scatter<'a>(
        &mut self,
        keys: &[Option<K>],
        output: impl Fn(&str) -> Option<&'a Tensor>,
    ) -> Result<(), StateError> {
        self.scatter_with(keys, |_, name| output(name))
    }

    /// [`StateStore::scatter`] with `output(i, name)` giving the output of
    /// spec `i` (named `name`).
    pub fn scatter_with<'a>(
        &mut self,
        keys: &[Option<K>],
        output: impl Fn(usize, &str) -> Option<&'a Tensor>,
    ) -> Result<(), StateError> {
        if let [Some(key)] = keys {
            if self.scatter_one(key, &output)? {
                return Ok(());
            }
        }
        Self::check_unique(keys)?;
        for k in keys.iter().flatten() {
            self.states_of(k)?;
        }
        // Every check first, so that an error leaves the store as it was;
        // then the rows are copied into the stored tensors in place.
        let mut outputs: smallvec::SmallVec<[&Tensor; 4]> = smallvec::SmallVec::new();
        for (i, spec) in self.specs.iter().enumerate() {
            let t = output(i, &spec.output_name).ok_or_else(|| {
                StateError::Batch(format!(
                    "the model did not return the state output '{}'",
                    spec.output_name
                ))
            })?;
            match spec.batch_axis {
                None if keys.len() != 1 => {
                    return Err(StateError::Batch(format!(
                        "state '{}': a model without batching runs one sequence at a \
                         time, not a batch of {}",
                        spec.output_name,
                        keys.len()
                    )));
                }
                None => {}
                Some(axis) => {
                    if t.shape.get(axis) != Some(&(keys.len() as i64)) {
                        return Err(StateError::Batch(format!(
                            "state output '{}' has shape {:?}; expected {} rows along axis {axis}",
                            spec.output_name,
                            t.shape,
                            keys.len()
                        )));
                    }
                    if crate::tensor::element_count(&t.shape) != Some(t.data.len()) {
                        return Err(StateError::Tensor(TensorError::Shape(t.shape.clone())));
                    }
                }
            }
            outputs.push(t);
        }
        let fp16 = self.fp16_storage;
        for (i, (spec, t)) in self.specs.iter().zip(outputs).enumerate() {
            for (j, key) in keys.iter().enumerate() {
                let Some(states) = key.as_ref().and_then(|k| self.seqs.get_mut(k)) else {
                    continue;
                };
                let dst = &mut states[i];
                match spec.batch_axis {
                    None => {
                        if !crate::run::stack::copy_data(&mut dst.data, &t.data) {
                            dst.data = t.data.clone();
                        }
                        if dst.shape != t.shape {
                            dst.shape.clone_from(&t.shape);
                        }
                    }
                    Some(axis) => {
                        crate::run::stack::slice_axis_into(
                            &mut dst.data,
                            &t.data,
                            &t.shape,
                            axis,
                            j,
                            1,
                        )?;
                        dst.shape.clear();
                        dst.shape.extend(
                            t.shape
                                .iter()
                                .enumerate()
                                .filter(|&(d, _)| d != axis)
                                .map(|(_, &v)| v),
                        );
                    }
                }
                if fp16 {
                    if let TensorData::F32(v) = &mut dst.data {
                        for x in v.iter_mut() {
                            *x = f16_to_f32(f32_to_f16(*x));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// [`StateStore::scatter`] of a single sequence, copying the outputs
    /// into the stored tensors in place. `Ok(false)` (nothing stored) when
    /// the general path has to handle it (errors, changed types or sizes).
    fn scatter_one<'a>(
        &mut self,
        key: &K,
        output: &impl Fn(usize, &str) -> Option<&'a Tensor>,
    ) -> Result<bool, StateError> {
        let Some(states) = self.seqs.get_mut(key) else {
            return Err(StateError::UnknownSequence(format!("{key:?}")));
        };
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(t) = output(i, &spec.output_name) else {
                return Ok(false);
            };
            let fits = match spec.batch_axis {
                None => true,
                Some(axis) => t.shape.get(axis) == Some(&1),
            };
            if !fits
                || t.data.dtype() != states[i].data.dtype()
                || t.data.len() != states[i].data.len()
            {
                return Ok(false);
            }
        }
        let fp16 = self.fp16_storage;
        for (i, spec) in self.specs.iter().enumerate() {
            let Some(t) = output(i, &spec.output_name) else {
                continue;
            };
            let dst = &mut states[i];
            crate::run::stack::copy_data(&mut dst.data, &t.data);
            let rank = t.shape.len() - usize::from(spec.batch_axis.is_some());
            if dst.shape.len() != rank
                || t.shape
                    .iter()
                    .enumerate()
                    .filter(|(d, _)| Some(*d) != spec.batch_axis)
                    .zip(&dst.shape)
                    .any(|((_, a), b)| a != b)
            {
                dst.shape = t
                    .shape
                    .iter()
                    .enumerate()
                    .filter(|(d, _)| Some(*d) != spec.batch_axis)
                    .map(|(_, &v)| v)
                    .collect();
            }
            if fp16 {
                if let TensorData::F32(v) = &mut dst.data {
                    for x in v.iter_mut() {
                        *x = f16_to_f32(f32_to_f16(*x));
                    }
                }
            }
        }
        Ok(true)
    }
}
