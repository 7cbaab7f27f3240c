//! A client of a host over TCP.

use std::marker::PhantomData;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::wire::{Consistency, Failure, Hello, Reply, Request};
use crate::{read_frame, write_frame, RaftDispatch, RaftError};

/// A connection to one host: writes go through Raft, reads are served by the host's local
/// replica ([`Consistency`]). One request at a time; open one client per thread.
///
/// # Examples
///
/// See [`Host`](crate::Host).
pub struct Client<D: RaftDispatch> {
    stream: TcpStream,
    buf: Vec<u8>,
    _d: PhantomData<fn() -> D>,
}

impl<D: RaftDispatch> std::fmt::Debug for Client<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("peer", &self.stream.peer_addr().ok())
            .finish_non_exhaustive()
    }
}

impl<D: RaftDispatch> Client<D> {
    /// Connects to the host at `addr` (a reply that takes over 10 s is an I/O error).
    ///
    /// # Errors
    ///
    /// [`RaftError::Io`] when the host cannot be reached, [`RaftError::Frame`] when the
    /// greeting cannot be sent.
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn connect(addr: SocketAddr) -> Result<Self, RaftError> {
        let stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|source| {
                RaftError::Io {
                    op: "connect",
                    source,
                }
            })?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|source| RaftError::Io {
                op: "connect",
                source,
            })?;
        let mut c = Self {
            stream,
            buf: Vec::new(),
            _d: PhantomData,
        };
        write_frame(&mut c.stream, &mut c.buf, &Hello::Client)?;
        Ok(c)
    }

    /// Proposes a write; returns its response once it is committed and applied on this host.
    ///
    /// # Errors
    ///
    /// [`RaftError::Timeout`] (outcome unknown), [`RaftError::NoLeader`] (it did not happen),
    /// [`RaftError::Stopped`], [`RaftError::Poisoned`], and connection errors (outcome
    /// unknown).
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, RaftError> {
        self.call(&Request::<_, &D::Query>::Write(&op), "write")
    }

    /// [`Client::write`], retried up to `tries` times while there is no leader (a write that
    /// failed with [`RaftError::NoLeader`] did not happen, so retrying it is safe), 50 ms apart.
    ///
    /// # Errors
    ///
    /// As [`Client::write`].
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn write_retrying(
        &mut self,
        op: D::WriteOperation,
        tries: usize,
    ) -> Result<D::Response, RaftError> {
        retry(tries, |c| c.write(op.clone()), self, false)
    }

    /// [`Client::read`], retried up to `tries` times (50 ms apart) while it fails with
    /// [`RaftError::NoLeader`] or [`RaftError::Timeout`]: a failed read had no effect.
    ///
    /// # Errors
    ///
    /// As [`Client::read`].
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn read_retrying(
        &mut self,
        q: D::Query,
        c: Consistency,
        tries: usize,
    ) -> Result<D::Response, RaftError>
    where
        D::Query: Clone,
    {
        retry(tries, |cl| cl.read(q.clone(), c), self, true)
    }

    /// Reads with the given consistency.
    ///
    /// # Errors
    ///
    /// As [`Client::write`]; a read that fails had no effect and may be retried.
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn read(&mut self, q: D::Query, c: Consistency) -> Result<D::Response, RaftError> {
        self.call(&Request::<&D::WriteOperation, _>::Read(&q, c), "read")
    }

    fn call<W: serde::Serialize, Q: serde::Serialize>(
        &mut self,
        req: &Request<W, Q>,
        what: &'static str,
    ) -> Result<D::Response, RaftError> {
        write_frame(&mut self.stream, &mut self.buf, req)?;
        let reply: Reply<D::Response> = read_frame(&mut self.stream)?;
        reply.map_err(|f| match f {
            Failure::Timeout => RaftError::Timeout { what },
            Failure::NoLeader => RaftError::NoLeader,
            Failure::Stopped => RaftError::Stopped,
            Failure::Poisoned => RaftError::Poisoned,
        })
    }
}

/// Runs `f` up to `tries` times while it fails with `NoLeader` (or `Timeout`, if
/// `timeouts`), 50 ms apart.
fn retry<D: RaftDispatch>(
    tries: usize,
    mut f: impl FnMut(&mut Client<D>) -> Result<D::Response, RaftError>,
    c: &mut Client<D>,
    timeouts: bool,
) -> Result<D::Response, RaftError> {
    let mut left = tries.max(1);
    loop {
        match f(c) {
            Err(RaftError::NoLeader) if left > 1 => {}
            Err(RaftError::Timeout { .. }) if timeouts && left > 1 => {}
            r => return r,
        }
        left -= 1;
        crate::sync::sleep(Duration::from_millis(50));
    }
}
