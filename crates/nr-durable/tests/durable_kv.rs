//! A `HashMap` store made durable: acknowledged writes survive a reopen on both media, with
//! checkpoints between them, and every thread id can ask for its last write afterwards.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use common::{check_thread, key, Kv, KvWrite};
use nr_durable::{Durable, DurableError, Medium, SyncPolicy};

fn media(dir: &std::path::Path) -> [Medium; 2] {
    [
        Medium::File {
            dir: dir.join("files"),
        },
        Medium::Pmem {
            path: dir.join("log.pmem"),
            capacity: 1 << 16,
        },
    ]
}

/// 3 threads on 2 replicas, 150 puts each; thread 0 takes a checkpoint every 40 of its writes
/// (the 64 KiB region also checkpoints by itself when half of its log half is used).
fn fill(medium: &Medium) -> nr_durable::Stats {
    let kv = Durable::<Kv>::builder()
        .replicas(2)
        .medium(medium.clone())
        .open(Kv::default)
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..3u32 {
            let kv = &kv;
            s.spawn(move || {
                let mut h = kv.register(t).unwrap();
                for i in 0..150 {
                    assert_eq!(h.execute_mut(KvWrite::Put(key(t, i), i)).unwrap(), None);
                    if t == 0 && i % 40 == 39 {
                        kv.checkpoint().unwrap();
                    }
                }
            });
        }
    });
    kv.stats()
}

#[test]
fn acknowledged_writes_survive_a_reopen_on_each_medium() {
    let tmp = tempfile::tempdir().unwrap();
    for medium in media(tmp.path()) {
        let stats = fill(&medium);
        assert_eq!(stats.ops, 450, "{medium:?}");
        // 3 threads with one write at a time each: groups of at most 3, so at least 150 commits.
        assert!(
            stats.syncs >= stats.commits && (150..=450).contains(&stats.commits),
            "{stats:?}"
        );
        println!(
            "{medium:?}: {stats:?}, {:.2} syncs/op, {:.1} bytes/op",
            stats.syncs_per_op(),
            stats.bytes_per_op()
        );
        let kv = Durable::<Kv>::builder()
            .replicas(2)
            .medium(medium.clone())
            .open(Kv::default)
            .unwrap();
        for t in 0..3 {
            let last = kv.register(t).unwrap().last_applied().unwrap();
            assert_eq!(last, Some((150, None)), "{medium:?}");
            assert_eq!(check_thread(&kv, t, 150, last), Ok(150));
        }
        // Sequence numbers go on from the recovered ones.
        let mut h = kv.register(1).unwrap();
        h.execute_mut(KvWrite::Remove(key(1, 0))).unwrap();
        assert_eq!(h.last_applied().unwrap(), Some((151, Some(0))));
    }
}

#[test]
fn detectability_survives_checkpoints_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    for medium in media(tmp.path()) {
        {
            let kv = Durable::<Kv>::builder()
                .medium(medium.clone())
                .open(Kv::default)
                .unwrap();
            let mut h = kv.register(9).unwrap();
            for i in 0..5 {
                h.execute_mut(KvWrite::Put(7, i)).unwrap();
            }
            let pos = kv.checkpoint().unwrap();
            assert_eq!(pos, 5);
        }
        {
            // Everything is in the snapshot: nothing replayed.
            let kv = Durable::<Kv>::builder()
                .medium(medium.clone())
                .open(Kv::default)
                .unwrap();
            assert_eq!(kv.recovered_writes(), 0);
            let mut h = kv.register(9).unwrap();
            assert_eq!(h.last_applied().unwrap(), Some((5, Some(3))));
            assert_eq!(h.execute_mut(KvWrite::Remove(7)).unwrap(), Some(4));
        }
        let kv = Durable::<Kv>::builder()
            .medium(medium.clone())
            .open(Kv::default)
            .unwrap();
        assert_eq!(kv.recovered_writes(), 1);
        let mut h = kv.register(9).unwrap();
        assert_eq!(h.last_applied().unwrap(), Some((6, Some(4))));
        assert_eq!(h.execute(7).unwrap(), None);
        // Positions go on from the recovered ones (5 in the snapshot, 1 logged).
        assert_eq!(kv.checkpoint().unwrap(), 6);
        // Another thread id has made no write.
        assert_eq!(kv.register(10).unwrap().last_applied().unwrap(), None);
    }
}

/// A list of strings: writes of any size.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Lines(Vec<String>);

impl nr_core::Dispatch for Lines {
    type ReadOperation<'a> = ();
    type WriteOperation = String;
    type Response = usize;
    fn dispatch(&self, (): ()) -> usize {
        self.0.len()
    }
    fn dispatch_mut(&mut self, line: String) -> usize {
        self.0.push(line);
        self.0.len()
    }
}

#[test]
fn a_failed_commit_poisons_with_its_cause() {
    let tmp = tempfile::tempdir().unwrap();
    // A region whose log halves hold 96 bytes: a 200-byte write does not fit.
    let region = pmem::Region::anonymous(nr_durable::PMEM_LAYOUT, 512).unwrap();
    let lines = Durable::<Lines>::builder()
        .region(region, tmp.path())
        .open(Lines::default)
        .unwrap();
    let mut h = lines.register(0).unwrap();
    assert_eq!(h.execute_mut("short".into()).unwrap(), 1);
    let err = h.execute_mut("x".repeat(200)).unwrap_err();
    let DurableError::Poisoned { cause: Some(cause) } = &err else {
        panic!("{err}")
    };
    assert!(matches!(**cause, DurableError::LogFull { .. }), "{cause}");
    assert_eq!(
        std::error::Error::source(&err).map(|s| s.to_string()),
        Some(cause.to_string())
    );
    assert!(matches!(h.execute(()), Err(DurableError::Poisoned { .. })));
}

#[test]
fn a_thread_id_has_one_live_handle() {
    let tmp = tempfile::tempdir().unwrap();
    let kv = Durable::<Kv>::builder()
        .medium(Medium::File {
            dir: tmp.path().to_owned(),
        })
        .open(Kv::default)
        .unwrap();
    let h = kv.register(3).unwrap();
    assert!(matches!(
        kv.register(3),
        Err(DurableError::AlreadyRegistered { thread: 3 })
    ));
    drop(h);
    kv.register(3).unwrap();
}

#[test]
fn the_every_policy_syncs_on_sync_and_counts_fewer_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let medium = Medium::File {
        dir: tmp.path().to_owned(),
    };
    {
        let kv = Durable::<Kv>::builder()
            .medium(medium.clone())
            .sync(SyncPolicy::Every(std::time::Duration::from_secs(3600)))
            .open(Kv::default)
            .unwrap();
        let mut h = kv.register(0).unwrap();
        for i in 0..20 {
            h.execute_mut(KvWrite::Put(i, i)).unwrap();
        }
        assert_eq!(kv.stats().syncs, 0, "queued, not synced");
        kv.sync().unwrap();
        assert_eq!(kv.stats().syncs, 1);
    }
    let kv = Durable::<Kv>::builder()
        .medium(medium)
        .open(Kv::default)
        .unwrap();
    assert_eq!(
        kv.register(0).unwrap().last_applied().unwrap(),
        Some((20, None))
    );
}

#[test]
fn a_checkpoint_drops_the_log_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("files");
    {
        let kv = Durable::<Kv>::builder()
            .medium(Medium::File { dir: dir.clone() })
            .open(Kv::default)
            .unwrap();
        let mut h = kv.register(0).unwrap();
        for i in 0..10 {
            h.execute_mut(KvWrite::Put(i, i)).unwrap();
            if i == 4 || i == 7 {
                kv.checkpoint().unwrap();
            }
        }
    }
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let want = [
        "LOCK".to_owned(),
        format!("log-{:020}.seg", 8),
        format!("snap-{:020}.snap", 8),
    ];
    assert_eq!(names, want);
    let kv = Durable::<Kv>::builder()
        .medium(Medium::File { dir })
        .open(Kv::default)
        .unwrap();
    assert_eq!(kv.recovered_writes(), 2);

    // A 4 KiB region holds about 40 writes per log half: 1,000 need the checkpoints' drops.
    let path = tmp.path().join("small.pmem");
    {
        let kv = Durable::<Kv>::builder()
            .medium(Medium::Pmem {
                path: path.clone(),
                capacity: 4096,
            })
            .open(Kv::default)
            .unwrap();
        let mut h = kv.register(0).unwrap();
        for i in 0..1000 {
            h.execute_mut(KvWrite::Put(i % 7, i)).unwrap();
        }
    }
    let kv = Durable::<Kv>::builder()
        .medium(Medium::Pmem {
            path,
            capacity: 4096,
        })
        .open(Kv::default)
        .unwrap();
    assert!(kv.recovered_writes() < 40, "{}", kv.recovered_writes());
    assert_eq!(
        kv.register(0).unwrap().last_applied().unwrap().map(|l| l.0),
        Some(1000)
    );
}
