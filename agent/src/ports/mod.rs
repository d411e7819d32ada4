//! Where the session stream leaves the agent: the hub that fans it out (`hub.rs`), the gRPC
//! server (`server.rs`), the page (`page.rs`), Prometheus metrics (`metrics/`) and the
//! Pyroscope push (`pyroscope.rs`).

pub(crate) mod error;
pub(crate) mod hub;
pub mod metrics;
pub(crate) mod page;
pub(crate) mod pyroscope;
pub(crate) mod server;
