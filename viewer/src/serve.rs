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
//! Everything served needs the token printed in the URL; a bind other than loopback needs TLS,
//! as the agent's port does (both in `memcity-page`, which the agent's own page shares).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use memcity_page::{access::Access, file, Page};
use memcity_proto::recording::RecordingReader;
use memcity_proto::v1::SubscribeRequest;
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
    /// Heap dumps (one, or a folder's series), read once into a recording's bytes: what the
    /// page reads.
    Dumps {
        name: String,
        recording: Arc<Vec<u8>>,
    },
}

impl Session {
    /// The heap dumps at `path` (a dump, or a folder of them), read and grouped by `levels`
    /// (default package and type); `None` when it is neither.
    pub fn dumps(
        path: &Path,
        levels: Option<&[memcity_dump::Level]>,
    ) -> anyhow::Result<Option<Session>> {
        let files = memcity_city::load::dumps_at(path);
        if files.is_empty() {
            if levels.is_some() {
                anyhow::bail!("--group-by: {} is no heap dump; a recording keeps the groups of the agent's classifiers= option", path.display());
            }
            return Ok(None);
        }
        let levels = levels.unwrap_or(&memcity_dump::DEFAULT_LEVELS);
        let recording = memcity_dump::recording(&files, levels)?;
        Ok(Some(Session::Dumps {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            recording: Arc::new(recording),
        }))
    }
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

struct Served {
    session: Session,
    /// A folder's JSON files, '/'-separated below it: all the page may ask for.
    folder_files: Vec<String>,
}

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
    memcity_page::find_web_dir(&candidates).map_err(|e| {
        anyhow::anyhow!(
            "{e}, or point MEMCITY_WEB at them; `memcity view` and `memcity replay` show the same city in a window"
        )
    })
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

/// What the page is told to show (`memcity_config`, viewer/web/memcity.js).
fn page_config(session: &Session) -> serde_json::Value {
    match session {
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
        Session::Dumps { name, .. } => serde_json::json!({
            "kind": "recording",
            "url": "session.mcrec",
            "name": name,
        }),
    }
}

/// Serves until the process is stopped. Prints the URL to open on stdout.
pub fn serve(options: ServeOptions) -> anyhow::Result<()> {
    refuse_clear_text_beyond_loopback(&options)?;
    let acceptor = match &options.tls {
        Some((cert, key)) => Some(
            memcity_page::tls::acceptor(cert, key, "--tls-cert", "--tls-key")
                .map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    let what = checked(&options.session)?;
    let dir = web_dir(options.web_dir.as_deref())?;
    let folder_files = match &options.session {
        Session::Folder(path) => json_files(path)
            .with_context(|| format!("cannot list the files of {}", path.display()))?,
        _ => Vec::new(),
    };
    let page = Page::read(&dir, &page_config(&options.session)).map_err(anyhow::Error::msg)?;
    let live = match &options.session {
        Session::Live(addr) => Some(addr.clone()),
        _ => None,
    };
    let served = Arc::new(Served {
        session: options.session,
        folder_files,
    });
    let token = memcity_proto::registry::new_token().context("cannot make an access token")?;
    let routes = Router::new()
        .route("/session.mcrec", get(recording))
        .route("/folder", get(folder))
        .route("/folder/{*path}", get(folder_file))
        .route("/stream", get(stream))
        .with_state(served)
        .merge(page.routes());
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
        let access = Arc::new(Access::new(
            token,
            addr.port(),
            acceptor.is_some(),
            "open the whole URL memcity serve printed (it ends in ?token=...)".into(),
        ));
        let app = memcity_page::guarded(routes, access.clone());
        announce(addr, &access, acceptor.is_some(), &what);
        if let Some(addr) = live {
            say_if_no_agent_answers(addr);
        }
        let incoming = memcity_page::conn::incoming(listener, |peer, refused| {
            if refused % 1000 == 1 {
                eprintln!(
                    "memcity: refused a connection from {peer}: {} are open ({refused} refused so far)",
                    memcity_page::conn::MAX_CONNECTIONS
                );
            }
        })?;
        memcity_page::run(incoming, acceptor, app)
            .await
            .context("the server stopped")
    })
}

/// A bind beyond loopback without TLS is refused unless `--insecure` says so: the page would
/// put the heap's structure on the network in clear.
fn refuse_clear_text_beyond_loopback(options: &ServeOptions) -> anyhow::Result<()> {
    if !options.bind.is_loopback() && options.tls.is_none() && !options.insecure {
        anyhow::bail!(
            "--bind {}: a page served beyond loopback would put the heap's structure on the network in clear. \
             Give --tls-cert and --tls-key, or reach it through an SSH tunnel: ssh -L {port}:127.0.0.1:{port} HOST \
             (then memcity serve there, on loopback), or pass --insecure to serve it anyway",
            options.bind,
            port = if options.port == 0 { 8080 } else { options.port }
        );
    }
    Ok(())
}

/// What is served, as the URL's line names it, once checked: a session the page could not open
/// is refused now, not in the browser.
fn checked(session: &Session) -> anyhow::Result<String> {
    Ok(match session {
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
        Session::Dumps { name, .. } => format!("the heap dumps of {name}"),
        Session::Live(addr) => {
            client::endpoint_uri(addr.as_deref()).map_err(anyhow::Error::msg)?;
            format!(
                "the agent at {}",
                addr.as_deref().unwrap_or(memcity_proto::DEFAULT_ADDR)
            )
        }
    })
}

/// The URL to open, on stdout, and a warning where the page and its token go in clear.
fn announce(addr: SocketAddr, access: &Access, tls: bool, what: &str) {
    let scheme = if tls { "https" } else { "http" };
    if !addr.ip().is_loopback() && !tls {
        eprintln!(
            "memcity: SERVING WITHOUT TLS ON {addr} (--insecure): anyone on the way can read the page and its token"
        );
    }
    println!(
        "memcity: serving {what} at {scheme}://{addr}/{} (open it in a browser; Ctrl-C stops)",
        access.query()
    );
}

/// A page with no agent behind it would sit at "connecting..." and say nothing here: the
/// terminal that started the server says what to start, when the agent at `addr` does not
/// answer.
fn say_if_no_agent_answers(addr: Option<String>) {
    tokio::spawn(async move {
        if let Err(why) = client::connect(addr.as_deref(), Duration::from_secs(3)).await {
            eprintln!(
                "memcity: nothing answers yet: {why} (`memcity attach PID` loads the agent into a running JVM). The page keeps trying, and shows the city once the agent answers"
            );
        }
    });
}

/// The most of a recording the page is handed: it holds the file whole in the browser's memory,
/// and then its model (WebAssembly has 4 GB at most, and a tab far less to spare). A longer
/// recording goes as a copy whose older snapshots are thinned as the model would thin them
/// (`memcity_proto::capped::thinned_copy`), which the page says. Half of what a model may hold
/// (`memcity --memory`, 384 MiB by default): 192 MiB.
fn page_recording_bytes() -> u64 {
    (memcity_city::model::detail_budget_for_new_models() / 2) as u64
}

async fn recording(State(s): State<Arc<Served>>) -> Response {
    if let Session::Dumps { recording, .. } = &s.session {
        return file("application/octet-stream", recording.as_ref().clone());
    }
    let Session::Recording(path) = &s.session else {
        return (StatusCode::NOT_FOUND, "this page follows a live agent").into_response();
    };
    // A recording is read whole (the page needs all of it); off the runtime's threads.
    let path = path.clone();
    let read = tokio::task::spawn_blocking({
        let path = path.clone();
        move || match memcity_proto::capped::thinned_copy(&path, page_recording_bytes()) {
            Ok(Some(copy)) => Ok(copy),
            Ok(None) => std::fs::read(path),
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
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

/// Subscribes to the agent for one page and passes on what arrives.
async fn relay(socket: axum::extract::ws::WebSocket, addr: Option<String>) {
    let subscribed = async {
        let mut client = client::connect(addr.as_deref(), Duration::from_secs(2)).await?;
        let stream = client
            .subscribe(SubscribeRequest {
                protocol_version: PROTOCOL_VERSION,
                client: format!("memcity serve {}", env!("CARGO_PKG_VERSION")),
            })
            .await
            .map_err(|s| client::failure(&s))?
            .into_inner();
        Ok::<_, String>(stream)
    };
    let messages: std::pin::Pin<Box<dyn tokio_stream::Stream<Item = _> + Send>> =
        match subscribed.await {
            Ok(stream) => Box::pin(tokio_stream::StreamExt::map(stream, |m| {
                m.map_err(|s| s.message().to_string())
            })),
            Err(why) => Box::pin(tokio_stream::once(Err(why))),
        };
    memcity_page::send_stream(socket, messages, "serve").await;
}
