//! memcity's wire protocol and recording format.
//!
//! The gRPC messages are generated from `proto/memcity/v1/memcity.proto`; [`recording`] writes and
//! reads the same messages as a file, and [`strings`] holds the string table both ends share.
//! [`pprof`] is pprof's profile format, which `memcity export --pprof` writes.

pub mod arriving;
#[cfg(unix)]
pub mod capped;
pub mod command;
#[cfg(unix)]
pub mod files;
pub mod frames;
pub mod options;
pub mod recording;
#[cfg(unix)]
pub mod registry;
pub mod sampled;
pub mod sites;
pub mod strings;
pub mod thinning;

/// Generated protobuf messages and tonic client/server for package `memcity.v1`.
pub mod v1 {
    #![allow(clippy::all)] // generated code: lints are the generator's business, not ours
    include!(concat!(env!("OUT_DIR"), "/memcity.v1.rs"));
}

/// pprof's profile messages (package `perftools.profiles`, from `proto/perftools/profiles/
/// profile.proto`): a live heap as a profile that `go tool pprof` and Pyroscope read. Messages
/// only, so they build without the `grpc` feature and for wasm32.
pub mod pprof {
    #![allow(clippy::all)] // generated code: lints are the generator's business, not ours
    include!(concat!(env!("OUT_DIR"), "/perftools.profiles.rs"));
}

/// Bumped on any incompatible change to the stream's meaning. Sent in the handshake; a peer that
/// sees another version says which side to upgrade.
pub const PROTOCOL_VERSION: u32 = 1;

/// The commit memcity was built from (see `build.rs`).
pub const COMMIT: &str = env!("MEMCITY_COMMIT");

/// What a memcity binary is: `0.1.0 (commit 1a2b3c4d5e6f, memcity protocol 1)`, for
/// `--version` and the agent's first line. `package_version`: the caller's
/// `CARGO_PKG_VERSION`.
pub fn version_line(package_version: &str) -> String {
    format!("{package_version} (commit {COMMIT}, memcity protocol {PROTOCOL_VERSION})")
}

/// The agent's default gRPC address; `memcity record` and `memcity view` connect here when given
/// no address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7788";

/// Largest message either end accepts. tonic's default is 4 MiB; a snapshot of a heap with tens of
/// thousands of types and sites can exceed that, so both ends raise it to this, deliberately.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Explains a protocol version mismatch in words that say what to upgrade.
pub fn version_mismatch_hint(peer_version: u32) -> Option<String> {
    use std::cmp::Ordering;
    match peer_version.cmp(&PROTOCOL_VERSION) {
        Ordering::Equal => None,
        Ordering::Greater => Some(format!(
            "the agent speaks memcity protocol {peer_version}, this memcity only {PROTOCOL_VERSION}: upgrade the memcity viewer"
        )),
        Ordering::Less => Some(format!(
            "the agent speaks memcity protocol {peer_version}, this memcity needs {PROTOCOL_VERSION}: upgrade the agent (libmemcity.so)"
        )),
    }
}
