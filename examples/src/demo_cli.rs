//! The demo's command line, error reporting and noise rule, kept out of the example binary so
//! that tests can call them (an example has no `CARGO_BIN_EXE_` path to run).
//!
//! # Examples
//!
//! ```
//! use examples::demo_cli::{parse_args, Command};
//!
//! assert_eq!(parse_args(["--quick"]), Ok(Command::Run { quick: true }));
//! assert_eq!(parse_args(["--help"]), Ok(Command::Help));
//! assert!(parse_args(["--bogus"]).is_err());
//! ```

use std::error::Error;
use std::fmt;
use std::io::Write;

use nr_core::{Topology, TopologyError, VIRTUAL_NODES_ENV};

/// The demo's usage text, printed by `--help` and after a usage error.
///
/// # Examples
///
/// ```
/// assert!(examples::demo_cli::USAGE.contains("--quick"));
/// ```
pub const USAGE: &str = "\
Node Replication demo: a sequential HashMap<u64, u64> (10,000 keys) made concurrent with Node
Replication (NR), one replica per (virtual) NUMA node, measured side by side against the same
map behind a Mutex and a parking_lot RwLock: throughput (Mops/s) at 10% and 100% writes on 1, 2
and 4 threads, then NR's cost at 1 thread against the bare map with no synchronization.
Ratios whose repetitions disagree are printed as `noisy`, not as results.

usage: cargo run --release -p examples --example demo [-- OPTIONS]

options:
  --quick      one 50 ms repetition per point instead of three of 250 ms (about 2 s instead
               of 15 s; a smoke test, too short for reliable figures)
  -h, --help   print this text and exit

environment:
  NR_VIRTUAL_NODES=N   split this machine into N virtual NUMA nodes (one replica each); at
                       least the number of real nodes, at most 4 per CPU. Unset on a one-node
                       machine of 2 or more CPUs, the demo uses 2 virtual nodes.

exit status: 0 on success, 1 if the demo failed (the reason is on stderr), 2 on a usage error.
";

/// What the command line asks for.
///
/// # Examples
///
/// ```
/// use examples::demo_cli::{parse_args, Command};
///
/// assert_eq!(parse_args(Vec::<String>::new()), Ok(Command::Run { quick: false }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Run the demo.
    Run {
        /// `--quick`: one short repetition per point.
        quick: bool,
    },
    /// `--help`: print [`USAGE`] and exit successfully.
    Help,
}

/// An argument the demo does not know.
///
/// Cause: a typo, or a flag of another program. Remedy: see [`USAGE`] (`--help`).
///
/// # Examples
///
/// ```
/// let err = examples::demo_cli::parse_args(["--bogus"]).unwrap_err();
/// assert_eq!(err.to_string(), "unknown argument `--bogus`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The argument that was refused.
    pub argument: String,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown argument `{}`", self.argument)
    }
}

impl Error for UsageError {}

/// Parses the demo's arguments (without the program name).
///
/// # Errors
///
/// [`UsageError`] for any argument other than `--quick`, `--help` and `-h`.
///
/// # Examples
///
/// ```
/// use examples::demo_cli::{parse_args, Command};
///
/// assert_eq!(parse_args(["--quick", "-h"]), Ok(Command::Help));
/// ```
pub fn parse_args<I>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<String>,
{
    let mut quick = false;
    let mut help = false;
    for arg in args {
        let arg = arg.into();
        match arg.as_str() {
            "--quick" => quick = true,
            "--help" | "-h" => help = true,
            _ => return Err(UsageError { argument: arg }),
        }
    }
    Ok(if help {
        Command::Help
    } else {
        Command::Run { quick }
    })
}

/// An error and its causes, each level's `Display` once, one per line: the message, then
/// `  caused by: ...` for every `source()`. A cause whose text the level above already
/// printed is skipped, so a chain that repeats itself is still read once.
///
/// # Examples
///
/// ```
/// let err = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
/// assert_eq!(examples::demo_cli::error_report(&err), "no such file");
/// ```
pub fn error_report(err: &(dyn Error + 'static)) -> String {
    let mut report = err.to_string();
    let mut last = report.clone();
    let mut cause = err.source();
    while let Some(err) = cause {
        let text = err.to_string();
        if !last.contains(&text) {
            report.push_str("\n  caused by: ");
            report.push_str(&text);
        }
        last = text;
        cause = err.source();
    }
    report
}

/// The demo's `main`: parses `args`, prints [`USAGE`] for `--help`, calls `run(quick)`
/// otherwise, and reports errors on `stderr` with their `Display` text (never `Debug`).
/// Returns the exit status: 0, 1 if `run` failed, 2 on a usage error (with [`USAGE`]).
///
/// # Examples
///
/// ```
/// use examples::demo_cli::main_with;
///
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// assert_eq!(main_with(["--bogus"], |_| Ok(()), &mut out, &mut err), 2);
/// assert!(String::from_utf8(err)?.starts_with("error: unknown argument `--bogus`"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn main_with<I>(
    args: I,
    run: impl FnOnce(bool) -> Result<(), Box<dyn Error>>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8
where
    I: IntoIterator,
    I::Item: Into<String>,
{
    // Writing the report is best effort: a closed stream leaves only the exit status.
    match parse_args(args) {
        Ok(Command::Help) => {
            let _ = write!(stdout, "{USAGE}");
            0
        }
        Err(err) => {
            let _ = write!(stderr, "error: {err}\n\n{USAGE}");
            2
        }
        Ok(Command::Run { quick }) => match run(quick) {
            Ok(()) => 0,
            Err(err) => {
                let _ = writeln!(stderr, "error: {}", error_report(err.as_ref()));
                1
            }
        },
    }
}

/// The demo's topology: [`Topology::detect`] (which applies `NR_VIRTUAL_NODES`), split into 2
/// virtual nodes when the variable is unset and the machine has one node of 2 or more CPUs.
///
/// # Errors
///
/// Those of [`Topology::detect`], e.g. [`TopologyError::InvalidVirtualNodesEnv`] for
/// `NR_VIRTUAL_NODES=0`.
///
/// # Examples
///
/// ```
/// let topology = examples::demo_cli::demo_topology()?;
/// assert!(topology.num_nodes() >= 1);
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
pub fn demo_topology() -> Result<Topology, TopologyError> {
    let detected = Topology::detect()?;
    if std::env::var_os(VIRTUAL_NODES_ENV).is_none()
        && detected.num_nodes() == 1
        && detected.num_cpus() >= 2
    {
        detected.with_virtual_nodes(2)
    } else {
        Ok(detected)
    }
}

/// Largest over smallest repetition above which a series is too spread to read.
pub const MAX_SPREAD: f64 = 1.5;

/// How far from 1 per-repetition ratios must lie, on both sides, to disagree in direction:
/// one repetition at least 5% ahead and another at least 5% behind. Ratios within 5% of 1 on
/// both sides say "about equal", and agree.
pub const DIRECTION_MARGIN: f64 = 1.05;

/// Why a ratio of two measured series is not a result.
///
/// # Examples
///
/// ```
/// use examples::demo_cli::{judge_ratio, Unreliable};
///
/// let nr = [1.0, 2.0];
/// let rwlock = [1.0, 1.1];
/// assert!(matches!(judge_ratio(&nr, &rwlock, None), Err(Unreliable::Spread { .. })));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Unreliable {
    /// The repetitions of one series differ by more than [`MAX_SPREAD`] (largest / smallest).
    Spread {
        /// Which series: `"numerator"` or `"denominator"`.
        series: &'static str,
        /// Its largest over its smallest repetition.
        spread: f64,
    },
    /// The per-repetition ratios disagree in direction: one above [`DIRECTION_MARGIN`],
    /// another below its inverse.
    Direction {
        /// The smallest per-repetition ratio.
        min: f64,
        /// The largest per-repetition ratio.
        max: f64,
    },
    /// The ratio is above what is possible (NR faster than the bare structure it wraps).
    Impossible {
        /// The median ratio.
        ratio: f64,
        /// The most it can be.
        ceiling: f64,
    },
}

impl fmt::Display for Unreliable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spread { series, spread } => write!(
                f,
                "the {series}'s repetitions differ by {spread:.2}x (more than {MAX_SPREAD}x)"
            ),
            Self::Direction { min, max } => write!(
                f,
                "the repetitions disagree in direction (ratios from {min:.2}x to {max:.2}x)"
            ),
            Self::Impossible { ratio, ceiling } => {
                write!(f, "{ratio:.2}x is impossible (at most {ceiling:.2}x)")
            }
        }
    }
}

/// The median of `values` (the upper one of an even count); `NaN` if empty.
///
/// # Examples
///
/// ```
/// assert_eq!(examples::demo_cli::median(&[3.0, 1.0, 2.0]), 2.0);
/// ```
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The ratio of the medians of two series measured in interleaved repetitions
/// (`numerator[i]` and `denominator[i]` side by side), or why it is not a result: a series
/// spread wider than [`MAX_SPREAD`], per-repetition ratios on both sides of 1 by more than
/// [`DIRECTION_MARGIN`], or a median
/// ratio above `ceiling` (pass `Some(1.0)` where the numerator cannot beat the denominator,
/// such as NR against the bare structure at 1 thread).
///
/// # Errors
///
/// The first [`Unreliable`] reason found.
///
/// # Examples
///
/// ```
/// use examples::demo_cli::{judge_ratio, Unreliable};
///
/// assert_eq!(judge_ratio(&[2.0, 2.1, 2.0], &[1.0, 1.0, 1.05], None), Ok(2.0));
/// // NR at 1.32x the bare map: impossible, so not a result.
/// assert!(matches!(
///     judge_ratio(&[13.2], &[10.0], Some(1.0)),
///     Err(Unreliable::Impossible { .. })
/// ));
/// ```
pub fn judge_ratio(
    numerator: &[f64],
    denominator: &[f64],
    ceiling: Option<f64>,
) -> Result<f64, Unreliable> {
    for (series, values) in [("numerator", numerator), ("denominator", denominator)] {
        // A zero, negative or non-finite throughput is no measurement: an infinite spread.
        if values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
            return Err(Unreliable::Spread {
                series,
                spread: f64::INFINITY,
            });
        }
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        if !values.is_empty() && max / min > MAX_SPREAD {
            return Err(Unreliable::Spread {
                series,
                spread: max / min,
            });
        }
    }
    let ratios: Vec<f64> = numerator
        .iter()
        .zip(denominator)
        .map(|(n, d)| n / d)
        .collect();
    let min = ratios.iter().copied().fold(f64::MAX, f64::min);
    let max = ratios.iter().copied().fold(f64::MIN, f64::max);
    if min < 1.0 / DIRECTION_MARGIN && max > DIRECTION_MARGIN {
        return Err(Unreliable::Direction { min, max });
    }
    let ratio = median(numerator) / median(denominator);
    match ceiling {
        Some(ceiling) if ratio > ceiling => Err(Unreliable::Impossible { ratio, ceiling }),
        _ => Ok(ratio),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_series_give_the_ratio_of_medians() {
        assert_eq!(
            judge_ratio(&[4.0, 4.2, 4.1], &[2.0, 2.1, 2.0], None),
            Ok(4.1 / 2.0)
        );
        // At the limits: a spread of exactly 1.5 and a ratio of exactly the ceiling pass.
        assert_eq!(judge_ratio(&[1.0, 1.5], &[2.0, 3.0], Some(0.5)), Ok(0.5));
    }

    #[test]
    fn a_wide_spread_is_noisy() {
        assert_eq!(
            judge_ratio(&[1.0, 1.6, 1.2], &[1.0, 1.0, 1.0], None),
            Err(Unreliable::Spread {
                series: "numerator",
                spread: 1.6
            })
        );
        assert!(matches!(
            judge_ratio(&[1.0, 1.0], &[3.0, 1.0], None),
            Err(Unreliable::Spread {
                series: "denominator",
                ..
            })
        ));
    }

    #[test]
    fn ratios_on_both_sides_of_one_are_noisy() {
        assert_eq!(
            judge_ratio(&[1.1, 0.9], &[1.0, 1.0], None),
            Err(Unreliable::Direction { min: 0.9, max: 1.1 })
        );
        // All on one side (or exactly 1) is a direction.
        assert!(judge_ratio(&[1.0, 1.1], &[1.0, 1.0], None).is_ok());
        // Within the margin on both sides is "about equal" (the demo's NR/Mutex at 100%
        // writes, 2 threads: 0.98x to 1.01x), and so is just one side beyond it.
        assert!(judge_ratio(&[0.98, 1.01, 1.0], &[1.0, 1.0, 1.0], None).is_ok());
        assert!(judge_ratio(&[0.97, 1.2], &[1.0, 1.0], None).is_ok());
        assert!(judge_ratio(&[0.94, 1.06], &[1.0, 1.0], None).is_err());
    }

    #[test]
    fn a_ratio_above_the_ceiling_is_impossible() {
        // The figure of issue 22: NR at 1.32x the bare sequential map.
        let err = judge_ratio(&[13.2, 13.0, 13.3], &[10.0, 10.1, 9.9], Some(1.0)).unwrap_err();
        assert!(matches!(err, Unreliable::Impossible { ceiling, .. } if ceiling == 1.0));
        assert_eq!(err.to_string(), "1.32x is impossible (at most 1.00x)");
        // Without a ceiling the same figures are a result.
        assert!(judge_ratio(&[13.2, 13.0, 13.3], &[10.0, 10.1, 9.9], None).is_ok());
    }

    #[test]
    fn zero_or_nan_throughput_is_noisy() {
        assert!(judge_ratio(&[1.0, 1.0], &[0.0, 1.0], None).is_err());
        assert!(judge_ratio(&[f64::NAN], &[1.0], None).is_err());
    }

    #[test]
    fn parser_accepts_the_documented_flags_only() {
        assert_eq!(parse_args(["--quick"]), Ok(Command::Run { quick: true }));
        assert_eq!(parse_args(["-h"]), Ok(Command::Help));
        assert_eq!(parse_args(["--help", "--quick"]), Ok(Command::Help));
        for bad in ["--bogus", "quick", "--quick=1", "-q", ""] {
            assert_eq!(
                parse_args(["--quick", bad]),
                Err(UsageError {
                    argument: bad.to_owned()
                })
            );
        }
    }

    #[test]
    fn usage_documents_every_flag_and_the_environment() {
        for needle in [
            "--quick",
            "--help",
            "-h",
            VIRTUAL_NODES_ENV,
            "Mops/s",
            "exit status",
        ] {
            assert!(USAGE.contains(needle), "usage lacks {needle}");
        }
    }

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);
    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn report_prints_each_level_once() {
        let chain = Layer(
            "cannot open demo.pmem",
            Some(Box::new(Layer("no such file", None))),
        );
        assert_eq!(
            error_report(&chain),
            "cannot open demo.pmem\n  caused by: no such file"
        );
        // A level whose Display already holds its cause's text does not print it again.
        let repeating = Layer(
            "cannot open demo.pmem: no such file",
            Some(Box::new(Layer("no such file", None))),
        );
        assert_eq!(
            error_report(&repeating),
            "cannot open demo.pmem: no such file"
        );
    }
}
