//! A client of a host over TCP.

use std::marker::PhantomData;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::wire::{Consistency, Failure, Hello, Reply, Request};
use crate::{read_frame, write_frame, RaftDispatch, RaftError};

/// A client of a group: writes go through Raft, exactly once; reads are served by the host's
/// local replica ([`Consistency`]). One request at a time; open one client per thread.
///
/// **Sessions.** The first write opens a session (registered through the log); the client
/// numbers its writes, and the group keeps each session's last write number and response, so
/// a write sent again with the same number is answered with the saved response and never
/// applied twice (Raft thesis, Ongaro 2014, §6.3). [`Client::write_retrying`] re-sends the
/// same write after a timeout or a broken connection, to the next host if the connection
/// broke, and applies it once.
///
/// # Examples
///
/// See [`Host`](crate::Host).
pub struct Client<D: RaftDispatch> {
    /// The hosts this client may use; `at` is the current one.
    addrs: Vec<SocketAddr>,
    at: usize,
    /// The connection to `addrs[at]`; `None` after it broke (reopened by the next request).
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// The session, once registered.
    session: Option<u64>,
    /// The number of the session's last write sent.
    seq: u64,
    _d: PhantomData<fn() -> D>,
}

impl<D: RaftDispatch> std::fmt::Debug for Client<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("host", &self.addrs.get(self.at))
            .field("session", &self.session)
            .field("seq", &self.seq)
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
        Self::connect_any(&[addr])
    }

    /// Connects to the first host of `addrs` that answers; when a connection breaks, the
    /// next request goes to the next host (in order, wrapping around).
    ///
    /// # Errors
    ///
    /// As [`Client::connect`], for the last host tried (an empty `addrs` is an
    /// [`RaftError::Io`] of kind `InvalidInput`).
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn connect_any(addrs: &[SocketAddr]) -> Result<Self, RaftError> {
        let mut c = Self {
            addrs: addrs.to_vec(),
            at: 0,
            stream: None,
            buf: Vec::new(),
            session: None,
            seq: 0,
            _d: PhantomData,
        };
        let mut last = RaftError::Io {
            op: "connect",
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address"),
        };
        for _ in 0..addrs.len() {
            match c.open() {
                Ok(()) => return Ok(c),
                Err(e) => last = e,
            }
            c.at = (c.at + 1) % addrs.len();
        }
        Err(last)
    }

    /// The id of this client's session (`None` until its first write opens one).
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn session(&self) -> Option<u64> {
        self.session
    }

    /// Proposes a write; returns its response once it is committed and applied on the host.
    /// The first write of a client (or the first after [`RaftError::SessionExpired`]) first
    /// opens a session.
    ///
    /// A write that fails is abandoned: the next `write` has the next number, and the
    /// abandoned one, if it is still in flight, may apply (once) or be refused as
    /// superseded. To be sure a write applies once, use [`Client::write_retrying`].
    ///
    /// # Errors
    ///
    /// [`RaftError::Timeout`] (outcome unknown), [`RaftError::NoLeader`] (it did not happen),
    /// [`RaftError::SessionExpired`] (it did not happen), [`RaftError::Stopped`],
    /// [`RaftError::Poisoned`], and connection errors (outcome unknown).
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, RaftError> {
        let session = self.session_id()?;
        self.seq += 1;
        self.send_latest(session, &op)
    }

    /// [`Client::write`], sent again with the same write number up to `tries` times in all
    /// (50 ms apart) while it fails with [`RaftError::NoLeader`], [`RaftError::Timeout`],
    /// [`RaftError::Stopped`] or a broken connection (the retry then goes to the next host):
    /// the group applies it once, and a retry of an applied write is answered with the
    /// response saved when it was applied.
    ///
    /// # Errors
    ///
    /// As [`Client::write`], once the tries are spent or on an error that retrying cannot
    /// cure.
    ///
    /// # Examples
    ///
    /// See [`Host`](crate::Host).
    pub fn write_retrying(
        &mut self,
        op: D::WriteOperation,
        tries: usize,
    ) -> Result<D::Response, RaftError> {
        let mut left = tries.max(1);
        let session = loop {
            match self.session_id() {
                Err(e) if retryable(&e) && left > 1 => left -= 1,
                r => break r?,
            }
            crate::sync::sleep(RETRY_PAUSE);
        };
        self.seq += 1;
        retry(left, |c| c.send_latest(session, &op), self)
    }

    /// [`Client::read`], retried up to `tries` times (50 ms apart) while it fails with
    /// [`RaftError::NoLeader`], [`RaftError::Timeout`], [`RaftError::Stopped`] or a broken
    /// connection: a failed read had no effect.
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
        retry(tries, |cl| cl.read(q.clone(), c), self)
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

    /// This client's session, registered through the log if it has none.
    fn session_id(&mut self) -> Result<u64, RaftError> {
        if let Some(s) = self.session {
            return Ok(s);
        }
        let id: u64 = self.call(
            &Request::<&D::WriteOperation, &D::Query>::Register,
            "register",
        )?;
        self.session = Some(id);
        self.seq = 0;
        Ok(id)
    }

    /// Sends `op` as the session's latest write number (the same number on every try).
    fn send_latest(
        &mut self,
        session: u64,
        op: &D::WriteOperation,
    ) -> Result<D::Response, RaftError> {
        let seq = self.seq;
        let req = Request::<_, &D::Query>::Write { session, seq, op };
        let r = self.call(&req, "write");
        if let Err(RaftError::SessionExpired { .. }) = r {
            self.session = None; // the next write opens a new one
        }
        r
    }

    /// Opens the connection to `addrs[at]`.
    fn open(&mut self) -> Result<(), RaftError> {
        let io = |source| RaftError::Io {
            op: "connect",
            source,
        };
        let addr = self.addrs[self.at];
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(io)?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(io)?;
        write_frame(&mut stream, &mut self.buf, &Hello::Client)?;
        self.stream = Some(stream);
        Ok(())
    }

    /// Sends `req` and reads its reply; a broken connection moves the client to the next host.
    fn call<T: serde::de::DeserializeOwned, W: serde::Serialize, Q: serde::Serialize>(
        &mut self,
        req: &Request<W, Q>,
        what: &'static str,
    ) -> Result<T, RaftError> {
        let r = self.exchange(req);
        if matches!(r, Err(RaftError::Io { .. } | RaftError::Frame { .. })) {
            self.stream = None;
            self.at = (self.at + 1) % self.addrs.len().max(1);
        }
        let session = self.session.unwrap_or(0);
        r?.map_err(|f| match f {
            Failure::Timeout => RaftError::Timeout { what },
            Failure::NoLeader => RaftError::NoLeader,
            Failure::Stopped => RaftError::Stopped,
            Failure::Poisoned => RaftError::Poisoned,
            Failure::SessionExpired => RaftError::SessionExpired { session },
            Failure::Superseded => RaftError::Superseded,
        })
    }

    fn exchange<T: serde::de::DeserializeOwned, W: serde::Serialize, Q: serde::Serialize>(
        &mut self,
        req: &Request<W, Q>,
    ) -> Result<Reply<T>, RaftError> {
        if self.stream.is_none() {
            self.open()?;
        }
        let stream = self
            .stream
            .as_mut()
            .expect("invariant: opened above or kept from the last request");
        write_frame(stream, &mut self.buf, req)?;
        Ok(read_frame(stream)?)
    }
}

/// The pause between two tries.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Whether a request that failed with `e` may be sent again: it did not happen
/// (`NoLeader`), or its outcome is unknown and the session makes a resent write apply once
/// (a timeout, a stopping host, a broken connection).
fn retryable(e: &RaftError) -> bool {
    matches!(
        e,
        RaftError::NoLeader
            | RaftError::Timeout { .. }
            | RaftError::Stopped
            | RaftError::Io { .. }
            | RaftError::Frame { .. }
    )
}

/// Runs `f` up to `tries` times while it fails with a [`retryable`] error, 50 ms apart.
fn retry<D: RaftDispatch>(
    tries: usize,
    mut f: impl FnMut(&mut Client<D>) -> Result<D::Response, RaftError>,
    c: &mut Client<D>,
) -> Result<D::Response, RaftError> {
    let mut left = tries.max(1);
    loop {
        match f(c) {
            Err(e) if retryable(&e) && left > 1 => {}
            r => return r,
        }
        left -= 1;
        crate::sync::sleep(RETRY_PAUSE);
    }
}
