//! Priority queues against a `BinaryHeap` model.

use nr_core::Dispatch;
use proptest::prelude::*;
use seqds::{InvariantError, PqRead, PqResponse, PqWrite};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One step of a test: a read or a write.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    Read(PqRead),
    Write(PqWrite),
}

/// Steps over a small key range (so duplicates are common) with deletes as likely as inserts.
pub fn steps(max_len: usize) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        4 => (0u64..40).prop_map(|k| Step::Write(PqWrite::Insert(k))),
        3 => Just(Step::Write(PqWrite::DeleteMin)),
        2 => Just(Step::Read(PqRead::FindMin)),
        1 => Just(Step::Read(PqRead::Len)),
    ];
    prop::collection::vec(step, 0..max_len)
}

/// The model's answer to `step`.
pub fn model_step(model: &mut BinaryHeap<Reverse<u64>>, step: Step) -> PqResponse {
    match step {
        Step::Read(PqRead::FindMin) => PqResponse::Min(model.peek().map(|r| r.0)),
        Step::Read(PqRead::Len) => PqResponse::Len(model.len()),
        Step::Write(PqWrite::Insert(k)) => {
            model.push(Reverse(k));
            PqResponse::Inserted
        }
        Step::Write(PqWrite::DeleteMin) => PqResponse::Deleted(model.pop().map(|r| r.0)),
    }
}

/// Applies `step` to a queue.
pub fn apply<Q>(q: &mut Q, step: Step) -> PqResponse
where
    Q: for<'a> Dispatch<
            ReadOperation<'a> = PqRead,
            WriteOperation = PqWrite,
            Response = PqResponse,
        > + 'static,
{
    match step {
        Step::Read(op) => q.dispatch(op),
        Step::Write(op) => q.dispatch_mut(op),
    }
}

/// Runs `steps` on `q` and the model (which starts with the keys of `q`, given as `initial`) side
/// by side, checking every response and, if `check_each`, the structure after every step; finally
/// drains both and compares.
pub fn run_against_model<Q>(
    mut q: Q,
    initial: &[u64],
    steps: &[Step],
    check: impl Fn(&Q) -> Result<(), InvariantError>,
    check_each: bool,
) -> Result<(), TestCaseError>
where
    Q: for<'a> Dispatch<
            ReadOperation<'a> = PqRead,
            WriteOperation = PqWrite,
            Response = PqResponse,
        > + 'static,
{
    let mut model: BinaryHeap<Reverse<u64>> = initial.iter().map(|&k| Reverse(k)).collect();
    for (i, &step) in steps.iter().enumerate() {
        let got = apply(&mut q, step);
        let want = model_step(&mut model, step);
        prop_assert_eq!(got, want, "step {} ({:?})", i, step);
        if check_each {
            if let Err(e) = check(&q) {
                return Err(TestCaseError::fail(format!(
                    "after step {i} ({step:?}): {e}"
                )));
            }
        }
    }
    check(&q).map_err(|e| TestCaseError::fail(e.to_string()))?;
    loop {
        let got = q.dispatch_mut(PqWrite::DeleteMin);
        let want = PqResponse::Deleted(model.pop().map(|r| r.0));
        prop_assert_eq!(got, want);
        if got == PqResponse::Deleted(None) {
            break;
        }
    }
    check(&q).map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(())
}

/// Applies `steps` to `a` and `b` and checks that every response is the same.
pub fn run_twins<Q>(mut a: Q, mut b: Q, steps: &[Step]) -> Result<(), TestCaseError>
where
    Q: for<'x> Dispatch<
            ReadOperation<'x> = PqRead,
            WriteOperation = PqWrite,
            Response = PqResponse,
        > + 'static,
{
    for &step in steps {
        prop_assert_eq!(apply(&mut a, step), apply(&mut b, step));
    }
    Ok(())
}
