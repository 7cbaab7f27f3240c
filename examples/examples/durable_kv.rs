//! A `HashMap` key-value store that survives `kill -9`: nr-durable over nr-core.
//!
//! ```sh
//! cargo run -p examples --example durable_kv -- /tmp/kv            # file medium
//! cargo run -p examples --example durable_kv -- /tmp/kv.pmem pmem  # persistent-memory medium
//! ```
//!
//! Each run prints what it recovered (keys, each writer's last acknowledged write), then two
//! writer threads on two replicas put keys until `WRITES` each (default 100,000) or until the
//! process is killed; thread 0 takes a checkpoint every 10,000 of its writes. Kill it with
//! `kill -9` (or Ctrl-C) at any time and run it again: every write it printed as acknowledged is
//! there, and each writer goes on from its last write.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::HashMap;
use std::path::PathBuf;

use nr_core::Dispatch;
use nr_durable::{Durable, Medium};
use serde::{Deserialize, Serialize};

/// The store: any serde type works, no `Pod` needed.
#[derive(Default, Serialize, Deserialize)]
struct Kv(HashMap<String, u64>);

#[derive(Clone, Serialize, Deserialize)]
enum Write {
    Put(String, u64),
    Remove(String),
}

impl Dispatch for Kv {
    type ReadOperation<'a> = &'a str;
    type WriteOperation = Write;
    type Response = Option<u64>;

    fn dispatch(&self, key: &str) -> Option<u64> {
        self.0.get(key).copied()
    }

    fn dispatch_mut(&mut self, op: Write) -> Option<u64> {
        match op {
            Write::Put(k, v) => self.0.insert(k, v),
            Write::Remove(k) => self.0.remove(&k),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().unwrap_or_else(|| "/tmp/durable-kv".into()));
    let medium = match args.next().as_deref() {
        Some("pmem") => Medium::Pmem {
            path,
            capacity: 64 << 20,
        },
        _ => Medium::File { dir: path },
    };
    let writes: u64 = std::env::var("WRITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);

    let kv = Durable::<Kv>::builder()
        .replicas(2)
        .medium(medium.clone())
        .open(Kv::default)?;
    let mut reader = kv.register(100)?;
    println!(
        "opened {medium:?}: replayed {} logged writes after the snapshot",
        kv.recovered_writes()
    );
    for t in 0..2u32 {
        let last = kv.register(t)?.last_applied()?;
        let seq = last.as_ref().map_or(0, |l| l.0);
        let key = format!("w{t}-{}", seq.saturating_sub(1));
        println!(
            "writer {t}: {seq} writes recovered; its last key {key} = {:?}",
            reader.execute(&key)?
        );
    }

    std::thread::scope(|s| -> Result<(), nr_durable::DurableError> {
        let workers: Vec<_> = (0..2u32)
            .map(|t| {
                let kv = &kv;
                s.spawn(move || -> Result<(), nr_durable::DurableError> {
                    let mut h = kv.register(t)?;
                    let start = h.last_applied()?.map_or(0, |l| l.0);
                    for i in start..writes {
                        h.execute_mut(Write::Put(format!("w{t}-{i}"), i))?;
                        if i % 10_000 == 9_999 {
                            println!("writer {t}: write {i} acknowledged");
                            if t == 0 {
                                println!("checkpoint at log position {}", kv.checkpoint()?);
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join().expect("writer panicked")?;
        }
        Ok(())
    })?;
    let s = kv.stats();
    println!(
        "done: {} writes in {} commits, {:.3} syncs and {:.1} log bytes per write",
        s.ops,
        s.commits,
        s.syncs_per_op(),
        s.bytes_per_op()
    );
    Ok(())
}
