//! CSV rows written by a real (tiny) sweep parse back to the same rows.

use std::time::Duration;

use benches::figures::{run, Figure, Params};
use benches::report::{Row, Summary};
use benches::sweep::Sweep;
use benches::Replicas;
use nr_core::Topology;

#[test]
fn rows_of_a_sweep_parse_back() {
    let topology = Topology::detect().expect("topology");
    let cpus = topology.num_cpus();
    let sweep = Sweep::new(
        vec![1, cpus + 1],
        Duration::from_millis(2),
        2,
        9,
        topology,
        Replicas::Exactly(2),
    )
    .expect("sweep");
    let mut params = Params::smoke();
    params.mixes = Some(vec![10]);
    params.hashmap_keys = 64;
    let rows = run(Figure::HashMap, &sweep, &params).expect("sweep runs");
    // 7 methods x 2 thread counts x 2 repetitions.
    assert_eq!(rows.len(), 28);
    let mut text = String::from(Row::HEADER);
    text.push('\n');
    for r in &rows {
        text.push_str(&r.to_csv());
        text.push('\n');
    }
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(Row::HEADER));
    let parsed: Vec<Row> = lines.map(|l| Row::parse(l).expect("parses")).collect();
    assert_eq!(parsed, rows);
    assert!(parsed.iter().all(|r| r.ops > 0 && r.seed == 9));
    assert!(parsed
        .iter()
        .any(|r| r.oversubscribed && r.threads == cpus + 1));
    assert!(parsed
        .iter()
        .filter(|r| r.method == "NR")
        .all(|r| r.replicas == 2));
    // Every method appears in the summary table, NR as the numerator.
    let table = Summary::from_rows(&parsed).table("hashmap");
    for m in ["SL", "RWL", "FC", "FC+", "dashmap", "nr-crate"] {
        assert!(table.contains(&format!("NR/{m}")), "{m} missing:\n{table}");
    }
}

#[test]
fn text_fields_with_commas_stay_one_field() {
    let mut r = Row::example();
    r.cpu_model = "Vendor, Model, 3 GHz".into();
    let back = Row::parse(&r.to_csv()).expect("parses");
    assert_eq!(back.cpu_model, "Vendor; Model; 3 GHz");
    assert_eq!(back.threads, r.threads);
}

#[test]
fn malformed_rows_are_errors() {
    assert!(Row::parse("a,b,c").is_err());
    let line = Row::example().to_csv().replacen(",4,", ",four,", 1);
    assert!(Row::parse(&line).is_err());
}
