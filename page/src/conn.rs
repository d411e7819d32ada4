//! Connections taken from the network, bounded, for every port memcity serves (the agent's gRPC
//! port, page and metrics, `memcity serve`), so that no one without the token can hold them:
//!
//! - at most [`MAX_CONNECTIONS`] open at once (each holds a descriptor and buffers in the process
//!   that serves, a JVM's when the agent does);
//! - a connection is *trusted* once one of its requests showed the token ([`Trust::grant`],
//!   called by the port's token check); until then it is closed [`PROVE_WITHIN`] after it
//!   opened, whatever it sends: a silent client, one that sends its request a byte at a time
//!   ("slowloris"), an HTTP/2 client that answers pings, or an HTTP/1 client kept alive after
//!   a refusal all hold their slot that long and no longer;
//! - at most [`MAX_UNTRUSTED`] untrusted connections at once: a new connection past that, or
//!   past [`MAX_CONNECTIONS`], closes the oldest untrusted one, so strangers never take the
//!   slots of a client with the token (which shows it in its first request, within a round
//!   trip);
//! - a trusted connection is closed after [`IDLE_LIMIT`] without a byte either way (HTTP/1
//!   keep-alive and HTTP/2 alike; the gRPC port's keepalive pings count for these).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Connections that have not shown the token, at once.
pub const MAX_UNTRUSTED: usize = 16;
/// A connection that has not shown the token this long after it opened is closed.
pub const PROVE_WITHIN: Duration = Duration::from_secs(10);
/// A trusted connection with no bytes either way this long is closed.
pub const IDLE_LIMIT: Duration = Duration::from_secs(300);

/// What one connection's token check and its byte stream share.
#[derive(Default)]
struct ConnState {
    trusted: AtomicBool,
    /// Closed by the listener to make room: the next read or write fails.
    evicted: AtomicBool,
    /// The task serving the connection while it is untrusted, woken to see an eviction.
    reader: Mutex<Option<Waker>>,
}

/// A connection's standing, for the port's token check to raise.
#[derive(Clone)]
pub struct Trust(Arc<ConnState>);

impl Trust {
    /// This connection's request showed the token: it may stay (within [`IDLE_LIMIT`]) and is
    /// never closed to make room.
    pub fn grant(&self) {
        self.0.trusted.store(true, Ordering::Release);
    }
}

/// What a server learns of a connection: its peer, and its [`Trust`] to grant. Tonic puts it in
/// each request's extensions (as `TlsConnectInfo<ConnInfo>` over TLS); axum as
/// `ConnectInfo<ConnInfo>` ([`run`](crate::run) serves with it).
#[derive(Clone)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub trust: Trust,
}

/// The accepted connections of a listener, within the limits. A `Stream` for tonic's
/// `serve_with_incoming`, an `axum::serve::Listener` for the page.
pub struct Incoming {
    accepted: tokio::sync::mpsc::Receiver<Guarded<TcpStream>>,
    local: SocketAddr,
}

/// Accepts on `listener` (within a runtime) until the returned [`Incoming`] is dropped;
/// `refused` hears of each connection refused for the limit (every slot held by a trusted
/// connection), with the count so far, to log.
pub fn incoming(
    listener: TcpListener,
    refused: impl Fn(SocketAddr, u64) + Send + 'static,
) -> std::io::Result<Incoming> {
    let local = listener.local_addr()?;
    let live = Arc::new(AtomicUsize::new(0));
    let (tx, accepted) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        let mut refusals = 0u64;
        let mut untrusted = Untrusted::default();
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    if !untrusted.make_room(live.load(Ordering::Acquire)) {
                        refusals += 1;
                        refused(peer, refusals);
                        drop(stream);
                        continue;
                    }
                    let conn = Guarded::new(stream, peer, live.clone());
                    untrusted.add(&conn.inner.state);
                    if tx.send(conn).await.is_err() {
                        return; // the server stopped
                    }
                }
                // Out of descriptors, most likely: wait rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    Ok(Incoming { accepted, local })
}

/// The open connections that have not shown the token, oldest first.
#[derive(Default)]
struct Untrusted(std::collections::VecDeque<Weak<ConnState>>);

impl Untrusted {
    fn add(&mut self, state: &Arc<ConnState>) {
        self.0.push_back(Arc::downgrade(state));
    }

    /// Makes room for one more connection beside `live` open ones: closes the oldest untrusted
    /// one when they are [`MAX_UNTRUSTED`], or when all slots are taken; `false` when every
    /// slot is held by a trusted connection.
    fn make_room(&mut self, live: usize) -> bool {
        self.0.retain(|weak| {
            weak.upgrade().is_some_and(|s| {
                !s.trusted.load(Ordering::Acquire) && !s.evicted.load(Ordering::Acquire)
            })
        });
        if self.0.len() < MAX_UNTRUSTED && live < MAX_CONNECTIONS {
            return true;
        }
        match self.0.pop_front().and_then(|weak| weak.upgrade()) {
            Some(oldest) => {
                oldest.evicted.store(true, Ordering::Release);
                let reader = oldest
                    .reader
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                if let Some(reader) = reader {
                    reader.wake();
                }
                true
            }
            None => live < MAX_CONNECTIONS,
        }
    }
}

impl Incoming {
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The next connection; `None` once the accepting task has ended.
    pub async fn next(&mut self) -> Option<Guarded<TcpStream>> {
        self.accepted.recv().await
    }
}

impl tokio_stream::Stream for Incoming {
    type Item = std::io::Result<Guarded<TcpStream>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.accepted.poll_recv(cx).map(|next| next.map(Ok))
    }
}

impl axum::serve::Listener for Incoming {
    type Io = Guarded<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.next().await {
            Some(conn) => {
                let peer = conn.peer;
                (conn, peer)
            }
            // The accepting task ends only with the runtime, and this with it.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// A served connection: counted while open, closed when its time is up ([`Patient`]).
pub struct Guarded<I> {
    inner: Patient<I>,
    peer: SocketAddr,
    live: Arc<AtomicUsize>,
}

impl<I> Guarded<I> {
    fn new(inner: I, peer: SocketAddr, live: Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::AcqRel);
        Guarded {
            inner: Patient::new(inner),
            peer,
            live,
        }
    }

    pub fn get_ref(&self) -> &I {
        &self.inner.inner
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// What the server learns of this connection.
    pub fn info(&self) -> ConnInfo {
        ConnInfo {
            peer: self.peer,
            trust: Trust(self.inner.state.clone()),
        }
    }
}

impl<I> Drop for Guarded<I> {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection that ends when its time is up: [`PROVE_WITHIN`] after it opened until it is
/// trusted, then [`IDLE_LIMIT`] after its last byte either way; or at once when the listener
/// closes it to make room. Every read checks, whether bytes came or not, so a client that
/// dribbles is closed as one that is silent (the server always has a read pending: HTTP/2 and
/// idle HTTP/1 connections wait for the client's next bytes).
pub struct Patient<I> {
    inner: I,
    state: Arc<ConnState>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// When the connection last carried a byte (for a trusted connection's idle limit).
    last_active: Instant,
    /// The deadline is the idle limit's (the connection was found trusted).
    idle_rule: bool,
}

impl<I> Patient<I> {
    fn new(inner: I) -> Self {
        Patient {
            inner,
            state: Arc::default(),
            deadline: Box::pin(tokio::time::sleep(PROVE_WITHIN)),
            last_active: Instant::now(),
            idle_rule: false,
        }
    }

    /// `Err` when the connection's time is up.
    fn check(&mut self, cx: &mut Context<'_>) -> std::io::Result<()> {
        if self.state.evicted.load(Ordering::Acquire) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "closed for a newer connection: too many without the token",
            ));
        }
        if !self.idle_rule {
            if self.state.trusted.load(Ordering::Acquire) {
                // From now on only idleness closes it: timed from its last byte.
                self.idle_rule = true;
                self.last_active = Instant::now();
                self.deadline.as_mut().reset(self.last_active + IDLE_LIMIT);
            } else {
                // An untrusted connection can be evicted: the listener wakes this task to see
                // it. (A trusted one never is, so its reads and writes take no lock.)
                let mut waker = self.state.reader.lock().unwrap_or_else(|p| p.into_inner());
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
            }
        }
        // Activity pushes the idle deadline lazily, when it fires, rather than at every byte.
        while self.deadline.as_mut().poll(cx).is_ready() {
            let idle_until = self.last_active + IDLE_LIMIT;
            if !self.idle_rule || idle_until <= Instant::now() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    if self.idle_rule {
                        "idle too long"
                    } else {
                        "the client did not show the token in time"
                    },
                ));
            }
            self.deadline.as_mut().reset(idle_until);
        }
        Ok(())
    }

    /// Bytes moved: the idle limit counts from now (only trusted connections have one).
    fn note(&mut self, moved: bool) {
        if moved && self.idle_rule {
            self.last_active = Instant::now();
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Patient<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Err(e) = this.check(cx) {
            return Poll::Ready(Err(e));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        this.note(buf.filled().len() > before);
        read
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Patient<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Err(e) = this.check(cx) {
            return Poll::Ready(Err(e));
        }
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.note(matches!(written, Poll::Ready(Ok(n)) if n > 0));
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Err(e) = this.check(cx) {
            return Poll::Ready(Err(e));
        }
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.note(matches!(written, Poll::Ready(Ok(n)) if n > 0));
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Guarded<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Guarded<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(feature = "grpc")]
impl tonic::transport::server::Connected for Guarded<TcpStream> {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.info()
    }
}

/// The [`ConnInfo`] of a gRPC request, over TLS or not.
#[cfg(feature = "grpc")]
pub fn of_request<T>(request: &tonic::Request<T>) -> Option<&ConnInfo> {
    let extensions = request.extensions();
    extensions.get::<ConnInfo>().or_else(|| {
        extensions
            .get::<tonic::transport::server::TlsConnectInfo<ConnInfo>>()
            .map(|tls| tls.get_ref())
    })
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Incoming>>
    for ConnInfo
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, Incoming>) -> Self {
        stream.io().info()
    }
}

/// The [`ConnInfo`] among a page request's extensions (`run` serves with it).
pub fn of_extensions(extensions: &axum::http::Extensions) -> Option<&ConnInfo> {
    extensions
        .get::<axum::extract::ConnectInfo<ConnInfo>>()
        .map(|info| &info.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(n: usize) -> Vec<Arc<ConnState>> {
        (0..n).map(|_| Arc::new(ConnState::default())).collect()
    }

    fn evicted(states: &[Arc<ConnState>]) -> Vec<bool> {
        states
            .iter()
            .map(|s| s.evicted.load(Ordering::Acquire))
            .collect()
    }

    #[test]
    fn strangers_make_room_for_newcomers_and_never_take_a_trusted_slot() {
        let mut untrusted = Untrusted::default();
        let open = states(MAX_UNTRUSTED);
        for state in &open {
            assert!(untrusted.make_room(0));
            untrusted.add(state);
        }
        // One more: the oldest stranger goes.
        assert!(untrusted.make_room(MAX_UNTRUSTED));
        assert_eq!(evicted(&open)[..2], [true, false]);
        let newcomer = states(1);
        untrusted.add(&newcomer[0]);
        // A stranger that showed the token is one no longer: its place counts as free.
        Trust(open[1].clone()).grant();
        assert!(untrusted.make_room(MAX_UNTRUSTED));
        assert_eq!(evicted(&open)[..3], [true, false, false]);
        assert_eq!(untrusted.0.len(), MAX_UNTRUSTED - 1);
        // Full again: the oldest stranger goes, the trusted one stays.
        let another = states(1);
        untrusted.add(&another[0]);
        assert!(untrusted.make_room(MAX_UNTRUSTED));
        assert_eq!(evicted(&open)[..3], [true, false, true]);
        // A stranger that closed leaves no trace to evict.
        let gone = states(1);
        untrusted.add(&gone[0]);
        drop(gone);
        assert!(untrusted.make_room(MAX_UNTRUSTED));
        assert_eq!(untrusted.0.len(), MAX_UNTRUSTED - 1);
    }

    #[test]
    fn all_slots_taken_by_trusted_connections_refuse_the_next() {
        let mut untrusted = Untrusted::default();
        assert!(!untrusted.make_room(MAX_CONNECTIONS));
        // With one stranger among them, the stranger gives way.
        let stranger = states(1);
        untrusted.add(&stranger[0]);
        assert!(untrusted.make_room(MAX_CONNECTIONS));
        assert_eq!(evicted(&stranger), [true]);
        assert!(!untrusted.make_room(MAX_CONNECTIONS));
    }
}
