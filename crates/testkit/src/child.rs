//! Child processes for crash tests: the test binary re-run with one test, its child entry
//! point, which a normal `cargo test` must not report as passed.
//!
//! The entry point is an `#[ignore]`d test (so `cargo test` lists it as *ignored*, not *ok*)
//! that reads what to do from an environment variable with [`child_spec`], which fails loudly
//! when the variable is missing (so `cargo test -- --ignored` does not pass it either). The
//! parent starts it with [`child_command`] and pins that behaviour with
//! [`assert_child_fails_alone`].
//!
//! # Examples
//!
//! ```no_run
//! const CHILD_ENV: &str = "MY_CHILD";
//!
//! #[test]
//! #[ignore = "child process of `parent`, which runs it with --ignored --exact"]
//! fn child() {
//!     let spec = testkit::child::child_spec(CHILD_ENV, "parent");
//!     // ... work on `spec` until killed ...
//! }
//!
//! #[test]
//! fn parent() {
//!     let mut child = testkit::child::child_command("child")
//!         .env(CHILD_ENV, "/tmp/file")
//!         .spawn()
//!         .expect("spawn");
//!     // ... kill it, check what it left ...
//! #   let _ = child.kill();
//! }
//! ```

use std::process::{Command, Stdio};

/// The test binary, set to run only the ignored test `test` (`--exact --ignored`), output not
/// captured, one thread. Add the child's environment, pipes, and spawn it.
///
/// # Panics
///
/// If the path of the running test binary is unavailable.
///
/// # Examples
///
/// ```
/// let cmd = testkit::child::child_command("sigkill_child");
/// let args: Vec<_> = cmd.get_args().collect();
/// assert_eq!(args[..3], ["sigkill_child", "--exact", "--ignored"]);
/// ```
pub fn child_command(test: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary's path"));
    cmd.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd
}

/// What the parent passed in `var`, read by a child entry point.
///
/// # Panics
///
/// When `var` is not set: the entry point was run on its own (`cargo test -- --ignored`),
/// where it would check nothing, so it fails and names `parent`, the test that runs it.
///
/// # Examples
///
/// ```should_panic
/// testkit::child::child_spec("TESTKIT_NO_SUCH_VARIABLE", "my_parent_test");
/// ```
pub fn child_spec(var: &str, parent: &str) -> String {
    let Ok(spec) = std::env::var(var) else {
        run_alone(var, parent)
    };
    spec
}

#[cold]
fn run_alone(var: &str, parent: &str) -> ! {
    panic!(
        "this test is the child process of `{parent}` and checks nothing by itself; \
         run `{parent}` instead (it sets {var})"
    )
}

/// Asserts that the child entry point `test`, run as [`child_command`] runs it but without
/// `var`, fails: it can never report "ok" without checking anything.
///
/// # Panics
///
/// If the child could not be run, or if it exited successfully.
///
/// # Examples
///
/// ```no_run
/// testkit::child::assert_child_fails_alone("sigkill_child", "MY_CHILD");
/// ```
pub fn assert_child_fails_alone(test: &str, var: &str) {
    let out = child_command(test)
        .env_remove(var)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run the child entry point");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 failed"),
        "the child entry point `{test}` run without {var} must run and fail, got {}: {stdout}",
        out.status
    );
    assert!(!out.status.success());
}

/// Reads the child's output line by line and kills it (SIGKILL) once `record` has accepted
/// `kill_after` lines; the lines the child printed before it died are passed to `record` too.
/// `record` returns whether a line was an acknowledgement (and notes it in `state`). Panics,
/// naming `what`, if the child exits before it is killed.
///
/// # Examples
///
/// ```no_run
/// use std::io::BufReader;
/// use std::process::Stdio;
///
/// let mut child = testkit::child::child_command("sigkill_child")
///     .env("MY_CHILD", "spec")
///     .stdout(Stdio::piped())
///     .spawn()
///     .unwrap();
/// let out = BufReader::new(child.stdout.take().unwrap());
/// let mut acked = 0u64;
/// testkit::child::kill_after_acks(&mut child, out, 10, &mut acked, "round 0", |line, acked| {
///     match line.trim().split("ack ").nth(1) {
///         Some(n) => { *acked = (*acked).max(n.parse().unwrap()); true }
///         None => false,
///     }
/// });
/// ```
pub fn kill_after_acks<S: ?Sized>(
    child: &mut std::process::Child,
    mut out: impl std::io::BufRead,
    kill_after: u64,
    state: &mut S,
    what: &str,
    mut record: impl FnMut(&str, &mut S) -> bool,
) {
    let (mut seen, mut line) = (0, String::new());
    while seen < kill_after {
        line.clear();
        if out.read_line(&mut line).expect("read the child's output") == 0 {
            panic!("{what}: the child exited before it was killed");
        }
        seen += u64::from(record(&line, state));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    // Acknowledgements printed before the kill count too.
    for l in out.lines() {
        record(&l.expect("read the child's output"), state);
    }
}
