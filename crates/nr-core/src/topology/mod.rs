//! TEMPORARY stub; replaced by the topology branch.
#![allow(missing_docs, dead_code)]
use std::fmt;
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    nodes: Vec<NumaNode>,
}
#[derive(Debug, Clone, PartialEq)]
pub struct NumaNode {
    index: usize,
    cpus: Vec<usize>,
}
#[derive(Debug)]
pub enum TopologyError {
    Bad,
}
impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bad")
    }
}
impl std::error::Error for TopologyError {}
impl Topology {
    pub fn detect() -> Result<Topology, TopologyError> {
        Ok(Topology {
            nodes: vec![NumaNode {
                index: 0,
                cpus: vec![0, 1],
            }],
        })
    }
    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }
    pub fn num_cpus(&self) -> usize {
        self.nodes.iter().map(|n| n.cpus.len()).sum()
    }
    pub fn node_of_cpu(&self, cpu: usize) -> Option<usize> {
        self.nodes.iter().position(|n| n.cpus.contains(&cpu))
    }
    pub fn with_virtual_nodes(&self, n: usize) -> Result<Topology, TopologyError> {
        let c = self.nodes[0].cpus.clone();
        if n == 0 || n > c.len() {
            return Err(TopologyError::Bad);
        }
        Ok(Topology {
            nodes: (0..n)
                .map(|i| NumaNode {
                    index: i,
                    cpus: c.iter().copied().skip(i).step_by(n).collect(),
                })
                .collect(),
        })
    }
    pub fn cpu_for_thread(&self, i: usize) -> usize {
        let n = &self.nodes[i % self.nodes.len()];
        n.cpus[(i / self.nodes.len()) % n.cpus.len()]
    }
}
impl NumaNode {
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }
    pub fn index(&self) -> usize {
        self.index
    }
}
pub fn pin_current_thread(_cpus: &[usize]) -> Result<(), TopologyError> {
    Ok(())
}
