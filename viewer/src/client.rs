//! Connecting to a live agent.

use std::time::{Duration, Instant};

use memcity_proto::v1::mem_city_client::MemCityClient;
use memcity_proto::{DEFAULT_ADDR, MAX_MESSAGE_BYTES};
use tonic::transport::{Channel, Endpoint};

/// Turns what a user types (`7788`, `:7788`, `localhost:7788`, `http://host:7788`) into a URI.
pub fn endpoint_uri(addr: Option<&str>) -> Result<String, String> {
    let addr = addr.unwrap_or(DEFAULT_ADDR).trim();
    let hostport = addr
        .strip_prefix("http://")
        .unwrap_or(addr)
        .trim_end_matches('/');
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
    Ok(format!("http://{hostport}"))
}

/// Connects, retrying until `wait` has passed (the JVM may still be starting).
pub async fn connect(addr: Option<&str>, wait: Duration) -> Result<MemCityClient<Channel>, String> {
    let uri = endpoint_uri(addr)?;
    let endpoint = Endpoint::from_shared(uri.clone())
        .map_err(|e| format!("bad address {uri}: {e}"))?
        .connect_timeout(Duration::from_secs(2))
        .tcp_nodelay(true);
    let deadline = Instant::now() + wait;
    loop {
        match endpoint.connect().await {
            Ok(channel) => {
                return Ok(MemCityClient::new(channel)
                    .max_decoding_message_size(MAX_MESSAGE_BYTES)
                    .max_encoding_message_size(MAX_MESSAGE_BYTES))
            }
            Err(e) if Instant::now() >= deadline => {
                let detail = std::error::Error::source(&e)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| e.to_string());
                return Err(format!(
                    "cannot connect to a memcity agent at {}: {detail}. Is the JVM running with -agentpath:/path/to/libmemcity.so, and on this port (agent option port=, default 7788)?",
                    uri.trim_start_matches("http://")
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
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
