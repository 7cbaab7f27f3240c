//! Dictionaries against a `BTreeMap` model.

use nr_core::Dispatch;
use proptest::prelude::*;
use seqds::{InvariantError, MapRead, MapResponse, MapWrite};
use std::collections::BTreeMap;

/// One step of a test: a read or a write.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    Read(MapRead),
    Write(MapWrite),
}

/// Steps over keys `0..keys` (small, so hits, replacements and repeated removes are common).
pub fn steps(keys: u64, max_len: usize) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        3 => (0..keys, any::<u64>()).prop_map(|(k, v)| Step::Write(MapWrite::Put(k, v))),
        3 => (0..keys).prop_map(|k| Step::Write(MapWrite::Remove(k))),
        2 => (0..keys).prop_map(|k| Step::Read(MapRead::Get(k))),
        1 => (0..keys).prop_map(|k| Step::Read(MapRead::Contains(k))),
        1 => Just(Step::Read(MapRead::Len)),
    ];
    prop::collection::vec(step, 0..max_len)
}

/// The model's answer to `step`.
pub fn model_step(model: &mut BTreeMap<u64, u64>, step: Step) -> MapResponse {
    match step {
        Step::Read(MapRead::Get(k)) => MapResponse::Get(model.get(&k).copied()),
        Step::Read(MapRead::Contains(k)) => MapResponse::Contains(model.contains_key(&k)),
        Step::Read(MapRead::Len) => MapResponse::Len(model.len()),
        Step::Write(MapWrite::Put(k, v)) => MapResponse::Put(model.insert(k, v)),
        Step::Write(MapWrite::Remove(k)) => MapResponse::Removed(model.remove(&k)),
    }
}

/// Applies `step` to a map.
pub fn apply<M>(m: &mut M, step: Step) -> MapResponse
where
    M: for<'a> Dispatch<
            ReadOperation<'a> = MapRead,
            WriteOperation = MapWrite,
            Response = MapResponse,
        > + 'static,
{
    match step {
        Step::Read(op) => m.dispatch(op),
        Step::Write(op) => m.dispatch_mut(op),
    }
}

/// Runs `steps` on `m` and the model (which starts as `initial`, the entries of `m`) side by
/// side, checking every response and, if `check_each`, the structure after every step; returns
/// the final model.
pub fn run_against_model<M>(
    m: &mut M,
    initial: BTreeMap<u64, u64>,
    steps: &[Step],
    check: impl Fn(&M) -> Result<(), InvariantError>,
    check_each: bool,
) -> Result<BTreeMap<u64, u64>, TestCaseError>
where
    M: for<'a> Dispatch<
            ReadOperation<'a> = MapRead,
            WriteOperation = MapWrite,
            Response = MapResponse,
        > + 'static,
{
    let mut model = initial;
    for (i, &step) in steps.iter().enumerate() {
        let got = apply(m, step);
        let want = model_step(&mut model, step);
        prop_assert_eq!(got, want, "step {} ({:?})", i, step);
        if check_each {
            if let Err(e) = check(m) {
                return Err(TestCaseError::fail(format!(
                    "after step {i} ({step:?}): {e}"
                )));
            }
        }
    }
    check(m).map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(model)
}

/// Applies `steps` to `a` and `b` and checks that every response is the same.
pub fn run_twins<M>(mut a: M, mut b: M, steps: &[Step]) -> Result<(), TestCaseError>
where
    M: for<'x> Dispatch<
            ReadOperation<'x> = MapRead,
            WriteOperation = MapWrite,
            Response = MapResponse,
        > + 'static,
{
    for &step in steps {
        prop_assert_eq!(apply(&mut a, step), apply(&mut b, step));
    }
    Ok(())
}
