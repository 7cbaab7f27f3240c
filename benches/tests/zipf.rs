//! The Zipf sampler draws what it should.

use benches::{KeyDist, Rng};

fn counts(dist: &KeyDist, samples: usize) -> Vec<usize> {
    let mut c = vec![0; dist.keys() as usize];
    let mut rng = Rng::new(7, 0);
    for _ in 0..samples {
        c[dist.sample(&mut rng) as usize] += 1;
    }
    c
}

#[test]
fn zipf_frequencies_follow_the_power_law() {
    let s = 1.5;
    let n = 1000;
    let samples = 200_000;
    let c = counts(&KeyDist::zipf(n, s), samples);
    // P(k) = (k + 1)^-s / H(n, s).
    let h: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
    for (k, &count) in c.iter().enumerate().take(5) {
        let expected = ((k + 1) as f64).powf(-s) / h * samples as f64;
        let got = count as f64;
        // Several standard deviations of a binomial count, plus a small relative slack.
        let tolerance = 5.0 * expected.sqrt() + 0.01 * expected;
        assert!(
            (got - expected).abs() < tolerance,
            "key {k}: {got} samples, expected {expected:.0} +- {tolerance:.0}"
        );
    }
    // The ratio of the two hottest keys is 2^s.
    let ratio = c[0] as f64 / c[1] as f64;
    assert!((ratio - 2f64.powf(s)).abs() < 0.1, "ratio {ratio}");
    // Counts decrease (in blocks, to smooth noise).
    let block = |a: usize, b: usize| c[a..b].iter().sum::<usize>();
    assert!(block(0, 10) > block(10, 100) / 2);
    assert!(block(10, 100) > block(100, 1000) / 10);
}

#[test]
fn zipf_covers_only_its_keys_and_reaches_the_tail() {
    let c = counts(&KeyDist::zipf(50, 0.99), 100_000);
    assert_eq!(c.len(), 50);
    assert!(c[49] > 0, "the coldest key is still drawn");
    assert!(c[0] > c[49] * 10);
}

#[test]
fn uniform_is_flat() {
    let c = counts(&KeyDist::uniform(10), 100_000);
    for (k, &n) in c.iter().enumerate() {
        assert!((9_000..11_000).contains(&n), "key {k}: {n}");
    }
}

#[test]
fn one_key_always_draws_zero() {
    let mut rng = Rng::new(1, 1);
    let d = KeyDist::zipf(1, 1.5);
    assert!((0..100).all(|_| d.sample(&mut rng) == 0));
}
