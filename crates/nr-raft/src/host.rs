//! A host: the local `NodeReplicated`, its Raft loop, its listener and its peer links.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nr_core::NodeReplicated;
use raft::{Config, RawNode, ReadOnlyOption};

use crate::driver::{decode_message, Driver, Event};
use crate::net::{self, NetFaults};
use crate::session::{Outcome, Replicated, SessionCmd};
use crate::storage::DiskLog;
use crate::sync::{
    channel, spawn_named, Arc, AtomicBool, AtomicU64, JoinHandle, Mutex, Ordering, Sender,
};
use crate::wire::{Consistency, Failure, Hello, PeerFrame, Reply, Request};
use crate::{read_frame, write_frame, FrameError, RaftDispatch, RaftError};

/// How a host runs. [`HostConfig::new`] fills in defaults suited to loopback.
///
/// # Examples
///
/// ```
/// let peers = vec![(1, "127.0.0.1:7001".parse()?), (2, "127.0.0.1:7002".parse()?)];
/// let cfg = nr_raft::HostConfig::new(1, peers, "/tmp/h1".into());
/// assert_eq!(cfg.election_ticks, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// This host's Raft id (non-zero), one of `peers`.
    pub id: u64,
    /// Every host of the group, this one included: id and address.
    pub peers: Vec<(u64, SocketAddr)>,
    /// The directory of this host's log and snapshots (nr-durable's file medium).
    pub dir: PathBuf,
    /// One Raft tick (default 20 ms).
    pub tick: Duration,
    /// Ticks without a leader before a follower campaigns (raft-rs randomizes in
    /// `[n, 2n)`; default 10).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats (default 2).
    pub heartbeat_ticks: usize,
    /// How long a request waits for its commit or read index before it answers
    /// [`RaftError::Timeout`] (default 2 s).
    pub request_timeout: Duration,
    /// A snapshot is taken every this many applied entries (0: never; default 10,000).
    pub snapshot_every: u64,
    /// Replicas of the local `NodeReplicated` (default 1).
    pub replicas: usize,
    /// Threads that may use one local replica at once: the Raft loop and each client
    /// connection's read (default 64).
    pub threads: usize,
    /// The most client sessions the group remembers (default 4,096): registering one more
    /// expires the least recently used ([`RaftError::SessionExpired`]). Part of the initial
    /// state: the value of the group's first start holds (snapshots carry it); give every
    /// host the same.
    pub sessions: usize,
}

impl HostConfig {
    /// A configuration with the defaults listed on each field.
    ///
    /// # Examples
    ///
    /// See [`HostConfig`].
    pub fn new(id: u64, peers: Vec<(u64, SocketAddr)>, dir: PathBuf) -> Self {
        Self {
            id,
            peers,
            dir,
            tick: Duration::from_millis(20),
            election_ticks: 10,
            heartbeat_ticks: 2,
            request_timeout: Duration::from_secs(2),
            snapshot_every: 10_000,
            replicas: 1,
            threads: 64,
            sessions: 4096,
        }
    }
}

/// What a host's threads share.
pub(crate) struct Shared<D: RaftDispatch> {
    pub(crate) id: u64,
    /// The local object; replaced whole when a snapshot from the leader is installed.
    nr: Mutex<Arc<NodeReplicated<Replicated<D>>>>,
    replicas: usize,
    threads: usize,
    pub(crate) stop: AtomicBool,
    pub(crate) applied: AtomicU64,
    pub(crate) leader: AtomicU64,
    pub(crate) frame_errors: AtomicU64,
    pub(crate) log_syncs: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) faults: NetFaults,
    pub(crate) request_timeout: Duration,
    events: Sender<Event<D>>,
    /// Accepted connections, shut down when the host stops.
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
}

impl<D: RaftDispatch> Shared<D> {
    pub(crate) fn nr(&self) -> Arc<NodeReplicated<Replicated<D>>> {
        self.nr.lock().clone()
    }

    /// Replaces the local object by one built from `state` (an installed snapshot).
    pub(crate) fn replace_state(&self, state: &[u8]) -> Result<(), RaftError> {
        let nr = build_nr::<D>(state, self.replicas, self.threads)?;
        *self.nr.lock() = Arc::new(nr);
        Ok(())
    }

    /// The local object's state, encoded (every write the Raft loop applied).
    pub(crate) fn encode_state(&self) -> Result<Vec<u8>, RaftError> {
        self.nr()
            .with_replica_state(0, |d, _| postcard::to_allocvec(d))?
            .map_err(|source| RaftError::Codec { source })
    }
}

/// The local replicas of the replicated object (the structure and its session table) encoded
/// in `state`.
fn build_nr<D: RaftDispatch>(
    state: &[u8],
    replicas: usize,
    threads: usize,
) -> Result<NodeReplicated<Replicated<D>>, RaftError> {
    let first: Replicated<D> =
        postcard::from_bytes(state).map_err(|source| RaftError::Codec { source })?;
    let mut first = Some(first);
    NodeReplicated::builder()
        .replicas(replicas)
        .threads_per_replica(threads)
        .log_size(4096)
        .build(|_| {
            first.take().unwrap_or_else(|| {
                postcard::from_bytes(state).expect("invariant: the same bytes decoded above")
            })
        })
        .map_err(|e| RaftError::Replica {
            source: Box::new(e),
        })
}

/// What a host reports about itself.
///
/// # Examples
///
/// ```
/// let s = nr_raft::HostStats::default();
/// assert_eq!((s.applied, s.leader, s.frame_errors), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostStats {
    /// The last Raft index applied to the local object.
    pub applied: u64,
    /// The leader this host knows (0: none).
    pub leader: u64,
    /// Connections closed because a frame failed its checks.
    pub frame_errors: u64,
    /// `fdatasync`s of the host's log since it started (one per Raft ready batch that had
    /// entries or a hard state to persist).
    pub log_syncs: u64,
    /// Writes this host's Raft loop found to be retries of an applied write (since it
    /// started): answered with the saved response, not applied again.
    pub duplicate_writes: u64,
}

/// One host of the group: a local [`NodeReplicated`] whose writes are ordered by Raft.
///
/// Start one per host with [`Host::start`]; clients connect with [`Client`](crate::Client).
/// Dropping the host (or [`Host::stop`]) stops its threads and closes its connections; the
/// log on disk is complete up to the last acknowledged message, so [`Host::start`] on the same
/// directory recovers it (a crash at any point leaves the same log: every append is synced
/// before the messages that depend on it leave).
///
/// # Examples
///
/// ```
/// # use nr_raft::{Host, HostConfig, Client, Consistency};
/// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct Counter(u64);
/// # impl nr_core::Dispatch for Counter {
/// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
/// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
/// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
/// # }
/// # impl nr_raft::RaftDispatch for Counter { type Query = (); fn query(_: &()) {} }
/// let dir = tempfile::tempdir()?;
/// let addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
/// let host = Host::<Counter>::start(HostConfig::new(1, vec![(1, addr)], dir.path().into()), Counter::default)?;
/// let mut c = Client::<Counter>::connect(host.addr())?;
/// assert_eq!(c.write_retrying(5, 100)?, 5);
/// assert_eq!(c.read((), Consistency::Linearizable)?, 5);
/// // A client of several hosts moves to the next one when its connection breaks; its first
/// // write opens its session, which makes a retried write apply once.
/// let mut any = Client::<Counter>::connect_any(&[host.addr()])?;
/// assert_eq!(any.session(), None);
/// assert_eq!(any.write_retrying(1, 100)?, 6);
/// assert!(any.session().is_some());
/// assert_eq!(host.stats().duplicate_writes, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Host<D: RaftDispatch> {
    shared: Arc<Shared<D>>,
    addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
}

impl<D: RaftDispatch> std::fmt::Debug for Host<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("id", &self.shared.id)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl<D: RaftDispatch> Host<D> {
    /// Starts a host: recovers its log from `cfg.dir` (or creates it with `init()`'s state),
    /// listens on its address, links to its peers and joins the group.
    ///
    /// # Errors
    ///
    /// [`RaftError::Durable`] (the log), [`RaftError::Io`] (the address),
    /// [`RaftError::Engine`] (a bad configuration), [`RaftError::Replica`].
    ///
    /// # Examples
    ///
    /// See [`Host`].
    pub fn start(cfg: HostConfig, init: impl FnOnce() -> D) -> Result<Self, RaftError> {
        let voters: Vec<u64> = cfg.peers.iter().map(|p| p.0).collect();
        let addr = cfg
            .peers
            .iter()
            .find(|p| p.0 == cfg.id)
            .map(|p| p.1)
            .ok_or(RaftError::Engine {
                source: raft::Error::ConfigInvalid(format!("id {} not among the peers", cfg.id)),
            })?;
        let (log, state) = DiskLog::open(&cfg.dir, &voters, || {
            postcard::to_allocvec(&Replicated::new(init(), cfg.sessions))
                .map_err(|source| RaftError::Codec { source })
        })?;
        let nr = build_nr::<D>(&state, cfg.replicas, cfg.threads)?;
        let listener = TcpListener::bind(addr).map_err(|source| RaftError::Io {
            op: "listen",
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| RaftError::Io {
                op: "listen",
                source,
            })?;
        let raft_cfg = Config {
            id: cfg.id,
            election_tick: cfg.election_ticks,
            heartbeat_tick: cfg.heartbeat_ticks,
            applied: log.snapshot_index(),
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            read_only_option: ReadOnlyOption::Safe,
            pre_vote: true,
            check_quorum: true,
            ..Default::default()
        };
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        let raw = RawNode::new(&raft_cfg, log, &logger)?;
        let (tx, rx) = channel();
        let snapshot_index = raw.store().snapshot_index();
        let shared = Arc::new(Shared {
            id: cfg.id,
            nr: Mutex::new(Arc::new(nr)),
            replicas: cfg.replicas,
            threads: cfg.threads,
            stop: AtomicBool::new(false),
            applied: AtomicU64::new(snapshot_index),
            leader: AtomicU64::new(0),
            frame_errors: AtomicU64::new(0),
            log_syncs: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            faults: NetFaults::default(),
            request_timeout: cfg.request_timeout,
            events: tx,
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(0),
        });
        let mut threads = Vec::new();
        let mut peers = HashMap::new();
        for &(pid, paddr) in cfg.peers.iter().filter(|p| p.0 != cfg.id) {
            let (ptx, prx) = channel();
            peers.insert(pid, ptx);
            let sh = shared.clone();
            threads.push(spawn(format!("nr-raft-{}-to-{pid}", cfg.id), move || {
                net::run_outbound(&sh.stop, &sh.faults, sh.id, paddr, prx)
            })?);
        }
        let boot = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let driver = Driver::new(
            raw,
            shared.clone(),
            rx,
            peers,
            cfg.tick,
            cfg.snapshot_every,
            boot,
        );
        threads.push(spawn(format!("nr-raft-{}-raft", cfg.id), move || {
            driver.run()
        })?);
        let sh = shared.clone();
        threads.push(spawn(format!("nr-raft-{}-listen", cfg.id), move || {
            accept_loop(&sh, &listener)
        })?);
        Ok(Self {
            shared,
            addr,
            threads,
        })
    }

    /// The address clients and peers connect to.
    ///
    /// # Examples
    ///
    /// See [`Host`].
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// This host's Raft id.
    ///
    /// # Examples
    ///
    /// See [`Host`].
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// The fault switches of this host's network layer (tests and demonstrations).
    ///
    /// # Examples
    ///
    /// See [`NetFaults`].
    pub fn faults(&self) -> &NetFaults {
        &self.shared.faults
    }

    /// What this host reports about itself now.
    ///
    /// # Examples
    ///
    /// See [`Host`].
    pub fn stats(&self) -> HostStats {
        // Relaxed: statistics, each read alone.
        HostStats {
            applied: self.shared.applied.load(Ordering::Relaxed),
            leader: self.shared.leader.load(Ordering::Relaxed),
            frame_errors: self.shared.frame_errors.load(Ordering::Relaxed),
            log_syncs: self.shared.log_syncs.load(Ordering::Relaxed),
            duplicate_writes: self.shared.duplicates.load(Ordering::Relaxed),
        }
    }

    /// Whether this host is the leader it knows of.
    ///
    /// # Examples
    ///
    /// See [`Host`].
    pub fn is_leader(&self) -> bool {
        self.stats().leader == self.shared.id
    }

    /// Stops the host (as dropping it does) and waits for its threads.
    ///
    /// # Examples
    ///
    /// See [`Host`].
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Relaxed: the flag is polled; the joins below order everything after it.
        self.shared.stop.store(true, Ordering::Relaxed);
        for (_, c) in self.shared.conns.lock().drain() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl<D: RaftDispatch> Drop for Host<D> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, RaftError> {
    spawn_named(name, f).map_err(|source| RaftError::Io {
        op: "spawn a thread",
        source,
    })
}

fn accept_loop<D: RaftDispatch>(shared: &Arc<Shared<D>>, listener: &TcpListener) {
    // Relaxed: see `Host::shutdown`.
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_nodelay(true);
                // Relaxed: a unique counter.
                let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
                let Ok(copy) = stream.try_clone() else {
                    continue;
                };
                shared.conns.lock().insert(id, copy);
                // Relaxed: see above; a connection accepted during shutdown is closed here.
                if shared.stop.load(Ordering::Relaxed) {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                }
                let sh = shared.clone();
                let name = format!("nr-raft-{}-conn-{id}", shared.id);
                // Connections are not joined: closing their sockets ends them.
                let _ = spawn_named(name, move || {
                    serve(&sh, stream, id);
                    if let Some(c) = sh.conns.lock().remove(&id) {
                        let _ = c.shutdown(std::net::Shutdown::Both);
                    }
                });
            }
            Err(_) => crate::sync::sleep(Duration::from_millis(5)),
        }
    }
}

/// Serves one connection until it closes or a frame fails its checks.
fn serve<D: RaftDispatch>(shared: &Shared<D>, mut stream: TcpStream, id: u64) {
    let result = match read_frame::<Hello, _>(&mut stream) {
        Ok(Hello::Peer { .. }) => serve_peer(shared, &mut stream),
        Ok(Hello::Client) => serve_client(shared, &mut stream, id),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        if !matches!(e, FrameError::Closed | FrameError::Io { .. }) {
            // Relaxed: a statistic.
            shared.frame_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn serve_peer<D: RaftDispatch>(
    shared: &Shared<D>,
    stream: &mut TcpStream,
) -> Result<(), FrameError> {
    loop {
        let PeerFrame(bytes) = read_frame(stream)?;
        let Some(m) = decode_message(&bytes) else {
            return Err(FrameError::NotRaft {
                len: bytes.len() as u64,
            });
        };
        if shared.faults.drops() {
            continue;
        }
        if shared.events.send(Event::Raft(m)).is_err() {
            return Ok(());
        }
    }
}

fn serve_client<D: RaftDispatch>(
    shared: &Shared<D>,
    stream: &mut TcpStream,
    conn: u64,
) -> Result<(), FrameError> {
    let mut buf = Vec::new();
    let replica = (conn as usize) % shared.replicas.max(1);
    loop {
        let req: Request<D::WriteOperation, D::Query> = read_frame(stream)?;
        let reply: Reply<D::Response> = match req {
            Request::Register => {
                let id = propose(shared, SessionCmd::Register).and_then(|o| match o {
                    Outcome::Registered(id) => Ok(id),
                    _ => Err(Failure::Poisoned),
                });
                write_frame(stream, &mut buf, &id)?;
                continue;
            }
            Request::Write { session, seq, op } => {
                let cmd = SessionCmd::Write { session, seq, op };
                let reply = propose(shared, cmd).and_then(|o| match o {
                    Outcome::Applied(r) | Outcome::Duplicate(r) => Ok(r),
                    Outcome::Expired => Err(Failure::SessionExpired),
                    Outcome::Superseded => Err(Failure::Superseded),
                    Outcome::Registered(_) => Err(Failure::Poisoned),
                });
                if shared.faults.take_lost_reply() {
                    // The write's outcome is known here; its client never learns it.
                    return Ok(());
                }
                reply
            }
            Request::Read(q, c) => {
                let ready = match c {
                    Consistency::Stale => Ok(0),
                    Consistency::Linearizable => {
                        let (tx, rx) = channel();
                        match shared.events.send(Event::ReadIndex { reply: tx }) {
                            Ok(()) => wait(shared, &rx),
                            Err(_) => Err(Failure::Stopped),
                        }
                    }
                };
                // The Raft loop answered after its `execute_mut` of every write up to the
                // read index returned, so NR's read sees them (nr-core: a read sees every
                // write completed before it).
                ready.and_then(|_| read_local(shared, replica, &q))
            }
        };
        write_frame(stream, &mut buf, &reply)?;
    }
}

/// Proposes `cmd` through the Raft loop and waits for its outcome.
fn propose<D: RaftDispatch>(
    shared: &Shared<D>,
    cmd: SessionCmd<D::WriteOperation>,
) -> Reply<Outcome<D::Response>> {
    let (tx, rx) = channel();
    match shared.events.send(Event::Propose { cmd, reply: tx }) {
        Ok(()) => wait(shared, &rx),
        Err(_) => Err(Failure::Stopped),
    }
}

fn wait<T>(shared: &Shared<impl RaftDispatch>, rx: &crate::sync::Receiver<Reply<T>>) -> Reply<T> {
    match rx.recv_timeout(shared.request_timeout) {
        Ok(r) => r,
        Err(crate::sync::RecvTimeoutError::Timeout) => Err(Failure::Timeout),
        Err(crate::sync::RecvTimeoutError::Disconnected) => Err(Failure::Stopped),
    }
}

fn read_local<D: RaftDispatch>(
    shared: &Shared<D>,
    replica: usize,
    q: &D::Query,
) -> Reply<D::Response> {
    let nr = shared.nr();
    let Ok(mut h) = nr.register(replica) else {
        return Err(Failure::Poisoned);
    };
    match h.execute(D::query(q)) {
        Ok(Outcome::Applied(r)) => Ok(r),
        _ => Err(Failure::Poisoned),
    }
}
