//! The server side of memcity's web page, shared by `memcity serve` and the agent's own page
//! (`http=PORT`): the page's files (`viewer/web/` and the viewer compiled to WebAssembly, as
//! `scripts/build-web.sh` leaves them), who may open it (`access.rs`), TLS (`tls.rs`), and a
//! live session sent to the page as a recording written down as it arrives ([`send_stream`]).

pub mod access;
pub mod conn;
pub mod tls;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use memcity_proto::recording::{self, RecordingWriter};
use memcity_proto::v1::{stream_message::Kind, StreamMessage};
use tokio_stream::{Stream, StreamExt};

/// Files the page needs, as `scripts/build-web.sh` leaves them.
pub const PAGE_FILES: [&str; 4] = ["index.html", "gl.js", "memcity.js", "memcity-web.wasm"];

/// The first of `candidates` that holds the page's files, or what to do.
pub fn find_web_dir(candidates: &[PathBuf]) -> Result<PathBuf, String> {
    for dir in candidates {
        if PAGE_FILES.iter().all(|f| dir.join(f).is_file()) {
            return Ok(dir.clone());
        }
    }
    let looked = candidates
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "the web page's files are not built (looked for {} in: {looked}). Build them with scripts/build-web.sh \
         (it needs the wasm32-unknown-unknown target: rustup target add wasm32-unknown-unknown)",
        PAGE_FILES.join(", ")
    ))
}

/// The page's files, read once, with the session's configuration in the index.
pub struct Page {
    index: String,
    gl_js: Vec<u8>,
    memcity_js: Vec<u8>,
    wasm: Vec<u8>,
}

impl Page {
    /// Reads the page from `dir`; `config` becomes the page's `memcity_config` (what it shows:
    /// viewer/web/memcity.js).
    pub fn read(dir: &Path, config: &serde_json::Value) -> Result<Page, String> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| format!("cannot read {}: {e}", dir.join(name).display()))
        };
        let index = String::from_utf8(read("index.html")?)
            .map_err(|_| format!("{}: not UTF-8", dir.join("index.html").display()))?;
        // `</` cannot appear in JSON serde writes except inside a string (a file name); escaped,
        // no name can end the script element.
        let config = config.to_string().replace("</", "<\\/");
        let index = index.replace(
            "<!--memcity-config-->",
            &format!("<script>var memcity_config = {config};</script>"),
        );
        Ok(Page {
            index,
            gl_js: read("gl.js")?,
            memcity_js: read("memcity.js")?,
            wasm: read("memcity-web.wasm")?,
        })
    }

    /// The routes of the page's own files; the session's routes are the caller's.
    pub fn routes(self) -> Router {
        Router::new()
            .route("/", get(index))
            .route("/index.html", get(index))
            .route("/gl.js", get(gl_js))
            .route("/memcity.js", get(memcity_js))
            .route("/memcity-web.wasm", get(wasm))
            .with_state(Arc::new(self))
    }
}

/// A file of the page, never cached: the page and viewer change with memcity.
pub fn file(content_type: &'static str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn index(State(p): State<Arc<Page>>) -> Response {
    file("text/html; charset=utf-8", p.index.clone().into_bytes())
}

async fn gl_js(State(p): State<Arc<Page>>) -> Response {
    file("text/javascript", p.gl_js.clone())
}

async fn memcity_js(State(p): State<Arc<Page>>) -> Response {
    file("text/javascript", p.memcity_js.clone())
}

async fn wasm(State(p): State<Arc<Page>>) -> Response {
    // `application/wasm` lets the browser compile while it downloads.
    file("application/wasm", p.wasm.clone())
}

/// `app` behind the token check of `access`.
pub fn guarded(app: Router, access: Arc<access::Access>) -> Router {
    app.layer(axum::middleware::from_fn_with_state(access, access::guard))
}

/// A port the agent serves HTTP on beside its gRPC port (its page, its metrics): bound, its
/// connections bounded ([`conn`]), over TLS when the agent's certificate is given.
pub struct Listening {
    incoming: conn::Incoming,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
}

impl Listening {
    /// Binds `addr` (within a runtime); `what` names the server in errors ("the page") and
    /// `option` the agent option that picks its port. `refused` hears of connections closed
    /// for the limit.
    pub async fn bind(
        addr: std::net::SocketAddr,
        tls: Option<&(PathBuf, PathBuf)>,
        what: &str,
        option: &str,
        refused: impl Fn(std::net::SocketAddr, u64) + Send + 'static,
    ) -> Result<Listening, String> {
        let acceptor = match tls {
            Some((cert, key)) => Some(tls::acceptor(cert, key, "tls_cert", "tls_key")?),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            format!("cannot listen on {addr} for {what}: {e} ({option}=0 takes a free port)")
        })?;
        let incoming = conn::incoming(listener, refused)
            .map_err(|e| format!("cannot read the bound address of {what}: {e}"))?;
        Ok(Listening { incoming, acceptor })
    }

    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.incoming.local_addr()
    }

    /// `http(s)://ADDR/path` of this port.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.acceptor.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}/{path}", self.local_addr())
    }

    /// `app` on this port, its address `url(path)`.
    pub fn with(self, app: Router, path: &str) -> Ready {
        Ready {
            url: self.url(path),
            listening: self,
            app,
        }
    }
}

/// A server bound and ready, to start once the agent has registered its address.
pub struct Ready {
    listening: Listening,
    app: Router,
    /// What a client opens (the registry's `page=` or `metrics=`), without any token.
    pub url: String,
}

impl Ready {
    /// Serves until the runtime stops.
    pub async fn serve(self) -> std::io::Result<()> {
        run(self.listening.incoming, self.listening.acceptor, self.app).await
    }
}

/// Serves `app` on the connections of `incoming` ([`conn::incoming`]), over TLS when `acceptor`
/// is given, until the runtime stops.
pub async fn run(
    incoming: conn::Incoming,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
) -> std::io::Result<()> {
    // With each connection's `conn::ConnInfo`, for the token check to trust it.
    let app = app.into_make_service_with_connect_info::<conn::ConnInfo>();
    match acceptor {
        Some(acceptor) => axum::serve(tls::TlsListener::new(incoming, acceptor), app).await,
        None => axum::serve(incoming, app).await,
    }
}

/// How often a live page's WebSocket is pinged.
const PING_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Longest reason a WebSocket close frame carries (125 bytes of payload, 2 for the code).
const CLOSE_REASON_BYTES: usize = 123;

/// Sends a live session to a page over its WebSocket as recording bytes (what the page decodes
/// with `recording::FrameDecoder`): the preamble and a header made from the handshake (by
/// `memcity <command>`) first, then one frame per message; then closes the socket saying why
/// it stopped. `messages` ends with the session's end, or an error that says why not.
pub async fn send_stream<S>(mut socket: WebSocket, messages: S, command: &str)
where
    S: Stream<Item = Result<StreamMessage, String>> + Unpin,
{
    let why = match send_messages(&mut socket, messages, command).await {
        Ok(why) | Err(why) => why,
    };
    let mut end = CLOSE_REASON_BYTES.min(why.len());
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            // 1011: the server met a condition that ends the connection (the agent went).
            code: 1011,
            reason: why[..end].into(),
        })))
        .await;
}

async fn send_messages<S>(
    socket: &mut WebSocket,
    mut messages: S,
    command: &str,
) -> Result<String, String>
where
    S: Stream<Item = Result<StreamMessage, String>> + Unpin,
{
    let mut writer: Option<RecordingWriter<Vec<u8>>> = None;
    // A JVM that does not collect sends nothing for a while: pings (which browsers answer by
    // themselves) keep the connection within the port's idle limit (`conn::IDLE_LIMIT`).
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return Ok("the page left".into());
                }
            }
            message = messages.next() => {
                let message = match message {
                    Some(Ok(m)) => m,
                    Some(Err(why)) => return Err(why),
                    None => return Err("the agent closed the stream".into()),
                };
                let written = match (&mut writer, &message.kind) {
                    (None, Some(Kind::Handshake(h))) => {
                        let header = recording::header(h, command);
                        RecordingWriter::new(Vec::new(), &header).map(|w| writer.insert(w))
                    }
                    // Nothing to hang a message on before the handshake.
                    (None, _) => continue,
                    (Some(w), _) => w.write(&message).map(|()| w),
                };
                let w = written.map_err(|e| format!("cannot encode the stream: {e}"))?;
                let bytes = std::mem::take(w.get_mut());
                if socket.send(Message::Binary(bytes.into())).await.is_err() {
                    return Ok("the page left".into());
                }
                if let Some(Kind::End(end)) = &message.kind {
                    return Ok(format!("the session ended ({})", end.reason));
                }
            }
            incoming = socket.recv() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Ok("the page left".into()),
                Some(Ok(_)) => {} // the page sends nothing else
            },
        }
    }
}
