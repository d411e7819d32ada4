//! Who may use the page: whoever holds its token (`memcity serve` prints it in the page's URL;
//! the agent's page takes the agent's own). The page carries the heap's structure and, live, the
//! agent's stream, which the agent gives only to holders of its token; on loopback too, since
//! any local user can reach a loopback port, and so can a web page the browser visits, through
//! DNS rebinding.
//!
//! The URL's `?token=` is traded at once for a cookie scoped to this port (cookies ignore ports,
//! and two `serve`s on one host must not overwrite each other's), and the browser is sent back
//! to the same address without the token, so it does not stay in the address bar or the
//! history. Scripts may send `Authorization: Bearer TOKEN` instead.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The token of an `Authorization: Bearer TOKEN` header's value (the scheme's name in any
/// case, as HTTP has it).
pub fn bearer(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub struct Access {
    token: String,
    /// Where the refused are told to find the token.
    hint: String,
    cookie: String,
    /// Served over TLS: the cookie is then never sent in clear.
    secure: bool,
}

/// What a request gets.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Pass,
    /// The right token in the URL: set the cookie and send the browser back to this path.
    SetCookie {
        location: String,
        cookie: String,
    },
    Refuse(StatusCode, String),
}

impl Access {
    /// `hint` tells the refused where the token is, e.g. "open the whole URL memcity serve
    /// printed (it ends in ?token=...)".
    pub fn new(token: String, port: u16, secure: bool, hint: String) -> Self {
        Access {
            token,
            hint,
            cookie: format!("memcity_token_{port}"),
            secure,
        }
    }

    /// What the printed URL ends with.
    pub fn query(&self) -> String {
        format!("?token={}", self.token)
    }

    fn is_token(&self, given: &str) -> bool {
        memcity_proto::registry::same_token(given.as_bytes(), self.token.as_bytes())
    }

    pub fn decide(&self, path: &str, query: Option<&str>, headers: &HeaderMap) -> Decision {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        // A page of another site may not drive this one (a WebSocket is not bound by the
        // same-origin rule; its handshake names its origin).
        if let (Some(origin), Some(host)) = (text(header::ORIGIN), text(header::HOST)) {
            let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
            if origin_host != host {
                return Decision::Refuse(
                    StatusCode::FORBIDDEN,
                    format!("memcity: a page from {origin} may not use this one"),
                );
            }
        }
        let from_url = query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|pair| pair.strip_prefix("token="));
        if let Some(given) = from_url {
            if !self.is_token(given) {
                return self.refuse("wrong token");
            }
            let secure = if self.secure { "; Secure" } else { "" };
            // The rest of the query is the page's (the look it asks for): it stays.
            let rest: Vec<&str> = query
                .into_iter()
                .flat_map(|q| q.split('&'))
                .filter(|pair| !pair.starts_with("token=") && !pair.is_empty())
                .collect();
            let location = if rest.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", rest.join("&"))
            };
            return Decision::SetCookie {
                location,
                cookie: format!(
                    "{}={}; Path=/; HttpOnly; SameSite=Strict{secure}",
                    self.cookie, self.token
                ),
            };
        }
        let bearer = text(header::AUTHORIZATION).and_then(bearer);
        let cookie = text(header::COOKIE).and_then(|cookies| {
            cookies.split(';').find_map(|c| {
                let (name, value) = c.trim().split_once('=')?;
                (name == self.cookie).then_some(value)
            })
        });
        match bearer.or(cookie) {
            Some(given) if self.is_token(given) => Decision::Pass,
            Some(_) => self.refuse("wrong token"),
            None => self.refuse("this page needs its token"),
        }
    }

    fn refuse(&self, what: &str) -> Decision {
        Decision::Refuse(
            StatusCode::UNAUTHORIZED,
            format!("memcity: {what}: {}", self.hint),
        )
    }
}

/// The router's guard: every request passes [`Access::decide`].
pub async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let uri = request.uri();
    let decision = access.decide(uri.path(), uri.query(), request.headers());
    if !matches!(decision, Decision::Refuse(..)) {
        // The token was shown: the connection may stay (`conn`).
        if let Some(info) = crate::conn::of_extensions(request.extensions()) {
            info.trust.grant();
        }
    }
    match decision {
        Decision::Pass => next.run(request).await,
        Decision::SetCookie { location, cookie } => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, location), (header::SET_COOKIE, cookie)],
        )
            .into_response(),
        Decision::Refuse(status, why) => (status, why).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn bearer_schemes_are_read_in_any_case() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("BEARER abc"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn the_token_in_the_url_becomes_a_cookie_for_this_port_and_leaves_the_address_bar() {
        let access = Access::new(TOKEN.into(), 8080, false, "add ?token=".into());
        assert_eq!(access.query(), format!("?token={TOKEN}"));
        let decision = access.decide("/", Some(&format!("token={TOKEN}")), &HeaderMap::new());
        assert_eq!(
            decision,
            Decision::SetCookie {
                location: "/".into(),
                cookie: format!("memcity_token_8080={TOKEN}; Path=/; HttpOnly; SameSite=Strict"),
            }
        );
        let tls = Access::new(TOKEN.into(), 443, true, "add ?token=".into());
        let Decision::SetCookie { cookie, location } = tls.decide(
            "/",
            Some(&format!("view=icicle&token={TOKEN}&bench=3")),
            &HeaderMap::new(),
        ) else {
            panic!("the token is found among other parameters");
        };
        assert!(cookie.ends_with("; Secure"), "{cookie}");
        assert_eq!(
            location, "/?view=icicle&bench=3",
            "the page's own parameters stay"
        );
    }

    #[test]
    fn the_cookie_or_a_bearer_token_passes_and_nothing_else_does() {
        let access = Access::new(TOKEN.into(), 8080, false, "add ?token=".into());
        let cookie = headers(&[(
            header::COOKIE,
            &format!("other=1; memcity_token_8080={TOKEN}"),
        )]);
        assert_eq!(access.decide("/gl.js", None, &cookie), Decision::Pass);
        let bearer = headers(&[(header::AUTHORIZATION, &format!("Bearer {TOKEN}"))]);
        assert_eq!(access.decide("/folder", None, &bearer), Decision::Pass);

        let refused = |d: Decision| match d {
            Decision::Refuse(status, why) => (status, why),
            other => panic!("{other:?}"),
        };
        let (status, why) = refused(access.decide("/", None, &HeaderMap::new()));
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(
            why.contains("needs its token") && why.contains("?token="),
            "{why}"
        );
        // Another serve's cookie (another port) is not this one's.
        let other_port = headers(&[(header::COOKIE, &format!("memcity_token_9090={TOKEN}"))]);
        refused(access.decide("/", None, &other_port));
        let wrong = headers(&[(header::COOKIE, "memcity_token_8080=0123")]);
        assert!(refused(access.decide("/", None, &wrong))
            .1
            .contains("wrong token"));
        assert!(
            refused(access.decide("/", Some("token=nope"), &HeaderMap::new()))
                .1
                .contains("wrong token")
        );
    }

    #[test]
    fn another_sites_page_is_refused_even_with_the_cookie() {
        let access = Access::new(TOKEN.into(), 8080, false, "add ?token=".into());
        let cookie = format!("memcity_token_8080={TOKEN}");
        let same = headers(&[
            (header::COOKIE, &cookie),
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:8080"),
        ]);
        assert_eq!(access.decide("/stream", None, &same), Decision::Pass);
        let other = headers(&[
            (header::COOKIE, &cookie),
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert!(matches!(
            access.decide("/stream", None, &other),
            Decision::Refuse(StatusCode::FORBIDDEN, _)
        ));
    }
}
