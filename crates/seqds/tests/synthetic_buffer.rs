//! `SyntheticBuffer` against a plain `Vec` of entries.

use nr_core::Dispatch;
use proptest::prelude::*;
use seqds::{SyntheticBuffer, SyntheticRead, SyntheticWrite};

#[derive(Clone, Copy, Debug)]
enum Step {
    Read(u64),
    Write(u64),
}

fn steps(max_len: usize) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        any::<u64>().prop_map(Step::Read),
        any::<u64>().prop_map(Step::Write),
    ];
    prop::collection::vec(step, 0..max_len)
}

proptest! {
    /// Reads return the sum of the touched words; updates add `seed | 1` to each touched word,
    /// once per time an entry is drawn, and touch nothing else.
    #[test]
    fn matches_plain_entries(n in 1usize..40, c in 0usize..10, steps in steps(200)) {
        let mut buf = SyntheticBuffer::new(n, c);
        let mut model = vec![[0u64; 8]; n];
        for (i, &step) in steps.iter().enumerate() {
            match step {
                Step::Read(seed) => {
                    let want = buf.entries(seed)
                        .flat_map(|e| model[e])
                        .fold(0u64, u64::wrapping_add);
                    prop_assert_eq!(buf.dispatch(SyntheticRead { seed }), want, "step {}", i);
                }
                Step::Write(seed) => {
                    let mut want = 0u64;
                    for e in buf.entries(seed) {
                        for w in &mut model[e] {
                            *w = w.wrapping_add(seed | 1);
                            want = want.wrapping_add(*w);
                        }
                    }
                    prop_assert_eq!(buf.dispatch_mut(SyntheticWrite { seed }), want, "step {}", i);
                }
            }
        }
        for (e, words) in model.iter().enumerate() {
            prop_assert_eq!(buf.entry(e), *words, "entry {}", e);
        }
    }

    #[test]
    fn entries_are_the_hot_one_then_c_in_range(n in 1usize..1000, c in 0usize..70, seed: u64) {
        let buf = SyntheticBuffer::new(n, c);
        let e: Vec<usize> = buf.entries(seed).collect();
        prop_assert_eq!(e.len(), c + 1);
        prop_assert_eq!(e[0], 0);
        for &i in &e[1..] {
            prop_assert!(i < n && (n == 1 || i >= 1), "entry {} of {}", i, n);
        }
    }

    #[test]
    fn two_instances_give_identical_responses(steps in steps(300)) {
        let (mut a, mut b) = (SyntheticBuffer::new(64, 8), SyntheticBuffer::new(64, 8));
        for &step in &steps {
            match step {
                Step::Read(seed) => prop_assert_eq!(
                    a.dispatch(SyntheticRead { seed }),
                    b.dispatch(SyntheticRead { seed })
                ),
                Step::Write(seed) => prop_assert_eq!(
                    a.dispatch_mut(SyntheticWrite { seed }),
                    b.dispatch_mut(SyntheticWrite { seed })
                ),
            }
        }
    }
}

#[test]
fn non_hot_entries_are_spread_uniformly() {
    let buf = SyntheticBuffer::new(11, 4);
    let mut counts = [0u32; 11];
    for seed in 0..10_000u64 {
        for e in buf
            .entries(seed.wrapping_mul(0x2545_F491_4F6C_DD1D))
            .skip(1)
        {
            counts[e] += 1;
        }
    }
    // 40,000 draws over entries 1..=10: 4,000 each expected; a deterministic input.
    assert_eq!(counts[0], 0);
    for &k in &counts[1..] {
        assert!((3_600..4_400).contains(&k), "{counts:?}");
    }
}

#[test]
fn debug_is_terse() {
    assert_eq!(
        format!("{:?}", SyntheticBuffer::new(200_000, 8)),
        "SyntheticBuffer { n: 200000, c: 8, .. }"
    );
}
