//! Who may scrape the metrics: with `metrics_token`, whoever sends that token as a bearer
//! token (the file is read again at each scrape, so a rotated token needs no restart); without
//! it, any request addressed to a loopback name. That is any local user's process: the
//! metrics name classes, packages and static fields, not the heap's contents, and
//! `metrics_token` keeps them from other users of a shared machine. The Host check keeps out
//! web pages that reach a loopback port through DNS rebinding (only under their own names).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use axum::http::{header, HeaderMap, StatusCode};

use crate::ports::error::PortError;

#[derive(Debug)]
pub struct Access {
    /// The token file, and the token last read from it.
    token: Option<(PathBuf, Mutex<String>)>,
}

/// The token in `path`, trimmed of its line end; an error says what to do.
fn read_token(path: &Path) -> Result<String, PortError> {
    let text = std::fs::read_to_string(path).map_err(|source| PortError::ReadToken {
        path: path.to_owned(),
        source,
    })?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(PortError::EmptyToken {
            path: path.to_owned(),
        });
    }
    Ok(token)
}

impl Access {
    /// Reads the token file (`metrics_token`) once, to refuse a missing or empty one at start.
    pub fn new(token_file: Option<&Path>) -> Result<Access, PortError> {
        let token = match token_file {
            Some(path) => Some((path.to_owned(), Mutex::new(read_token(path)?))),
            None => None,
        };
        Ok(Access { token })
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The token now: the file's, or the last one read while the file cannot be (a rotation
    /// that writes it anew).
    fn current(path: &Path, last: &Mutex<String>) -> String {
        let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(token) = read_token(path) {
            *last = token;
        }
        last.clone()
    }

    pub fn check(&self, headers: &HeaderMap) -> Result<(), (StatusCode, String)> {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        match &self.token {
            Some((path, last)) => {
                let token = Self::current(path, last);
                match text(header::AUTHORIZATION).and_then(memcity_page::access::bearer) {
                    Some(given)
                        if memcity_proto::registry::same_token(
                            given.as_bytes(),
                            token.as_bytes(),
                        ) =>
                    {
                        Ok(())
                    }
                    Some(_) => Err((
                        StatusCode::UNAUTHORIZED,
                        "memcity: wrong bearer token for the metrics\n".into(),
                    )),
                    None => Err((
                        StatusCode::UNAUTHORIZED,
                        "memcity: the metrics need the bearer token from the file metrics_token names (Prometheus: authorization: credentials_file)\n".into(),
                    )),
                }
            }
            None => {
                let host = text(header::HOST).unwrap_or("");
                if is_loopback_host(host) {
                    Ok(())
                } else {
                    Err((
                        StatusCode::FORBIDDEN,
                        format!("memcity: metrics without metrics_token answer only loopback names, not {host:?}\n"),
                    ))
                }
            }
        }
    }
}

/// `127.0.0.1:9404`, `[::1]:9404`, `localhost:9404` (and without ports).
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrapes_need_the_token_or_a_loopback_name() {
        let mut headers = HeaderMap::new();
        let open = Access { token: None };
        for host in [
            "127.0.0.1:9404",
            "localhost:9404",
            "[::1]:9404",
            "localhost",
        ] {
            headers.insert(header::HOST, host.parse().unwrap());
            assert!(open.check(&headers).is_ok(), "{host}");
        }
        for host in ["attacker.example:9404", "10.0.0.5:9404", ""] {
            headers.insert(header::HOST, host.parse().unwrap());
            assert_eq!(
                open.check(&headers).unwrap_err().0,
                StatusCode::FORBIDDEN,
                "{host}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        let guarded = Access::new(Some(&file)).unwrap();
        assert_eq!(
            guarded.check(&headers).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        headers.insert(header::AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert_eq!(
            guarded.check(&headers).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        headers.insert(header::AUTHORIZATION, "bearer s3cret".parse().unwrap());
        assert!(guarded.check(&headers).is_ok());
        // A rotated token takes effect at the next scrape; a file gone keeps the last one.
        std::fs::write(&file, "rotated").unwrap();
        assert_eq!(
            guarded.check(&headers).unwrap_err().0,
            StatusCode::UNAUTHORIZED
        );
        headers.insert(header::AUTHORIZATION, "Bearer rotated".parse().unwrap());
        assert!(guarded.check(&headers).is_ok());
        std::fs::remove_file(&file).unwrap();
        assert!(guarded.check(&headers).is_ok());
    }

    #[test]
    fn a_token_file_is_read_and_must_hold_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "abc\n").unwrap();
        assert_eq!(read_token(&file).unwrap(), "abc");
        assert!(Access::new(Some(&file)).unwrap().has_token());
        std::fs::write(&file, "\n").unwrap();
        let e = Access::new(Some(&file)).unwrap_err();
        assert!(matches!(e, PortError::EmptyToken { .. }), "{e}");
        assert!(e.to_string().contains("is empty"));
        let e = Access::new(Some(&dir.path().join("missing"))).unwrap_err();
        assert!(matches!(e, PortError::ReadToken { .. }), "{e}");
        assert!(e.to_string().contains("cannot read metrics_token"), "{e}");
    }
}
