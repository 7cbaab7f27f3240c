//! Criterion benches for the `nr-core` rows (being written).

fn main() {}
