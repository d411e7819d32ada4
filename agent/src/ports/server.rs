//! The gRPC server, on its own named thread with its own single-threaded tokio runtime, so
//! nothing of it runs on the application's threads or the agent's worker.

use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memcity_proto::registry;
use memcity_proto::v1::mem_city_server::{MemCity, MemCityServer};
use memcity_proto::v1::{
    SetClassifiersReply, SetClassifiersRequest, SnapshotReply, SnapshotRequest, StreamMessage,
    SubscribeRequest,
};
use memcity_proto::{version_mismatch_hint, Peer, MAX_MESSAGE_BYTES, PROTOCOL_VERSION};
use tokio::sync::oneshot;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request as GrpcRequest, Response, Status};

use crate::log::{debug, error, info, warning};
use crate::options::{parse_classifiers, Classifier};
use crate::ports::error::PortError;
use crate::ports::hub::{log_refusal, Hub, MAX_SUBSCRIBERS};

/// Why a snapshot asked for was not walked: what the viewer's `memcity snapshot` prints.
#[derive(Debug, thiserror::Error)]
pub enum WalkRefused {
    #[error("an exact walk would stop the application for about {predicted_ms} ms ({live_objects} live objects at {ns_per_object:.0} ns each), past max_pause={max_pause_ms} ms; estimates continue at every GC. Pass --force to walk anyway")]
    PastMaxPause {
        predicted_ms: u128,
        live_objects: u64,
        ns_per_object: f64,
        max_pause_ms: u128,
    },
    #[error("the pause budget ({budget_percent}% of wall time) has not yet earned this walk's predicted {predicted_ms} ms; retry in {retry_s:.1} s, or pass --force")]
    NotEarned {
        budget_percent: f64,
        predicted_ms: u128,
        retry_s: f64,
    },
    #[error("a forced walk ran {since_s:.1} s ago: forced walks are limited to one every {every_s} s so that no client can keep the application stopped; retry in {retry_s:.1} s")]
    ForcedTooSoon {
        since_s: f64,
        every_s: u64,
        retry_s: f64,
    },
    #[error("the walk ran past its limit and was aborted (the heap grew faster than predicted); retry, or raise max_pause=")]
    Aborted,
    #[error("the walk failed (see the JVM's stderr)")]
    Failed,
}

/// Work the server hands to the agent thread.
pub enum Request {
    Snapshot {
        /// Walk even past `max_pause` or the budget.
        force: bool,
        reply: oneshot::Sender<Result<SnapshotReply, WalkRefused>>,
    },
    Classifiers(Vec<Classifier>),
}

/// Requests that may wait for the agent thread; past that, callers are told to retry.
pub const REQUEST_QUEUE: usize = 32;

/// How long a `RequestSnapshot` call waits for the agent thread.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(60);

/// HTTP/2 pings on idle connections, and how long an answer may take before the connection is
/// closed: a client that connected and went silent does not hold a slot forever.
const KEEPALIVE: Duration = Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

struct Service {
    hub: Arc<Hub>,
    requests: Mutex<std_mpsc::SyncSender<Request>>,
}

impl Service {
    /// Queues work for the agent thread without waiting: the server's one thread serves every
    /// connection, so a blocking send while a walk runs would stop all streams.
    fn send(&self, request: Request) -> Result<(), Status> {
        match self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .try_send(request)
        {
            Ok(()) => Ok(()),
            Err(std_mpsc::TrySendError::Full(_)) => Err(Status::resource_exhausted(format!(
                "the agent already has {REQUEST_QUEUE} requests waiting (a walk is running); retry in a few seconds"
            ))),
            Err(std_mpsc::TrySendError::Disconnected(_)) => Err(Status::unavailable(
                "the agent has stopped (the JVM is exiting or the agent disabled itself)",
            )),
        }
    }
}

type MessageStream = Pin<Box<dyn Stream<Item = Result<StreamMessage, Status>> + Send>>;

#[tonic::async_trait]
impl MemCity for Service {
    type SubscribeStream = MessageStream;

    async fn subscribe(
        &self,
        request: GrpcRequest<SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let peer = memcity_page::conn::of_request(&request).map(|c| c.peer);
        let request = request.into_inner();
        // Version 0 means the field was not set; accept it and let the handshake speak.
        if request.protocol_version != 0 {
            if let Some(hint) = version_mismatch_hint(Peer::Viewer {
                protocol: request.protocol_version,
                client: &request.client,
            }) {
                return Err(Status::failed_precondition(hint));
            }
        }
        // A viewer is the session going as it should: nothing for the application's stderr.
        debug!(
            "viewer connected: {} from {}",
            if request.client.is_empty() {
                "unnamed client"
            } else {
                &request.client
            },
            peer.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
        );
        if self.hub.live_subscribers() >= MAX_SUBSCRIBERS {
            return Err(Status::resource_exhausted(format!(
                "the agent serves at most {MAX_SUBSCRIBERS} viewers at once; close one (or record from one and share the file)"
            )));
        }
        let (backlog, rx) = self.hub.subscribe();
        let live = tokio_stream::wrappers::ReceiverStream::new(rx);
        let stream = tokio_stream::iter(backlog)
            .chain(live)
            .map(|item| Ok(StreamMessage::clone(&item)));
        Ok(Response::new(Box::pin(stream)))
    }

    async fn request_snapshot(
        &self,
        request: GrpcRequest<SnapshotRequest>,
    ) -> Result<Response<SnapshotReply>, Status> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Snapshot {
            force: request.into_inner().force,
            reply: tx,
        })?;
        match tokio::time::timeout(SNAPSHOT_TIMEOUT, rx).await {
            Ok(Ok(Ok(reply))) => Ok(Response::new(reply)),
            Ok(Ok(Err(why))) => Err(Status::failed_precondition(why.to_string())),
            Ok(Err(_)) => Err(Status::unavailable(
                "the agent stopped before taking the snapshot",
            )),
            Err(_) => Err(Status::deadline_exceeded(
                "the agent did not take the snapshot within 60 s",
            )),
        }
    }

    async fn set_classifiers(
        &self,
        request: GrpcRequest<SetClassifiersRequest>,
    ) -> Result<Response<SetClassifiersReply>, Status> {
        let chain = parse_classifiers(&request.into_inner().classifiers.join(":"))
            .map_err(Status::invalid_argument)?;
        let names = chain.iter().map(|c| c.name().to_string()).collect();
        self.send(Request::Classifiers(chain))?;
        Ok(Response::new(SetClassifiersReply { classifiers: names }))
    }
}

/// Starts the server thread. Binding happens on that thread; failures are logged there and the
/// JVM runs on without a server.
/// The web page to serve beside the gRPC port (`http=`, `web=`).
pub struct PageOptions {
    pub port: u16,
    pub web: Option<std::path::PathBuf>,
}

/// What a fleet's monitoring gets beside the gRPC port: Prometheus metrics (`metrics=` and its
/// options) and pushes to Pyroscope (`pyroscope=`), both from one follower of the session.
pub struct FleetOptions {
    pub metrics: Option<u16>,
    pub token: Option<std::path::PathBuf>,
    pub top: usize,
    pub window: Duration,
    pub service: String,
    pub pyroscope: Option<memcity_proto::options::PushUrl>,
    pub pyroscope_every: Duration,
}

#[allow(clippy::too_many_arguments)] // each is one agent option, passed through once
pub fn spawn(
    addr: SocketAddr,
    insecure: bool,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    portfile: Option<std::path::PathBuf>,
    page: Option<PageOptions>,
    fleet: Option<FleetOptions>,
    hub: Arc<Hub>,
    requests: std_mpsc::SyncSender<Request>,
) -> std::io::Result<ServerHandle> {
    let (stop, stopped) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("memcity-grpc".into())
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                serve(
                    addr,
                    insecure,
                    tls,
                    portfile.as_deref(),
                    page,
                    fleet,
                    hub,
                    requests,
                    stopped,
                )
            }));
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(why)) => error!(
                    "gRPC server stopped: {why}; the application continues without live viewers"
                ),
                Err(_) => error!(
                    "gRPC server thread panicked; the application continues without live viewers"
                ),
            }
        })
        .map(|thread| ServerHandle { stop, thread })
}

/// The server thread, for a detach to close the port.
pub struct ServerHandle {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

/// Longest a detach waits for the server thread to end.
const STOP_WAIT: Duration = Duration::from_secs(2);

impl ServerHandle {
    /// Whether the server still serves: its thread ends when it cannot bind its port.
    pub fn is_running(&self) -> bool {
        !self.thread.is_finished()
    }

    /// Closes the listening socket and every connection (the runtime ends with its tasks).
    pub fn stop(self) {
        let _ = self.stop.send(());
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while !self.thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        } else {
            warning!("the gRPC thread did not end in time; it ends with the JVM");
        }
    }
}

#[allow(clippy::too_many_arguments)] // as `spawn`
fn serve(
    addr: SocketAddr,
    insecure: bool,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    portfile: Option<&Path>,
    page: Option<PageOptions>,
    fleet: Option<FleetOptions>,
    hub: Arc<Hub>,
    requests: std_mpsc::SyncSender<Request>,
    stopped: tokio::sync::oneshot::Receiver<()>,
) -> Result<(), PortError> {
    let tls_files = tls.clone();
    let tls = tls.map(|(cert, key)| tls_config(&cert, &key)).transpose()?;
    if !addr.ip().is_loopback() && tls.is_none() {
        if !insecure {
            return Err(PortError::NeedsTls {
                addr,
                run_dir: registry::run_dir_in_use(),
            });
        }
        warning!(
            "SERVING WITHOUT TLS ON {addr} (insecure=true): anyone on the network who has the token (in {}) can read the heap's structure and request walks",
            registry::run_dir_in_use().display()
        );
    }
    let token = registry::new_token().map_err(PortError::system("make an access token"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("memcity-grpc-rt")
        .build()
        .map_err(PortError::system("start the async runtime"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| PortError::Listen { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(PortError::system("read the bound address"))?;
        // The page is optional: what keeps it from serving is said, and the gRPC port serves on.
        let page = match page {
            Some(options) => crate::ports::page::prepare(
                addr.ip(),
                options.port,
                options.web.as_deref(),
                tls_files.as_ref(),
                &token,
                hub.clone(),
            )
            .await
            .map_err(|why| warning!("no web page: {why}"))
            .ok(),
            None => None,
        };
        // Likewise the metrics and the push.
        let metrics = match fleet {
            Some(fleet) => {
                let page = page.as_ref().map(|p| p.url.as_str());
                serve_fleet(fleet, hub.clone(), (addr, local), tls_files.as_ref(), page).await
            }
            None => None,
        };
        let registered = register_locally(
            local.port(),
            &token,
            page.as_ref().map(|p| p.url.clone()),
            metrics.as_ref().map(|m| m.url.clone()),
            portfile,
        )?;
        info!(
            "listening on {local}{} (memcity protocol {PROTOCOL_VERSION}); clients of this user find the token in {}",
            if tls.is_some() { " with TLS" } else { "" },
            registered.display()
        );
        serve_beside(page, metrics);
        let service = MemCityServer::new(Service {
            hub,
            requests: Mutex::new(requests),
        })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let service = tonic::service::interceptor::InterceptedService::new(
            service,
            TokenCheck::new(&token),
        );
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = tls {
            builder = builder
                .tls_config(tls)
                .map_err(PortError::Tls)?;
        }
        let serving = builder
            .http2_keepalive_interval(Some(KEEPALIVE))
            .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
            .add_service(service)
            .serve_with_incoming(
                memcity_page::conn::incoming(listener, log_refusal)
                    .map_err(PortError::system("read the bound address"))?,
            );
        // A detach drops the server (and with the runtime every connection): streams to
        // viewers never end by themselves, so a graceful shutdown would wait for them forever.
        tokio::select! {
            served = serving => served.map_err(PortError::Served),
            _ = stopped => Ok(()),
        }
    })
}

/// Serves the page and the metrics, each on a task of its own: the gRPC port serves on
/// whatever becomes of them.
fn serve_beside(page: Option<memcity_page::Ready>, metrics: Option<memcity_page::Ready>) {
    if let Some(page) = page {
        info!(
            "serving the web page on {} (open the URL `memcity list` shows for this JVM)",
            page.url
        );
        tokio::spawn(async move {
            if let Err(why) = page.serve().await {
                warning!("the page's server stopped: {why}; the gRPC port serves on");
            }
        });
    }
    if let Some(metrics) = metrics {
        info!("serving Prometheus metrics on {}", metrics.url);
        tokio::spawn(async move {
            if let Err(why) = metrics.serve().await {
                warning!("the metrics' server stopped: {why}; the gRPC port serves on");
            }
        });
    }
}

/// The server's TLS identity from its certificate and key files (PEM).
fn tls_config(cert: &Path, key: &Path) -> Result<tonic::transport::ServerTlsConfig, PortError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| PortError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let identity = tonic::transport::Identity::from_pem(read(cert)?, read(key)?);
    Ok(tonic::transport::ServerTlsConfig::new().identity(identity))
}

/// A fleet's ports beside the gRPC one, from one follower of the session: the metrics, if
/// asked for, whose answer is returned (`None` when not asked for, or when what keeps them
/// from serving was said), and the push to Pyroscope.
async fn serve_fleet(
    fleet: FleetOptions,
    hub: Arc<Hub>,
    (addr, local): (SocketAddr, SocketAddr),
    tls_files: Option<&(std::path::PathBuf, std::path::PathBuf)>,
    page_url: Option<&str>,
) -> Option<memcity_page::Ready> {
    let shared = crate::ports::metrics::follow_session(
        hub,
        crate::ports::metrics::Settings {
            top: fleet.top,
            window: fleet.window,
            agent: crate::ports::metrics::agent_address(local),
            service: fleet.service.clone(),
            page: page_url.map(crate::ports::metrics::reachable_url),
        },
    );
    let mut metrics = None;
    if let Some(port) = fleet.metrics {
        metrics = crate::ports::metrics::prepare(
            addr.ip(),
            port,
            tls_files,
            fleet.token.as_deref(),
            shared.clone(),
        )
        .await
        .map_err(|why| warning!("no metrics: {why}"))
        .ok();
    }
    if let Some(target) = fleet.pyroscope {
        tokio::spawn(crate::ports::pyroscope::run(
            target,
            fleet.pyroscope_every,
            fleet.service,
            shared,
        ));
    }
    metrics
}

/// Registers this JVM for local clients (its port, token and other ports' URLs) and writes
/// the port file if asked for; returns where the registration is.
fn register_locally(
    port: u16,
    token: &str,
    page: Option<String>,
    metrics: Option<String>,
    portfile: Option<&Path>,
) -> Result<std::path::PathBuf, PortError> {
    let registration = registry::Registration {
        pid: std::process::id(),
        port,
        token: token.to_string(),
        page,
        metrics,
    };
    let registered = registry::register(&registration).map_err(PortError::system(
        "write the access token for local clients",
    ))?;
    if let Some(why) = registry::run_dir_refused() {
        warning!(
            "{why}; this JVM registers in {} instead (memcity list finds it there)",
            registered.parent().unwrap_or(&registered).display()
        );
    }
    if let Some(path) = portfile {
        write_portfile(path, port).map_err(|source| PortError::Portfile {
            path: path.to_owned(),
            source,
        })?;
    }
    Ok(registered)
}

/// Lets through only requests that carry the agent's token (`registry::TOKEN_HEADER`).
#[derive(Clone)]
struct TokenCheck {
    expected: Arc<[u8]>,
}

impl TokenCheck {
    fn new(token: &str) -> Self {
        TokenCheck {
            expected: token.as_bytes().into(),
        }
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: GrpcRequest<()>) -> Result<GrpcRequest<()>, Status> {
        let given = request
            .metadata()
            .get(registry::TOKEN_HEADER)
            .map(|v| v.as_bytes());
        let matches = given.is_some_and(|given| registry::same_token(given, &self.expected));
        if matches {
            // The token was shown: the connection may stay (`memcity_page::conn`).
            if let Some(info) = memcity_page::conn::of_request(&request) {
                info.trust.grant();
            }
            Ok(request)
        } else {
            Err(Status::unauthenticated(format!(
                "{}: memcity finds the token by itself for a JVM of the same user on this machine (in {}); from elsewhere, pass --token or set MEMCITY_TOKEN",
                if given.is_some() {
                    "wrong token for this agent"
                } else {
                    "this agent needs its token"
                },
                registry::run_dir_in_use().display()
            )))
        }
    }
}

/// Writes the port atomically (a private file beside it, then renamed over it), so a script
/// polling for the file never reads a half-written number, and a link planted at its name in
/// a shared folder is replaced, never written through (`memcity_proto::files::replace`).
fn write_portfile(path: &Path, port: u16) -> std::io::Result<()> {
    memcity_proto::files::replace(path, format!("{port}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_walk_says_why_and_what_to_do() {
        let refused = WalkRefused::NotEarned {
            budget_percent: 2.0,
            predicted_ms: 340,
            retry_s: 4.25,
        };
        assert_eq!(
            refused.to_string(),
            "the pause budget (2% of wall time) has not yet earned this walk's predicted 340 ms; retry in 4.2 s, or pass --force"
        );
        let forced = WalkRefused::ForcedTooSoon {
            since_s: 3.0,
            every_s: 10,
            retry_s: 7.0,
        };
        assert!(forced.to_string().ends_with("retry in 7.0 s"));
    }
}
