//! Crash and recover, on a file: a child process inserts keys into a file-backed Mirror hash
//! set and prints each key once its insert returned; the parent kills it with SIGKILL at a
//! random moment, recovers the file and checks that every acknowledged key is there.
//!
//! ```sh
//! cargo run --release -p mirror-atomic --example crash_and_recover [-- ROUNDS]
//! ```
//!
//! What this shows: recovery (tracing from the root, rebuilding the DRAM replica and the free
//! space) and durable linearizability across a real process kill. What it cannot show: lost
//! cache lines. A SIGKILL leaves the kernel's page cache intact, so every store reaches the
//! file whether flushed or not; flush ordering is tested on pmem's simulated domain
//! (`tests/crash_sim.rs`).

use mirror_atomic::flavor::Mirror;
use mirror_atomic::{HashSet, Heap, Region};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LAYOUT: u64 = 0x4d49_5252_4b49_4c4c;
const SIZE: u64 = 256 + 64 * 65536; // 4 MiB
type Set = HashSet<Mirror, pmem::Hardware>;

fn child(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let set = match Region::open(path, LAYOUT) {
        Ok(region) => Set::recover(region)?,
        Err(_) => Set::with_capacity(Heap::create(path, LAYOUT, SIZE)?, 1024)?,
    };
    let mut out = std::io::stdout().lock();
    let mut x = std::process::id() as u64 | 1;
    loop {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = x % 1_000_000;
        set.insert(key)?;
        // Acknowledged only after insert returned (and so after it is durable).
        writeln!(out, "{key}")?;
        out.flush()?;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        return child(&args[2]);
    }
    let rounds: u32 = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(4);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("set.pmem");
    let path_str = path.to_str().ok_or("non-UTF-8 temp path")?;
    let mut acknowledged = Vec::new();
    for round in 0..rounds {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--child", path_str])
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        // Wait for the first acknowledgement (the child has recovered and is inserting), then
        // let it run a little longer before the kill.
        let mut lines = BufReader::new(stdout).lines();
        let first: u64 = lines.next().ok_or("child exited")??.parse()?;
        #[allow(clippy::disallowed_methods)] // a pipe reader, not code under test
        let reader = std::thread::spawn(move || {
            lines
                .map_while(Result::ok)
                .filter_map(|l| l.parse::<u64>().ok())
                .collect::<Vec<u64>>()
        });
        let wait = Duration::from_millis(20 + (37 * u64::from(round)) % 100);
        std::thread::sleep(wait);
        child.kill()?; // SIGKILL
        child.wait()?;
        let mut acked = vec![first];
        acked.extend(reader.join().map_err(|_| "reader panicked")?);
        acknowledged.extend(&acked);
        let start = Instant::now();
        let set = Set::recover(Region::open(&path, LAYOUT)?)?;
        let took = start.elapsed();
        let (keys, ok) = set.snapshot();
        if !ok {
            return Err("recovered set is malformed".into());
        }
        let missing: Vec<u64> = acknowledged
            .iter()
            .copied()
            .filter(|&k| !set.contains(k))
            .collect();
        if !missing.is_empty() {
            return Err(format!("acknowledged inserts lost: {missing:?}").into());
        }
        println!(
            "round {round}: killed {wait:?} after its first insert; {} inserts acknowledged this round, all {} so far \
             present; {} keys recovered in {took:?}",
            acked.len(),
            acknowledged.len(),
            keys.len()
        );
    }
    println!(
        "{} acknowledged inserts over {rounds} kills; recovery succeeded every time",
        acknowledged.len()
    );
    Ok(())
}
