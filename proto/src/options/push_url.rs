//! Where `pyroscope=` pushes: a plain HTTP server's address and the path it is mounted under.

use std::fmt;

/// A server to push to: `http://host[:port][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUrl {
    pub host: String,
    pub port: u16,
    /// A path the server is mounted under (a reverse proxy's), without the trailing `/`.
    pub prefix: String,
}

impl PushUrl {
    /// Parses the option's URL; an error says what to give instead.
    pub fn parse(url: &str) -> Result<PushUrl, String> {
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(
                "memcity pushes over plain HTTP only: push to a Grafana Alloy or a TLS-terminating proxy on this machine"
                    .into(),
            );
        } else {
            return Err("expected the server's address, such as http://pyroscope:4040".into());
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        // `[::1]:4040` keeps its brackets' colons.
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.ends_with(']') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| format!("'{port}' is not a port"))?,
            ),
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err("no host: expected http://host:port".into());
        }
        Ok(PushUrl {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            prefix: if path.trim_end_matches('/').is_empty() {
                String::new()
            } else {
                format!("/{}", path.trim_end_matches('/'))
            },
        })
    }
}

impl PushUrl {
    /// `host:port` (`[::1]:4040` for an IPv6 address), as an HTTP `Host` header names it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for PushUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse;
    use std::time::Duration;

    #[test]
    fn pyroscope_urls_are_read_or_refused_with_what_to_do() {
        let (o, _) = parse(Some("pyroscope=http://pyroscope:4040,pyroscope_every=30s")).unwrap();
        let url = o.pyroscope.unwrap();
        assert_eq!(
            url,
            PushUrl {
                host: "pyroscope".into(),
                port: 4040,
                prefix: String::new()
            }
        );
        assert_eq!(url.to_string(), "http://pyroscope:4040");
        assert_eq!(o.pyroscope_every, Duration::from_secs(30));
        let url = PushUrl::parse("http://10.0.0.7/profiles/").unwrap();
        assert_eq!((url.port, url.prefix.as_str()), (80, "/profiles"));
        let url = PushUrl::parse("http://[::1]:4040").unwrap();
        assert_eq!((url.host.as_str(), url.port), ("::1", 4040));
        assert_eq!(url.to_string(), "http://[::1]:4040");
        for (given, says) in [
            ("pyroscope=https://x:4040", "plain HTTP only"),
            ("pyroscope=pyroscope:4040", "such as http://"),
            ("pyroscope=http://x:port", "not a port"),
            ("pyroscope=http://:4040", "no host"),
            ("pyroscope=http://x,pyroscope_every=100ms", "1s or more"),
            ("pyroscope=http://x,port=off", "port=off"),
        ] {
            let e = parse(Some(given)).unwrap_err().to_string();
            assert!(e.contains(says), "{given}: {e}");
        }
    }
}
