//! A crash can cut the log anywhere in its last write: recovery at every byte of the last
//! entries gives the entries that are whole, cuts the rest, and the log grows again from there.

use std::path::Path;

use nr_durable::{Medium, Store, SyncPolicy};

/// Writes ops `0 .. 12` (strings of varying length) in writes of 1, 2 and 3 entries.
fn write_log(medium: &Medium) {
    let (store, rec) = Store::<String>::open::<()>(medium, SyncPolicy::EveryBatch).unwrap();
    assert_eq!(rec.end, 0);
    let ops: Vec<String> = (0..12).map(|i| "x".repeat(i * 3 + 1)).collect();
    let mut pos = 0;
    for size in [1, 2, 3, 1, 2, 3] {
        let refs: Vec<&String> = ops[pos..pos + size].iter().collect();
        store.append(pos as u64, &refs).unwrap();
        pos += size;
    }
}

fn op(i: u64) -> String {
    "x".repeat(i as usize * 3 + 1)
}

/// Reopens, checks that the ops are a prefix of length at least `at_least`, appends one op
/// and reopens again: it is there, right after the prefix.
fn check_prefix(medium: &Medium, at_least: u64) -> u64 {
    let n = {
        let (store, rec) = Store::<String>::open::<()>(medium, SyncPolicy::EveryBatch)
            .unwrap_or_else(|e| panic!("recovery failed: {e}"));
        let n = rec.end;
        assert!(
            n >= at_least,
            "recovered {n} entries, expected at least {at_least}"
        );
        let want: Vec<(u64, String)> = (0..n).map(|i| (i, op(i))).collect();
        assert_eq!(rec.ops, want);
        store.append(n, &[&"after".to_owned()]).unwrap();
        n
    };
    let (_store, rec) = Store::<String>::open::<()>(medium, SyncPolicy::EveryBatch).unwrap();
    assert_eq!(rec.end, n + 1);
    assert_eq!(rec.ops.last(), Some(&(n, "after".to_owned())));
    n
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn file_log_cut_at_every_byte_of_its_last_entries_recovers_the_whole_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let orig = tmp.path().join("orig");
    write_log(&Medium::File { dir: orig.clone() });
    let seg = orig.join(format!("log-{:020}.seg", 0));
    let full = std::fs::read(&seg).unwrap();
    // The last two writes hold entries 7 .. 12; cut anywhere from before entry 6's end.
    let mut sizes = Vec::new();
    for cut in (full.len() - 260)..=full.len() {
        let dir = tmp.path().join(format!("cut{cut}"));
        copy_dir(&orig, &dir);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(seg.file_name().unwrap()))
            .unwrap();
        f.set_len(cut as u64).unwrap();
        drop(f);
        sizes.push(check_prefix(&Medium::File { dir: dir.clone() }, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // Each whole entry appears as the cut passes its end.
    assert_eq!(sizes.last(), Some(&12));
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        sizes[0] < 8,
        "the cuts reached back into the earlier entries: {}",
        sizes[0]
    );
}

#[test]
fn pmem_log_torn_at_every_byte_of_its_last_entries_recovers_the_whole_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log.pmem");
    let medium = Medium::Pmem {
        path: path.clone(),
        capacity: 1 << 14,
    };
    write_log(&medium);
    let full = std::fs::read(&path).unwrap();
    // The log area starts after the 256-byte header and the 64-byte block; its used part ends
    // at the last nonzero byte.
    let used_end = full.iter().rposition(|&b| b != 0).unwrap() + 1;
    let mut sizes = Vec::new();
    for cut in (used_end - 260)..=used_end {
        let p = tmp.path().join("cut.pmem");
        let mut bytes = full.clone();
        bytes[cut..].iter_mut().for_each(|b| *b = 0); // nothing after `cut` reached the media
        std::fs::write(&p, &bytes).unwrap();
        sizes.push(check_prefix(
            &Medium::Pmem {
                path: p.clone(),
                capacity: 1 << 14,
            },
            0,
        ));
        std::fs::remove_file(&p).unwrap();
    }
    assert_eq!(sizes.last(), Some(&12));
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        sizes[0] < 8,
        "the cuts reached back into the earlier entries: {}",
        sizes[0]
    );
}
