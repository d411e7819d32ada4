//! Connecting to a live agent.

use std::time::{Duration, Instant};

use std::sync::OnceLock;

use memcity_proto::registry::{self, TOKEN_HEADER};
use memcity_proto::v1::mem_city_client::MemCityClient;
use memcity_proto::{DEFAULT_ADDR, MAX_MESSAGE_BYTES};
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// A connected client: every request carries the agent's token.
pub type Client = MemCityClient<InterceptedService<Channel, Token>>;

/// The token given on the command line (`--token`), for every connection of this process.
static GIVEN_TOKEN: OnceLock<String> = OnceLock::new();

/// Uses `token` for every agent this process connects to (a remote agent's).
pub fn set_token(token: String) {
    let _ = GIVEN_TOKEN.set(token);
}

/// Adds the agent's token to each request: given (`--token`, `MEMCITY_TOKEN`), or found in the
/// registration a local agent of this user wrote for its port (`memcity_proto::registry`),
/// looked up until found, since the agent writes it once it listens.
#[derive(Clone)]
pub struct Token {
    port: Option<u16>,
    value: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Token {
    fn for_uri(uri: &str) -> Self {
        let hostport = uri
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, ""));
        let local = matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1");
        let mut token = Token {
            port: port.parse().ok().filter(|_| local),
            value: None,
        };
        token.value = token.lookup();
        token
    }

    fn lookup(&self) -> Option<MetadataValue<tonic::metadata::Ascii>> {
        let given = GIVEN_TOKEN
            .get()
            .cloned()
            .or_else(|| std::env::var("MEMCITY_TOKEN").ok())
            .filter(|t| !t.is_empty());
        let token = given.or_else(|| self.port.and_then(registry::token_for_port))?;
        token.parse().ok()
    }
}

impl tonic::service::Interceptor for Token {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if self.value.is_none() {
            self.value = self.lookup();
        }
        if let Some(value) = &self.value {
            request.metadata_mut().insert(TOKEN_HEADER, value.clone());
        }
        Ok(request)
    }
}

/// Turns what a user types (`7788`, `:7788`, `localhost:7788`, `http://host:7788`) into a URI.
pub fn endpoint_uri(addr: Option<&str>) -> Result<String, String> {
    let addr = addr.unwrap_or(DEFAULT_ADDR).trim();
    let (scheme, rest) = match addr.strip_prefix("https://") {
        Some(rest) => ("https", rest),
        None => ("http", addr.strip_prefix("http://").unwrap_or(addr)),
    };
    let hostport = rest.trim_end_matches('/');
    let hostport = if hostport.chars().all(|c| c.is_ascii_digit()) && !hostport.is_empty() {
        format!("127.0.0.1:{hostport}")
    } else if let Some(port) = hostport.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else {
        hostport.to_string()
    };
    let valid_port = hostport
        .rsplit_once(':')
        .and_then(|(host, port)| (!host.is_empty()).then_some(port))
        .and_then(|port| port.parse::<u16>().ok())
        .is_some();
    if !valid_port {
        return Err(format!(
            "'{addr}' is not an agent address: expected HOST:PORT, such as {DEFAULT_ADDR} (the agent's port= option)"
        ));
    }
    Ok(format!("{scheme}://{hostport}"))
}

/// The CA certificate (PEM) that `https://` agents are checked against (`--ca`).
static GIVEN_CA: OnceLock<std::path::PathBuf> = OnceLock::new();

/// Checks `https://` agents against this CA certificate (or the agent's self-signed one).
pub fn set_ca(path: std::path::PathBuf) {
    let _ = GIVEN_CA.set(path);
}

/// Connects, retrying until `wait` has passed (the JVM may still be starting).
pub async fn connect(addr: Option<&str>, wait: Duration) -> Result<Client, String> {
    let uri = endpoint_uri(addr)?;
    let mut endpoint = Endpoint::from_shared(uri.clone())
        .map_err(|e| format!("bad address {uri}: {e}"))?
        .connect_timeout(Duration::from_secs(2))
        .tcp_nodelay(true);
    if uri.starts_with("https://") {
        let ca = GIVEN_CA
            .get()
            .cloned()
            .or_else(|| std::env::var_os("MEMCITY_CA").map(Into::into))
            .ok_or_else(|| {
                format!("{uri} is a TLS address: give the agent's certificate (or its CA) with --ca FILE or MEMCITY_CA")
            })?;
        let pem = std::fs::read(&ca).map_err(|e| format!("cannot read {}: {e}", ca.display()))?;
        endpoint = endpoint
            .tls_config(
                tonic::transport::ClientTlsConfig::new()
                    .ca_certificate(tonic::transport::Certificate::from_pem(pem)),
            )
            .map_err(|e| format!("cannot use {} for TLS: {e}", ca.display()))?;
    }
    let deadline = Instant::now() + wait;
    loop {
        match endpoint.connect().await {
            Ok(channel) => {
                return Ok(
                    MemCityClient::with_interceptor(channel, Token::for_uri(&uri))
                        .max_decoding_message_size(MAX_MESSAGE_BYTES)
                        .max_encoding_message_size(MAX_MESSAGE_BYTES),
                )
            }
            Err(e) if Instant::now() >= deadline => {
                // The innermost cause says most ("Connection refused"); tonic's own words
                // around it ("transport error", "tcp connect error") say little.
                let detail =
                    std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
                        .last()
                        .map_or_else(|| e.to_string(), |cause| cause.to_string());
                return Err(format!(
                    "cannot connect to a memcity agent at {}: {detail}. Is the JVM running with -agentpath:/path/to/libmemcity.so, and on this port? (`memcity list` shows the ports of the local agents; --pid PID finds one by its JVM)",
                    uri.trim_start_matches("https://").trim_start_matches("http://")
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// What to tell the user of a failed request: the agent's reason, or, when the connection was
/// closed under the request (a transport error), what may have closed it.
pub fn failure(status: &tonic::Status) -> String {
    match status.code() {
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled => format!(
            "the connection to the agent closed before it answered ({}): the JVM may be exiting, or the agent's port may be full (it serves {} connections; those without the token are closed first, so close other memcity clients of this JVM and retry)",
            status.message(),
            memcity_page::conn::MAX_CONNECTIONS
        ),
        _ => status.message().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(endpoint_uri(None).unwrap(), "http://127.0.0.1:7788");
        assert_eq!(endpoint_uri(Some("9000")).unwrap(), "http://127.0.0.1:9000");
        assert_eq!(
            endpoint_uri(Some(":9000")).unwrap(),
            "http://127.0.0.1:9000"
        );
        assert_eq!(
            endpoint_uri(Some("localhost:1")).unwrap(),
            "http://localhost:1"
        );
        assert_eq!(endpoint_uri(Some("http://h:2/")).unwrap(), "http://h:2");
        assert_eq!(endpoint_uri(Some("https://h:2")).unwrap(), "https://h:2");
        assert_eq!(
            endpoint_uri(Some("[::1]:7788")).unwrap(),
            "http://[::1]:7788"
        );
        for bad in ["", "host", "host:port", "host:70000", ":x"] {
            let e = endpoint_uri(Some(bad)).unwrap_err();
            assert!(e.contains("HOST:PORT"), "{bad}: {e}");
        }
    }
}
