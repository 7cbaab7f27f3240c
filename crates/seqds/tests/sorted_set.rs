//! `SortedSet` against a naive model: a `BTreeMap` of scores, ranks from a sorted `Vec`.

use nr_core::Dispatch;
use proptest::prelude::*;
use seqds::{ScoreOverflow, SortedSet, SortedSetRead, SortedSetResponse, SortedSetWrite};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug)]
enum Step {
    Read(SortedSetRead),
    Write(SortedSetWrite),
}

/// Members `0..members`, scores and increments in a small range so equal scores (ordered by
/// member) are common.
fn steps(members: u64, max_len: usize) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        4 => (0..members, -8i64..8).prop_map(|(member, delta)| {
            Step::Write(SortedSetWrite::ZIncrBy { member, delta })
        }),
        2 => (0..members, -20i64..20).prop_map(|(member, score)| {
            Step::Write(SortedSetWrite::ZAdd { member, score })
        }),
        2 => (0..members).prop_map(|m| Step::Write(SortedSetWrite::ZRem(m))),
        3 => (0..members).prop_map(|m| Step::Read(SortedSetRead::ZRank(m))),
        1 => (0..members).prop_map(|m| Step::Read(SortedSetRead::ZScore(m))),
        1 => Just(Step::Read(SortedSetRead::ZCard)),
    ];
    prop::collection::vec(step, 0..max_len)
}

/// The model: member -> score.
#[derive(Default)]
struct Model(BTreeMap<u64, i64>);

impl Model {
    /// Members in rank order: sorted by (score, member), the naive way.
    fn ranked(&self) -> Vec<(u64, i64)> {
        let mut v: Vec<(i64, u64)> = self.0.iter().map(|(&m, &s)| (s, m)).collect();
        v.sort_unstable();
        v.into_iter().map(|(s, m)| (m, s)).collect()
    }

    /// The naive rank: how many members sort before `m`.
    fn rank(&self, m: u64) -> Option<usize> {
        let &score = self.0.get(&m)?;
        Some(
            self.0
                .iter()
                .filter(|&(&x, &s)| (s, x) < (score, m))
                .count(),
        )
    }

    fn step(&mut self, step: Step) -> SortedSetResponse {
        match step {
            Step::Read(SortedSetRead::ZRank(m)) => SortedSetResponse::Rank(self.rank(m)),
            Step::Read(SortedSetRead::ZScore(m)) => {
                SortedSetResponse::Score(self.0.get(&m).copied())
            }
            Step::Read(SortedSetRead::ZCard) => SortedSetResponse::Card(self.0.len()),
            Step::Write(SortedSetWrite::ZIncrBy { member, delta }) => {
                let old = self.0.get(&member).copied().unwrap_or(0);
                SortedSetResponse::IncrBy(match old.checked_add(delta) {
                    Some(new) => {
                        self.0.insert(member, new);
                        Ok(new)
                    }
                    None => Err(ScoreOverflow),
                })
            }
            Step::Write(SortedSetWrite::ZAdd { member, score }) => {
                SortedSetResponse::Added(self.0.insert(member, score).is_none())
            }
            Step::Write(SortedSetWrite::ZRem(m)) => {
                SortedSetResponse::Removed(self.0.remove(&m).is_some())
            }
        }
    }
}

fn apply(zset: &mut SortedSet, step: Step) -> SortedSetResponse {
    match step {
        Step::Read(op) => zset.dispatch(op),
        Step::Write(op) => zset.dispatch_mut(op),
    }
}

/// Every member's rank and score, every rank's member, and the structure.
fn check_all(zset: &SortedSet, model: &Model, members: u64) -> Result<(), TestCaseError> {
    zset.check_invariants()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let ranked = model.ranked();
    let mut rank_of = BTreeMap::new();
    for (r, &(m, _)) in ranked.iter().enumerate() {
        rank_of.insert(m, r);
    }
    for m in 0..members {
        prop_assert_eq!(
            zset.zrank(m),
            rank_of.get(&m).copied(),
            "rank of member {}",
            m
        );
        prop_assert_eq!(zset.zscore(m), model.0.get(&m).copied());
    }
    for (r, &entry) in ranked.iter().enumerate() {
        prop_assert_eq!(zset.member_at(r), Some(entry), "member at rank {}", r);
    }
    prop_assert_eq!(zset.member_at(ranked.len()), None);
    prop_assert_eq!(zset.iter().collect::<Vec<_>>(), ranked);
    Ok(())
}

proptest! {
    #[test]
    fn matches_naive_model_checking_every_rank_each_step(steps in steps(32, 120)) {
        let mut zset = SortedSet::new();
        let mut model = Model::default();
        for (i, &step) in steps.iter().enumerate() {
            prop_assert_eq!(apply(&mut zset, step), model.step(step), "step {} ({:?})", i, step);
            check_all(&zset, &model, 32)?;
        }
    }

    #[test]
    fn matches_naive_model_from_prefill(steps in steps(300, 400)) {
        let mut zset = SortedSet::with_items(200);
        let mut model = Model((0..200).map(|m| (m, m as i64)).collect());
        for (i, &step) in steps.iter().enumerate() {
            prop_assert_eq!(apply(&mut zset, step), model.step(step), "step {} ({:?})", i, step);
        }
        check_all(&zset, &model, 300)?;
    }

    #[test]
    fn two_instances_give_identical_responses(steps in steps(200, 300)) {
        let (mut a, mut b) = (SortedSet::with_items(100), SortedSet::with_items(100));
        for &step in &steps {
            prop_assert_eq!(apply(&mut a, step), apply(&mut b, step));
        }
    }
}

#[test]
fn zincrby_creates_absent_members_like_redis() {
    let mut zset = SortedSet::new();
    assert_eq!(zset.zincrby(9, -3), Ok(-3));
    assert_eq!(zset.zscore(9), Some(-3));
    assert_eq!(zset.zincrby(9, 0), Ok(-3));
    assert_eq!(zset.len(), 1);
    zset.check_invariants().expect("invariants");
}

#[test]
fn overflow_leaves_the_set_unchanged() {
    let mut zset = SortedSet::new();
    zset.zadd(1, i64::MAX - 1);
    zset.zadd(2, i64::MIN);
    assert_eq!(zset.zincrby(1, 1), Ok(i64::MAX));
    assert_eq!(
        zset.dispatch_mut(SortedSetWrite::ZIncrBy {
            member: 1,
            delta: 1
        }),
        SortedSetResponse::IncrBy(Err(ScoreOverflow))
    );
    assert_eq!(zset.zincrby(2, -1), Err(ScoreOverflow));
    assert_eq!(
        zset.iter().collect::<Vec<_>>(),
        [(2, i64::MIN), (1, i64::MAX)]
    );
    assert_eq!(
        ScoreOverflow.to_string(),
        "increment would overflow the score (an i64)"
    );
    zset.check_invariants().expect("invariants");
}

#[test]
fn paper_workload_keeps_ranks_consistent() {
    // §8.3: 10,000 members, ZINCRBY on uniformly random members.
    let mut zset = SortedSet::with_items(10_000);
    let mut rng = seqds::SplitMix64::new(11);
    for _ in 0..20_000 {
        let member = rng.below(10_000);
        let delta = rng.below(200) as i64 - 100;
        zset.zincrby(member, delta).expect("no overflow");
    }
    zset.check_invariants().expect("invariants");
    let ranked: Vec<(u64, i64)> = zset.iter().collect();
    for r in (0..10_000).step_by(97) {
        let (m, _) = ranked[r];
        assert_eq!(zset.zrank(m), Some(r));
        assert_eq!(zset.member_at(r), Some(ranked[r]));
    }
}

#[test]
fn debug_is_terse() {
    let zset = SortedSet::with_items(10_000);
    let s = format!("{zset:?}");
    assert!(s.starts_with("SortedSet { len: 10000"), "{s}");
}
