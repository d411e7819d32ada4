//! The agent's own web page (`http=PORT`): the city in a browser, served by the JVM itself, so a
//! server's JVM is watched with nothing but a browser (through an SSH tunnel, or TLS). It runs on
//! the gRPC server's thread and runtime, takes the agent's token, and follows the gRPC port's
//! bind and TLS rules; the page and its server side are `memcity serve`'s (`memcity-page`).

use std::ffi::{CStr, OsStr};
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use memcity_page::access::Access;
use memcity_page::Page;
use memcity_proto::v1::StreamMessage;
use tokio_stream::StreamExt;

use crate::ports::error::PortError;
use crate::ports::hub::Hub;
use crate::ports::hub::MAX_SUBSCRIBERS;

/// Reads the page's files and binds its port. An error says what is missing; the gRPC port
/// serves on without the page.
pub async fn prepare(
    bind: std::net::IpAddr,
    port: u16,
    web: Option<&Path>,
    tls: Option<&(PathBuf, PathBuf)>,
    token: &str,
    hub: Arc<Hub>,
) -> Result<memcity_page::Ready, PortError> {
    let mut candidates = Vec::new();
    match web {
        Some(dir) => candidates.push(dir.to_owned()),
        None => {
            if let Some(dir) = library_dir() {
                candidates.push(dir.join("web"));
                if let Some(up) = dir.parent() {
                    candidates.push(up.join("web"));
                }
            }
        }
    }
    let dir = memcity_page::find_web_dir(&candidates).map_err(PortError::NoPageFiles)?;
    let page = Page::read(
        &dir,
        &serde_json::json!({ "kind": "live", "url": "stream" }),
    )?;
    let listening = memcity_page::Listening::bind(
        SocketAddr::new(bind, port),
        tls,
        "the page",
        "http",
        crate::ports::hub::log_refusal,
    )
    .await?;
    let access = Arc::new(Access::new(
        token.to_string(),
        listening.local_addr().port(),
        tls.is_some(),
        format!(
            "open the URL `memcity list` shows for this JVM, or add ?token= with the token in {}",
            memcity_proto::registry::run_dir_in_use()
                .join(std::process::id().to_string())
                .display()
        ),
    ));
    let stream = Router::new().route("/stream", get(stream)).with_state(hub);
    let app = memcity_page::guarded(stream.merge(page.routes()), access);
    Ok(listening.with(app, ""))
}

async fn stream(ws: WebSocketUpgrade, State(hub): State<Arc<Hub>>) -> Response {
    // A page is a viewer like any other: the same limit.
    if hub.live_subscribers() >= MAX_SUBSCRIBERS {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the agent serves at most {MAX_SUBSCRIBERS} viewers at once; close one"),
        )
            .into_response();
    }
    ws.on_upgrade(move |socket| async move {
        let (backlog, live) = hub.subscribe();
        let messages = tokio_stream::iter(backlog)
            .chain(tokio_stream::wrappers::ReceiverStream::new(live))
            .map(|item| Ok(StreamMessage::clone(&item)));
        memcity_page::send_stream(socket, messages, "agent").await;
    })
}

/// The folder libmemcity.so was loaded from (the page's files are beside it).
fn library_dir() -> Option<PathBuf> {
    // SAFETY: `Dl_info` is plain old data; all zeroes is a valid value to be overwritten.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let here = library_dir as *const libc::c_void;
    // SAFETY: `dladdr` only reads the loader's tables for an address of this library, and
    // writes `info`, which lives for the call.
    if unsafe { libc::dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success `dli_fname` is the loader's NUL-terminated path, alive while the
    // library is loaded (this function runs in it).
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = Path::new(OsStr::from_bytes(name.to_bytes()));
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    path.parent().map(Path::to_owned)
}
