//! One owner per region file: a second `open`/`create` of a file a live region owns is refused
//! with the path, here (`AlreadyOpen`) and from another process (`Locked`), and succeeds again
//! once the owner is gone.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use pmem::{Region, RegionError};

const LAYOUT: u64 = 0x0_4E4E;
const SIZE: u64 = 1 << 14;
/// Set by [`another_process_holding_the_file_locks_it_out`] for its child.
const CHILD_ENV: &str = "PMEM_OWNERSHIP_CHILD_FILE";
/// What the child prints once it holds the region (at the end of a line: libtest's own
/// `test ... ` may precede it).
const HELD: &str = "pmem-ownership-child-holds-the-region";

fn path_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("owned.pmem")
}

/// `result` is `AlreadyOpen` naming `path`, and says so in its message.
fn assert_already_open<T: std::fmt::Debug>(result: Result<T, RegionError>, path: &Path) {
    match result {
        Err(e @ RegionError::AlreadyOpen { .. }) => {
            let RegionError::AlreadyOpen { path: named } = &e else {
                unreachable!()
            };
            assert_eq!(named, path);
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        }
        other => panic!("expected AlreadyOpen for {}, got {other:?}", path.display()),
    }
}

/// While `owner` (something holding a region of `path`) lives, opening `path` is refused;
/// once it is dropped, `path` opens.
fn held_until_dropped<T>(owner: T, path: &Path) {
    assert_already_open(Region::open(path, LAYOUT), path);
    drop(owner);
    drop(Region::open(path, LAYOUT).expect("the file opens once its owner is dropped"));
}

#[test]
fn a_second_open_in_this_process_is_refused_until_the_first_region_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir);
    held_until_dropped(Region::create(&path, LAYOUT, SIZE).unwrap(), &path);
    let first = Region::open(&path, LAYOUT).unwrap();
    // Refused before the header is read: a wrong layout id is not what is reported.
    assert_already_open(Region::open(&path, LAYOUT + 1), &path);
    held_until_dropped(first, &path);
}

#[test]
fn another_name_of_the_same_file_is_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir);
    let link = dir.path().join("hard-link.pmem");
    let region = Region::create(&path, LAYOUT, SIZE).unwrap();
    std::fs::hard_link(&path, &link).unwrap();
    assert_already_open(Region::open(&link, LAYOUT), &link);
    let moved = dir.path().join("renamed.pmem");
    std::fs::rename(&path, &moved).unwrap();
    held_until_dropped(region, &moved);
}

#[test]
fn a_region_returned_by_map_persist_keeps_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir);
    drop(Region::create(&path, LAYOUT, SIZE).unwrap());
    held_until_dropped(
        Region::open(&path, LAYOUT).unwrap().map_persist(|hw| hw),
        &path,
    );
}

#[test]
fn a_refused_open_leaves_the_owner_in_place() {
    // The failed attempts must not release what the live region owns.
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir);
    let region = Region::create(&path, LAYOUT, SIZE).unwrap();
    for _ in 0..3 {
        assert_already_open(Region::open(&path, LAYOUT), &path);
    }
    held_until_dropped(region, &path);
}

/// Child mode of [`another_process_holding_the_file_locks_it_out`] (ignored in a normal run;
/// the parent runs it with `--ignored`): opens the region named by `CHILD_ENV`, says so on
/// stdout, and holds it until killed.
#[test]
#[ignore = "child process of another_process_holding_the_file_locks_it_out"]
fn child_holds_the_region() {
    let path = std::env::var(CHILD_ENV)
        .expect("child mode only: run by another_process_holding_the_file_locks_it_out");
    let region = Region::open(&path, LAYOUT).expect("child open");
    println!("{HELD}");
    let mut line = String::new();
    // Blocks until the parent kills this process (or closes stdin).
    let _ = std::io::stdin().read_line(&mut line);
    drop(region);
}

/// Kills the child when dropped, so a failing assertion never leaves it running.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn another_process_holding_the_file_locks_it_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir);
    drop(Region::create(&path, LAYOUT, SIZE).unwrap());
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "child_holds_the_region",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let held = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.ends_with(HELD));
    assert!(held, "the child exited without opening the region");

    match Region::open(&path, LAYOUT) {
        Err(e @ RegionError::Locked { .. }) => {
            let RegionError::Locked { path: named } = &e else {
                unreachable!()
            };
            assert_eq!(named, &path);
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        }
        other => panic!("expected Locked while the child holds the file, got {other:?}"),
    }

    // A process killed with the region open releases the file as it exits.
    drop(child);
    drop(Region::open(&path, LAYOUT).unwrap());
}
