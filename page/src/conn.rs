//! Connections taken from the network, bounded, for every port memcity serves (the agent's gRPC
//! port and page, `memcity serve`): at most [`MAX_CONNECTIONS`] open at once, more closed as they
//! arrive (each holds a descriptor and buffers in the process that serves, a JVM's when the
//! agent does), and each closed if the server has nothing to answer within [`REPLY_WITHIN`]:
//! a silent client, or one that sends its request a byte at a time ("slowloris"), cannot hold
//! every slot. The server's first bytes after the client's end the limit: a TLS handshake's,
//! an HTTP/2 server's answer to the client's preface, an HTTP/1 response once the request is
//! whole ([`Patient`] applies the same rule to the requests inside TLS).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A connection the server has not answered this long after it opened is closed.
pub const REPLY_WITHIN: Duration = Duration::from_secs(10);

/// The accepted connections of a listener, within the limits. A `Stream` for tonic's
/// `serve_with_incoming`, an `axum::serve::Listener` for the page.
pub struct Incoming {
    accepted: tokio::sync::mpsc::Receiver<Guarded<TcpStream>>,
    local: SocketAddr,
}

/// Accepts on `listener` (within a runtime) until the returned [`Incoming`] is dropped;
/// `refused` hears of each connection closed for the limit, with the count so far, to log.
pub fn incoming(
    listener: TcpListener,
    refused: impl Fn(SocketAddr, u64) + Send + 'static,
) -> std::io::Result<Incoming> {
    let local = listener.local_addr()?;
    let live = Arc::new(AtomicUsize::new(0));
    let (tx, accepted) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        let mut refusals = 0u64;
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    if live.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                        refusals += 1;
                        refused(peer, refusals);
                        drop(stream);
                        continue;
                    }
                    if tx
                        .send(Guarded::new(stream, peer, live.clone()))
                        .await
                        .is_err()
                    {
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

/// A served connection: counted while open, closed if the server has nothing to answer at
/// first ([`Patient`]).
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
}

impl<I> Drop for Guarded<I> {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection closed if the server has not answered the client within [`REPLY_WITHIN`] of
/// its opening: until then every read checks the deadline, whether bytes came or not, so a
/// client that sends its request a byte at a time is closed as one that sends nothing. What
/// the server writes before the client said anything (an HTTP/2 server's settings) is no
/// answer.
pub struct Patient<I> {
    inner: I,
    /// Until the server's first bytes after the client's.
    reply_due: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The client has sent something.
    heard: bool,
}

impl<I> Patient<I> {
    pub fn new(inner: I) -> Self {
        Patient {
            inner,
            reply_due: Some(Box::pin(tokio::time::sleep(REPLY_WITHIN))),
            heard: false,
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
        if let Some(deadline) = this.reply_due.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the client's request did not arrive in time",
                )));
            }
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.heard = true;
        }
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
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if this.heard && matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.reply_due = None;
        }
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
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if this.heard && matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.reply_due = None;
        }
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
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.inner.connect_info()
    }
}
