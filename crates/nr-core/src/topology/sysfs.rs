//! Topology discovery from Linux sysfs, and the parser of its CPU list format.
//!
//! Each NUMA node `N` is a directory `/sys/devices/system/node/nodeN` whose `cpulist` file
//! lists its CPUs ("0-3,8,10-11\n"; an empty line for a memory-only node). See the kernel's
//! `Documentation/ABI/stable/sysfs-devices-node`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{allowed_cpus, Topology, TopologyError, TopologySource, CPU_ID_LIMIT};

/// Where the kernel describes the NUMA nodes.
const SYSFS_NODE_DIR: &str = "/sys/devices/system/node";

/// Parses a CPU list in the kernel's format: comma-separated items, each a CPU id (`8`) or an
/// inclusive range (`0-3`). Surrounding whitespace (the trailing newline of a sysfs file) is
/// ignored, and an empty list is valid (a memory-only node). Returns the CPUs sorted, without
/// duplicates.
///
/// # Errors
///
/// [`TopologyError::InvalidCpuList`] for an empty item (`"1,,2"`, `"1,"`), a non-number, a
/// sign, a descending range (`"3-1"`), a stride (`"0-7:2"`, which sysfs never writes) or a CPU
/// id of at least [`CPU_ID_LIMIT`]. Malformed input never panics.
///
/// # Examples
///
/// ```
/// use nr_core::parse_cpu_list;
///
/// assert_eq!(parse_cpu_list("0-3,8,10-11\n")?, [0, 1, 2, 3, 8, 10, 11]);
/// assert_eq!(parse_cpu_list("")?, [] as [usize; 0]);
/// assert!(parse_cpu_list("0-").is_err());
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, TopologyError> {
    let invalid = |reason: String| TopologyError::InvalidCpuList {
        input: text.to_owned(),
        reason,
        path: None,
    };
    let trimmed = text.trim();
    let mut cpus = Vec::new();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    for item in trimmed.split(',') {
        let (first, last) = match item.split_once('-') {
            Some((first, last)) => (parse_cpu_id(first), parse_cpu_id(last)),
            None => (parse_cpu_id(item), parse_cpu_id(item)),
        };
        let (first, last) = match (first, last) {
            (Ok(first), Ok(last)) => (first, last),
            (Err(reason), _) | (_, Err(reason)) => {
                return Err(invalid(format!("item {item:?}: {reason}")))
            }
        };
        if first > last {
            return Err(invalid(format!("item {item:?}: range is descending")));
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parses one CPU id: ASCII digits only, below [`CPU_ID_LIMIT`].
fn parse_cpu_id(text: &str) -> Result<usize, &'static str> {
    if text.is_empty() {
        return Err("missing CPU id");
    }
    if !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err("CPU id is not a decimal number");
    }
    match text.parse::<usize>() {
        Ok(cpu) if cpu < CPU_ID_LIMIT => Ok(cpu),
        _ => Err("CPU id is too large"),
    }
}

impl Topology {
    /// Discovers the topology from Linux sysfs (`/sys/devices/system/node/node*/cpulist`).
    ///
    /// Nodes are ordered by OS node id and keep it as their [`NumaNode::memory_node`]. Their
    /// CPUs are restricted to [`allowed_cpus`]; nodes
    /// left without CPUs (memory-only nodes, nodes outside the container's cpuset) are
    /// dropped, so node indices are dense even when OS node ids are not.
    ///
    /// # Errors
    ///
    /// - [`TopologyError::SysfsUnavailable`] if there is no node directory
    ///   ([`Topology::detect`] falls back in that case);
    /// - [`TopologyError::Io`] if a directory or `cpulist` file cannot be read;
    /// - [`TopologyError::InvalidCpuList`] if a `cpulist` file is malformed;
    /// - [`TopologyError::NoAllowedCpus`] if no node has an allowed CPU;
    /// - the errors of [`allowed_cpus`].
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{Topology, TopologyError};
    ///
    /// match Topology::from_sysfs() {
    ///     Ok(topology) => assert!(topology.num_nodes() >= 1),
    ///     // Not Linux, or a kernel without NUMA: detect() would fall back.
    ///     Err(TopologyError::SysfsUnavailable { .. }) => {}
    ///     Err(err) => panic!("{err}"),
    /// }
    /// ```
    ///
    /// [`NumaNode::memory_node`]: super::NumaNode::memory_node
    pub fn from_sysfs() -> Result<Topology, TopologyError> {
        let nodes = read_node_dir(Path::new(SYSFS_NODE_DIR))?;
        Self::from_discovered(TopologySource::Sysfs, nodes, &allowed_cpus()?)
    }
}

/// Reads every `node<N>/cpulist` under `dir`: `(N, cpus)` pairs sorted by `N`.
fn read_node_dir(dir: &Path) -> Result<Vec<(usize, Vec<usize>)>, TopologyError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(TopologyError::SysfsUnavailable {
                path: dir.to_owned(),
                source: Some(err),
            })
        }
        Err(source) => {
            return Err(TopologyError::Io {
                path: dir.to_owned(),
                source,
            })
        }
    };
    let mut nodes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| TopologyError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let name = entry.file_name();
        // Skip `online`, `possible`, `has_cpu`, `power`, ...: only `node<digits>` is a node.
        let Some(id) = name.to_str().and_then(node_id) else {
            continue;
        };
        let path = entry.path().join("cpulist");
        nodes.push((id, read_cpu_list(&path)?));
    }
    if nodes.is_empty() {
        return Err(TopologyError::SysfsUnavailable {
            path: dir.to_owned(),
            source: None,
        });
    }
    nodes.sort_unstable_by_key(|&(id, _)| id);
    Ok(nodes)
}

/// The `N` of a directory named `node<N>`, if that is its name.
fn node_id(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("node")?;
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Reads and parses one `cpulist` file, naming the file in any error.
fn read_cpu_list(path: &Path) -> Result<Vec<usize>, TopologyError> {
    let text = fs::read_to_string(path).map_err(|source| TopologyError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_cpu_list(&text).map_err(|err| match err {
        TopologyError::InvalidCpuList { input, reason, .. } => TopologyError::InvalidCpuList {
            input,
            reason,
            path: Some(PathBuf::from(path)),
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_invalid(text: &str) {
        match parse_cpu_list(text) {
            Err(TopologyError::InvalidCpuList { input, path, .. }) => {
                assert_eq!(input, text);
                assert!(path.is_none());
            }
            other => panic!("{text:?} should be rejected, got {other:?}"),
        }
    }

    #[test]
    fn parses_kernel_cpu_lists() {
        assert_eq!(parse_cpu_list("0").unwrap(), [0]);
        assert_eq!(parse_cpu_list("0-1\n").unwrap(), [0, 1]);
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            [0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("5-5").unwrap(), [5]);
        assert_eq!(parse_cpu_list(" 2,0 \n").unwrap(), [0, 2]);
        assert_eq!(parse_cpu_list("0-2,1-3").unwrap(), [0, 1, 2, 3]);
        assert_eq!(
            parse_cpu_list(&format!("{}", CPU_ID_LIMIT - 1)).unwrap(),
            [CPU_ID_LIMIT - 1]
        );
    }

    #[test]
    fn empty_list_is_a_memory_only_node() {
        assert!(parse_cpu_list("").unwrap().is_empty());
        assert!(parse_cpu_list("\n").unwrap().is_empty());
    }

    #[test]
    fn rejects_malformed_cpu_lists() {
        for text in [
            ",", "1,", ",1", "1,,2", "-", "-1", "1-", "a", "1-b", "0x1", "+1", "1 - 2", "3-1",
            "0-7:2", "1-2-3", "0;1", "٣",
        ] {
            assert_invalid(text);
        }
    }

    #[test]
    fn rejects_huge_ids_without_allocating() {
        assert_invalid(&CPU_ID_LIMIT.to_string());
        assert_invalid("0-18446744073709551615");
        assert_invalid("0-99999999999999999999999999");
    }

    #[test]
    fn node_id_accepts_only_node_digits() {
        assert_eq!(node_id("node0"), Some(0));
        assert_eq!(node_id("node12"), Some(12));
        for name in ["node", "nodeX", "node-1", "online", "possible", "has_cpu"] {
            assert_eq!(node_id(name), None, "{name}");
        }
    }

    /// A fake sysfs node directory under the system temp directory, removed on drop.
    struct FakeNodeDir(PathBuf);

    impl FakeNodeDir {
        fn new(test: &str, nodes: &[(&str, &str)]) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("nr-core-topology-{}-{test}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("possible"), "0-3\n").unwrap();
            for (name, cpulist) in nodes {
                fs::create_dir(dir.join(name)).unwrap();
                fs::write(dir.join(name).join("cpulist"), cpulist).unwrap();
            }
            Self(dir)
        }
    }

    impl Drop for FakeNodeDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn reads_nodes_in_id_order_and_restricts_to_allowed_cpus() {
        let dir = FakeNodeDir::new(
            "order",
            &[
                ("node10", "6-7\n"),
                ("node2", "4-5\n"),
                ("node0", "0-3\n"),
                ("node1", "\n"),
                ("nodeX", "8\n"),
            ],
        );
        let nodes = read_node_dir(&dir.0).unwrap();
        assert_eq!(
            nodes,
            [
                (0, vec![0, 1, 2, 3]),
                (1, vec![]),
                (2, vec![4, 5]),
                (10, vec![6, 7])
            ]
        );
        let topology =
            Topology::from_discovered(TopologySource::Sysfs, nodes, &[1, 2, 6, 7, 9]).unwrap();
        let summary: Vec<(usize, usize, Vec<usize>)> = topology
            .nodes()
            .iter()
            .map(|node| (node.index(), node.memory_node(), node.cpus().to_vec()))
            .collect();
        // node1 is memory-only and node2 is outside the allowed set: both dropped.
        assert_eq!(summary, [(0, 0, vec![1, 2]), (1, 10, vec![6, 7])]);
    }

    #[test]
    fn no_allowed_cpu_is_an_error() {
        let dir = FakeNodeDir::new("disjoint", &[("node0", "0-1\n")]);
        let nodes = read_node_dir(&dir.0).unwrap();
        let err = Topology::from_discovered(TopologySource::Sysfs, nodes, &[5]).unwrap_err();
        assert!(matches!(err, TopologyError::NoAllowedCpus { allowed } if allowed == [5]));
    }

    #[test]
    fn missing_or_empty_directory_is_unavailable() {
        let missing = std::env::temp_dir().join("nr-core-topology-does-not-exist");
        assert!(matches!(
            read_node_dir(&missing),
            Err(TopologyError::SysfsUnavailable {
                source: Some(_),
                ..
            })
        ));
        let dir = FakeNodeDir::new("empty", &[]);
        assert!(matches!(
            read_node_dir(&dir.0),
            Err(TopologyError::SysfsUnavailable { source: None, .. })
        ));
    }

    #[test]
    fn malformed_cpulist_file_names_the_file() {
        let dir = FakeNodeDir::new("malformed", &[("node0", "0-x\n")]);
        match read_node_dir(&dir.0) {
            Err(TopologyError::InvalidCpuList {
                path: Some(path), ..
            }) => assert!(path.ends_with("node0/cpulist")),
            other => panic!("expected InvalidCpuList with a path, got {other:?}"),
        }
    }

    #[test]
    fn missing_cpulist_file_is_an_io_error() {
        let dir = FakeNodeDir::new("nocpulist", &[]);
        fs::create_dir(dir.0.join("node0")).unwrap();
        assert!(matches!(
            read_node_dir(&dir.0),
            Err(TopologyError::Io { .. })
        ));
    }
}
