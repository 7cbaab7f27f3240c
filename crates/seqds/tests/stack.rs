//! `Stack` against a `Vec` model.

use nr_core::Dispatch;
use proptest::prelude::*;
use seqds::{Stack, StackRead, StackResponse, StackWrite};

#[derive(Clone, Copy, Debug)]
enum Step {
    Read(StackRead),
    Write(StackWrite),
}

fn steps(max_len: usize) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        3 => any::<u64>().prop_map(|v| Step::Write(StackWrite::Push(v))),
        3 => Just(Step::Write(StackWrite::Pop)),
        1 => Just(Step::Read(StackRead::Peek)),
        1 => Just(Step::Read(StackRead::Len)),
    ];
    prop::collection::vec(step, 0..max_len)
}

fn model_step(model: &mut Vec<u64>, step: Step) -> StackResponse {
    match step {
        Step::Read(StackRead::Peek) => StackResponse::Top(model.last().copied()),
        Step::Read(StackRead::Len) => StackResponse::Len(model.len()),
        Step::Write(StackWrite::Push(v)) => {
            model.push(v);
            StackResponse::Pushed
        }
        Step::Write(StackWrite::Pop) => StackResponse::Popped(model.pop()),
    }
}

fn apply(stack: &mut Stack, step: Step) -> StackResponse {
    match step {
        Step::Read(op) => stack.dispatch(op),
        Step::Write(op) => stack.dispatch_mut(op),
    }
}

proptest! {
    #[test]
    fn matches_vec(prefill in 0usize..20, steps in steps(300)) {
        let mut stack = Stack::with_items(prefill);
        let mut model: Vec<u64> = (0..prefill as u64).collect();
        for (i, &step) in steps.iter().enumerate() {
            prop_assert_eq!(apply(&mut stack, step), model_step(&mut model, step), "step {}", i);
        }
        prop_assert_eq!(stack.as_slice(), model.as_slice());
    }

    #[test]
    fn two_instances_give_identical_responses(steps in steps(300)) {
        let (mut a, mut b) = (Stack::with_items(10), Stack::with_items(10));
        for &step in &steps {
            prop_assert_eq!(apply(&mut a, step), apply(&mut b, step));
        }
    }
}

#[test]
fn debug_is_terse() {
    assert_eq!(
        format!("{:?}", Stack::with_items(1000)),
        "Stack { len: 1000, top: Some(999), .. }"
    );
}
