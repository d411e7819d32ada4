//! The gRPC server, on its own named thread with its own single-threaded tokio runtime, so
//! nothing of it runs on the application's threads or the agent's worker.

use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memcity_proto::v1::mem_city_server::{MemCity, MemCityServer};
use memcity_proto::v1::{
    SetClassifiersReply, SetClassifiersRequest, SnapshotReply, SnapshotRequest, StreamMessage,
    SubscribeRequest,
};
use memcity_proto::{version_mismatch_hint, MAX_MESSAGE_BYTES, PROTOCOL_VERSION};
use tokio::sync::oneshot;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request as GrpcRequest, Response, Status};

use crate::hub::Hub;
use crate::log::{error, info};
use crate::options::{parse_classifiers, Classifier};

/// Work the server hands to the agent thread.
pub enum Request {
    Snapshot {
        /// Walk even past `max_pause` or the budget.
        force: bool,
        reply: oneshot::Sender<Result<SnapshotReply, String>>,
    },
    Classifiers(Vec<Classifier>),
}

/// Requests that may wait for the agent thread; past that, callers are told to retry.
pub const REQUEST_QUEUE: usize = 32;

/// How long a `RequestSnapshot` call waits for the agent thread.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(60);

struct Service {
    hub: Arc<Hub>,
    requests: Mutex<std_mpsc::SyncSender<Request>>,
}

impl Service {
    fn send(&self, request: Request) -> Result<(), Status> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(request)
            .map_err(|_| {
                Status::unavailable(
                    "the agent has stopped (the JVM is exiting or the agent disabled itself)",
                )
            })
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
        let peer = request.remote_addr();
        let request = request.into_inner();
        // Version 0 means the field was not set; accept it and let the handshake speak.
        if request.protocol_version != 0 {
            if let Some(hint) = version_mismatch_hint(request.protocol_version).map(|h| {
                // The hint is phrased from the viewer's side; swap roles for a client's version.
                h.replace("the agent speaks", "the viewer speaks")
            }) {
                return Err(Status::failed_precondition(hint));
            }
        }
        info!(
            "viewer connected: {} from {}",
            if request.client.is_empty() {
                "unnamed client"
            } else {
                &request.client
            },
            peer.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
        );
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
            Ok(Ok(Err(why))) => Err(Status::failed_precondition(why)),
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
pub fn spawn(
    addr: SocketAddr,
    portfile: Option<std::path::PathBuf>,
    hub: Arc<Hub>,
    requests: std_mpsc::SyncSender<Request>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("memcity-grpc".into())
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                serve(addr, portfile.as_deref(), hub, requests)
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
        .map(|_| ())
}

fn serve(
    addr: SocketAddr,
    portfile: Option<&Path>,
    hub: Arc<Hub>,
    requests: std_mpsc::SyncSender<Request>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("memcity-grpc-rt")
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            format!(
                "cannot listen on {addr}: {e} (another JVM with memcity on this port? pass port=0 for a free port, or port=N)"
            )
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        if let Some(path) = portfile {
            write_portfile(path, local.port())
                .map_err(|e| format!("cannot write portfile {}: {e}", path.display()))?;
        }
        info!("listening on {local} (memcity protocol {PROTOCOL_VERSION})");
        let service = MemCityServer::new(Service {
            hub,
            requests: Mutex::new(requests),
        })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .map_err(|e| format!("server error: {e}"))
    })
}

/// Writes the port atomically (temp file, then rename), so a script polling for the file never
/// reads a half-written number.
fn write_portfile(path: &Path, port: u16) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp-memcity");
    std::fs::write(&tmp, format!("{port}\n"))?;
    std::fs::rename(&tmp, path)
}
