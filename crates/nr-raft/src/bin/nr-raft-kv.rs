//! `nr-raft-kv`: one host of a replicated `u64 → u64` map ([`nr_raft::Kv`]), and its client.
//! Loopback addresses only.
//!
//! ```text
//! nr-raft-kv serve ID PEERS DIR      # PEERS: 1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103
//! nr-raft-kv put ADDR KEY VALUE      # prints the old value
//! nr-raft-kv get ADDR KEY [stale]    # linearizable unless `stale`
//! ```
//!
//! `serve` prints `leader N` each time the leader it knows changes (tests read it), and runs
//! until killed: `kill -9` is a crash, and the next `serve` on the same DIR recovers.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use nr_raft::{Client, Consistency, Host, HostConfig, Kv, RaftError};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nr-raft-kv: {e}");
            let mut source = std::error::Error::source(e.as_ref());
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn loopback(s: &str) -> Res<SocketAddr> {
    let a: SocketAddr = s.parse()?;
    if !a.ip().is_loopback() {
        return Err(format!("{a}: loopback addresses only").into());
    }
    Ok(a)
}

fn peers(s: &str) -> Res<Vec<(u64, SocketAddr)>> {
    s.split(',')
        .map(|p| {
            let (id, addr) = p.split_once('=').ok_or(format!("{p}: expected ID=ADDR"))?;
            Ok((id.parse()?, loopback(addr)?))
        })
        .collect()
}

fn run(args: &[String]) -> Res<()> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["serve", id, ps, dir] => serve(id.parse()?, peers(ps)?, dir),
        ["put", addr, k, v] => {
            let mut c = Client::<Kv>::connect(loopback(addr)?)?;
            println!("{:?}", c.write_retrying((k.parse()?, v.parse()?), 100)?);
            Ok(())
        }
        ["get", addr, k, rest @ ..] => {
            let c = match rest {
                [] => Consistency::Linearizable,
                ["stale"] => Consistency::Stale,
                _ => return Err("get ADDR KEY [stale]".into()),
            };
            let mut cl = Client::<Kv>::connect(loopback(addr)?)?;
            println!("{:?}", cl.read_retrying(k.parse()?, c, 100)?);
            Ok(())
        }
        _ => Err("usage: serve ID PEERS DIR | put ADDR KEY VALUE | get ADDR KEY [stale]".into()),
    }
}

fn serve(id: u64, peers: Vec<(u64, SocketAddr)>, dir: &str) -> Res<()> {
    let cfg = HostConfig::new(id, peers, dir.into());
    // A restarted host's port may still be held for a moment (by a connection that got it as
    // its local port): retry the bind for up to 5 s.
    let mut attempt = 0;
    let host = loop {
        match Host::<Kv>::start(cfg.clone(), Kv::default) {
            Err(RaftError::Io { op: "listen", .. }) if attempt < 250 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => break r?,
        }
    };
    println!("serving {} on {}", host.id(), host.addr());
    let mut known = 0;
    loop {
        let leader = host.stats().leader;
        if leader != known {
            known = leader;
            println!("leader {leader}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
