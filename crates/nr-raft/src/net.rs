//! Links to peers, and the fault switches of a host's network layer.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use raft::eraftpb::Message;

use crate::driver::encode_message;
use crate::sync::{sleep, AtomicBool, AtomicU64, Ordering, Receiver, RecvTimeoutError};
use crate::wire::{Hello, PeerFrame};
use crate::write_frame;

/// Fault switches of one host's network layer: what a partition or a slow link does to its
/// Raft traffic, and lost replies to its clients' writes.
///
/// # Examples
///
/// ```
/// let f = nr_raft::NetFaults::default();
/// f.set_isolated(true); // a partition: every Raft message to or from the host is dropped
/// assert!(f.is_isolated());
/// f.set_delay(std::time::Duration::from_millis(5)); // each outgoing message waits 5 ms
/// f.set_isolated(false); // healed
/// f.set_lost_replies(1); // the next write is applied, but its reply is not sent
/// ```
#[derive(Debug, Default)]
pub struct NetFaults {
    isolated: AtomicBool,
    delay_us: AtomicU64,
    lost_replies: AtomicU64,
}

impl NetFaults {
    /// Cuts (`true`) or heals (`false`) the host from its peers: while cut, every Raft message
    /// it sends or receives is dropped.
    ///
    /// # Examples
    ///
    /// See [`NetFaults`].
    pub fn set_isolated(&self, on: bool) {
        // Relaxed: a switch polled per message; no data is published through it.
        self.isolated.store(on, Ordering::Relaxed);
    }

    /// Whether the host is cut from its peers.
    ///
    /// # Examples
    ///
    /// See [`NetFaults`].
    pub fn is_isolated(&self) -> bool {
        // Relaxed: see `set_isolated`.
        self.isolated.load(Ordering::Relaxed)
    }

    /// Delays each outgoing Raft message by `d` (in order: the link is slow, not reordered).
    ///
    /// # Examples
    ///
    /// See [`NetFaults`].
    pub fn set_delay(&self, d: Duration) {
        // Relaxed: see `set_isolated`.
        self.delay_us.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Loses the replies of the next `n` writes that clients send to this host: each write
    /// is proposed and waited for as usual, then its connection is closed instead of
    /// answered (the client sees a broken connection; the write's outcome is unknown to it).
    ///
    /// # Examples
    ///
    /// See [`NetFaults`].
    pub fn set_lost_replies(&self, n: u64) {
        // Relaxed: a counter polled per reply; no data is published through it.
        self.lost_replies.store(n, Ordering::Relaxed);
    }

    /// Whether this reply is to be lost (counting it down).
    pub(crate) fn take_lost_reply(&self) -> bool {
        // Relaxed: see `set_lost_replies`.
        self.lost_replies
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    pub(crate) fn drops(&self) -> bool {
        self.is_isolated()
    }

    fn delay(&self) -> Duration {
        // Relaxed: see `set_isolated`.
        Duration::from_micros(self.delay_us.load(Ordering::Relaxed))
    }
}

/// Sends the messages of `rx` to the peer at `addr`, reconnecting as needed. A message that
/// cannot be sent is dropped: Raft retransmits what it still needs.
pub(crate) fn run_outbound(
    stop: &AtomicBool,
    faults: &NetFaults,
    from: u64,
    addr: SocketAddr,
    rx: Receiver<Message>,
) {
    let mut conn: Option<TcpStream> = None;
    let mut buf = Vec::new();
    loop {
        let m = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                // Relaxed: see `Host::shutdown`.
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if faults.drops() {
            continue;
        }
        let delay = faults.delay();
        if !delay.is_zero() {
            sleep(delay);
        }
        let Some(bytes) = encode_message(&m) else {
            continue;
        };
        if conn.is_none() {
            conn = connect(addr, from, &mut buf);
        }
        if let Some(c) = conn.as_mut() {
            if write_frame(c, &mut buf, &PeerFrame(bytes)).is_err() {
                conn = None;
            }
        }
    }
}

fn connect(addr: SocketAddr, from: u64, buf: &mut Vec<u8>) -> Option<TcpStream> {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    let _ = c.set_nodelay(true);
    let _ = c.set_write_timeout(Some(Duration::from_secs(1)));
    write_frame(&mut c, buf, &Hello::Peer { from }).ok()?;
    Some(c)
}
