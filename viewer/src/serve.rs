//! `memcity serve`: the viewer as a web page. The page (`viewer/web/`) runs the same viewer,
//! compiled to WebAssembly (`bin/memcity-web.rs`); this serves its files and the session:
//! a recording as it is on disk (`/session.mcrec`), a Memory Cities export folder (its JSON
//! files listed at `/folder` and each at `/folder/PATH`), or a live agent relayed over a WebSocket
//! (`/stream`), each socket message a recording's bytes: its preamble and header first, then one
//! frame per stream message, so what the page receives is a recording written down as it arrives.
//!
//! Each page gets its own subscription to the agent; when the agent goes, the socket closes with
//! the reason and the page reconnects (with backoff) until the agent is back.
//!
//! Everything served needs the token printed in the URL (`access.rs`); a bind other than
//! loopback needs TLS (`tls.rs`), as the agent's port does.

mod access;
mod tls;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use memcity_proto::recording::{RecordingReader, RecordingWriter};
use memcity_proto::v1::{stream_message::Kind, SubscribeRequest};
use memcity_proto::PROTOCOL_VERSION;

use crate::client;

/// What the page shows.
#[derive(Debug, Clone)]
pub enum Session {
    /// A recording file, read afresh for each page (one still being written grows).
    Recording(PathBuf),
    /// A Memory Cities export folder (an export root, a classifier folder or a folder of trees).
    Folder(PathBuf),
    /// A live agent at this address (`None`: the default).
    Live(Option<String>),
}

pub struct ServeOptions {
    pub session: Session,
    pub bind: IpAddr,
    pub port: u16,
    /// The certificate chain and key to serve TLS with (PEM).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Serve a bind other than loopback without TLS.
    pub insecure: bool,
    /// Where the page's files are; `None`: beside this executable ([`web_dir`]).
    pub web_dir: Option<PathBuf>,
}

/// The page's files, read once at the start.
struct Page {
    index: String,
    gl_js: Vec<u8>,
    memcity_js: Vec<u8>,
    wasm: Vec<u8>,
}

struct Served {
    page: Page,
    session: Session,
    /// A folder's JSON files, '/'-separated below it: all the page may ask for.
    folder_files: Vec<String>,
}

/// Files the page needs, as `scripts/build-web.sh` leaves them.
const PAGE_FILES: [&str; 4] = ["index.html", "gl.js", "memcity.js", "memcity-web.wasm"];

/// Where the page's files are: `MEMCITY_WEB`, else `web/` beside this executable or one level up
/// (`target/web` for `target/{debug,release}/memcity`).
pub fn web_dir(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = match given {
        Some(dir) => vec![dir.to_owned()],
        None => {
            let mut dirs = Vec::new();
            if let Some(dir) = std::env::var_os("MEMCITY_WEB") {
                dirs.push(PathBuf::from(dir));
            }
            if let Some(exe_dir) = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(Path::to_owned))
            {
                dirs.push(exe_dir.join("web"));
                if let Some(up) = exe_dir.parent() {
                    dirs.push(up.join("web"));
                }
            }
            dirs
        }
    };
    for dir in &candidates {
        if PAGE_FILES.iter().all(|f| dir.join(f).is_file()) {
            return Ok(dir.clone());
        }
    }
    let looked = candidates
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    anyhow::bail!(
        "the web page's files are not built (looked for {} in: {looked}). Build them with scripts/build-web.sh \
         (it needs the wasm32-unknown-unknown target: rustup target add wasm32-unknown-unknown), or point MEMCITY_WEB at them; \
         `memcity view` and `memcity replay` show the same city in a window",
        PAGE_FILES.join(", ")
    )
}

/// What the page calls a folder: its own name (`.` and `..` resolved first).
fn folder_name(path: &Path) -> String {
    std::fs::canonicalize(path)
        .ok()
        .as_deref()
        .unwrap_or(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into())
}

/// The JSON files below `dir`, as '/'-separated paths from it, sorted. Symbolic links to folders
/// are not followed, so a link cannot lead the listing out of the folder or round in a circle.
fn json_files(dir: &Path) -> std::io::Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
            {
                let rel = path.strip_prefix(root).expect("below the root");
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

fn read_page(dir: &Path, session: &Session) -> anyhow::Result<Page> {
    let read = |name: &str| {
        std::fs::read(dir.join(name))
            .with_context(|| format!("cannot read {}", dir.join(name).display()))
    };
    let index = String::from_utf8(read("index.html")?).context("index.html is not UTF-8")?;
    let config = match session {
        Session::Recording(path) => serde_json::json!({
            "kind": "recording",
            "url": "session.mcrec",
            "name": path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        }),
        Session::Folder(path) => serde_json::json!({
            "kind": "folder",
            "url": "folder",
            "name": folder_name(path),
        }),
        Session::Live(_) => serde_json::json!({ "kind": "live", "url": "stream" }),
    };
    // `</` cannot appear in JSON that serde writes for these values except inside a name; escape
    // it so a file name cannot end the script element.
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

/// Serves until the process is stopped. Prints the URL to open on stdout.
pub fn serve(options: ServeOptions) -> anyhow::Result<()> {
    if !options.bind.is_loopback() && options.tls.is_none() && !options.insecure {
        anyhow::bail!(
            "--bind {}: a page served beyond loopback would put the heap's structure on the network in clear. \
             Give --tls-cert and --tls-key, or reach it through an SSH tunnel: ssh -L {port}:127.0.0.1:{port} HOST \
             (then memcity serve there, on loopback), or pass --insecure to serve it anyway",
            options.bind,
            port = if options.port == 0 { 8080 } else { options.port }
        );
    }
    let acceptor = match &options.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    let what = match &options.session {
        Session::Recording(path) => {
            // A file that is no recording is refused now, not in the browser.
            RecordingReader::open(path)?;
            path.display().to_string()
        }
        Session::Folder(path) => {
            // Loaded once here so a folder the page cannot open is refused now, with the
            // loader's own words; the page loads it again from the files served.
            let model = memcity_city::load::memory_cities_json(path)?;
            if model.is_empty() {
                anyhow::bail!("{} holds no snapshot to show", path.display());
            }
            format!("the Memory Cities export {}", path.display())
        }
        Session::Live(addr) => {
            client::endpoint_uri(addr.as_deref()).map_err(anyhow::Error::msg)?;
            format!(
                "the agent at {}",
                addr.as_deref().unwrap_or(memcity_proto::DEFAULT_ADDR)
            )
        }
    };
    let dir = web_dir(options.web_dir.as_deref())?;
    let folder_files = match &options.session {
        Session::Folder(path) => json_files(path)
            .with_context(|| format!("cannot list the files of {}", path.display()))?,
        _ => Vec::new(),
    };
    let served = Arc::new(Served {
        page: read_page(&dir, &options.session)?,
        session: options.session,
        folder_files,
    });
    let token = memcity_proto::registry::new_token().context("cannot make an access token")?;
    let routes = Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/gl.js", get(gl_js))
        .route("/memcity.js", get(memcity_js))
        .route("/memcity-web.wasm", get(wasm))
        .route("/session.mcrec", get(recording))
        .route("/folder", get(folder))
        .route("/folder/{*path}", get(folder_file))
        .route("/stream", get(stream))
        .with_state(served);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    runtime.block_on(async move {
        let addr = SocketAddr::new(options.bind, options.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (--port 0 takes a free port)"))?;
        let addr = listener.local_addr()?;
        let access = Arc::new(access::Access::new(token, addr.port(), acceptor.is_some()));
        let app = routes.layer(axum::middleware::from_fn_with_state(
            access.clone(),
            access::guard,
        ));
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        if !addr.ip().is_loopback() && acceptor.is_none() {
            eprintln!(
                "memcity: SERVING WITHOUT TLS ON {addr} (--insecure): anyone on the way can read the page and its token"
            );
        }
        println!(
            "memcity: serving {what} at {scheme}://{addr}/{} (open it in a browser; Ctrl-C stops)",
            access.query()
        );
        match acceptor {
            Some(acceptor) => axum::serve(tls::TlsListener::new(listener, acceptor)?, app)
                .await
                .context("the server stopped"),
            None => axum::serve(listener, app)
                .await
                .context("the server stopped"),
        }
    })
}

fn file(content_type: &'static str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // The page and viewer change with memcity: never a stale cached copy.
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn index(State(s): State<Arc<Served>>) -> Response {
    file(
        "text/html; charset=utf-8",
        s.page.index.clone().into_bytes(),
    )
}

async fn gl_js(State(s): State<Arc<Served>>) -> Response {
    file("text/javascript", s.page.gl_js.clone())
}

async fn memcity_js(State(s): State<Arc<Served>>) -> Response {
    file("text/javascript", s.page.memcity_js.clone())
}

async fn wasm(State(s): State<Arc<Served>>) -> Response {
    // `application/wasm` lets the browser compile while it downloads.
    file("application/wasm", s.page.wasm.clone())
}

async fn recording(State(s): State<Arc<Served>>) -> Response {
    let Session::Recording(path) = &s.session else {
        return (StatusCode::NOT_FOUND, "this page follows a live agent").into_response();
    };
    // A recording is read whole (the page needs all of it); off the runtime's threads.
    let path = path.clone();
    let read = tokio::task::spawn_blocking({
        let path = path.clone();
        move || std::fs::read(path)
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    match read {
        Ok(bytes) => file("application/octet-stream", bytes),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read {}: {e}", path.display()),
        )
            .into_response(),
    }
}

async fn folder(State(s): State<Arc<Served>>) -> Response {
    if !matches!(s.session, Session::Folder(_)) {
        return (StatusCode::NOT_FOUND, "this page shows no folder").into_response();
    }
    file(
        "application/json",
        serde_json::to_vec(&s.folder_files).expect("a list of strings"),
    )
}

async fn folder_file(
    axum::extract::Path(path): axum::extract::Path<String>,
    State(s): State<Arc<Served>>,
) -> Response {
    let Session::Folder(dir) = &s.session else {
        return (StatusCode::NOT_FOUND, "this page shows no folder").into_response();
    };
    // Only what the listing named: no path the page makes up reaches the disk.
    if !s.folder_files.contains(&path) {
        return (
            StatusCode::NOT_FOUND,
            format!("{path} is not in the folder"),
        )
            .into_response();
    }
    let full = dir.join(&path);
    match tokio::task::spawn_blocking(move || std::fs::read(full)).await {
        Ok(Ok(bytes)) => file("application/json", bytes),
        Ok(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read {path}: {e}"),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn stream(ws: WebSocketUpgrade, State(s): State<Arc<Served>>) -> Response {
    let Session::Live(addr) = s.session.clone() else {
        return (StatusCode::NOT_FOUND, "this page shows a recording").into_response();
    };
    ws.on_upgrade(move |socket| relay(socket, addr))
}

/// Longest reason a WebSocket close frame carries (125 bytes of payload, 2 for the code).
const CLOSE_REASON_BYTES: usize = 123;

/// Relays one page's session, then closes its socket saying why.
async fn relay(mut socket: WebSocket, addr: Option<String>) {
    let why = match relay_session(&mut socket, addr).await {
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

/// Subscribes to the agent and sends the page what arrives, as recording bytes. Returns why it
/// stopped.
async fn relay_session(socket: &mut WebSocket, addr: Option<String>) -> Result<String, String> {
    let mut client = client::connect(addr.as_deref(), Duration::from_secs(2)).await?;
    let mut stream = client
        .subscribe(SubscribeRequest {
            protocol_version: PROTOCOL_VERSION,
            client: format!("memcity serve {}", env!("CARGO_PKG_VERSION")),
        })
        .await
        .map_err(|s| s.message().to_string())?
        .into_inner();
    let mut writer: Option<RecordingWriter<Vec<u8>>> = None;
    loop {
        tokio::select! {
            message = stream.message() => {
                let message = match message {
                    Ok(Some(m)) => m,
                    Ok(None) => return Err("the agent closed the stream".into()),
                    Err(s) => return Err(s.message().to_string()),
                };
                let written = match (&mut writer, &message.kind) {
                    (None, Some(Kind::Handshake(h))) => {
                        let header = client::recording_header(h, "serve");
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
