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
pub mod names;
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

/// Where a client of this library given no address connects: the conventional fixed port, for an
/// agent started with `port=7788`. (The `memcity` commands given no address find the local agent
/// in the registry instead, since agents listen on free ports by default.)
pub const DEFAULT_ADDR: &str = "127.0.0.1:7788";

/// Largest message either end accepts. tonic's default is 4 MiB; a snapshot of a heap with tens of
/// thousands of types and sites can exceed that, so both ends raise it to this, deliberately.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The other end of a version check.
#[derive(Debug, Clone, Copy)]
pub enum Peer<'a> {
    /// An agent, or the recording of one, by its handshake: its protocol and `agent_version`.
    Agent { protocol: u32, version: &'a str },
    /// A viewer, by its request: its protocol and its `client` text (`memcity-record 0.1.0`).
    Viewer { protocol: u32, client: &'a str },
}

/// Explains a protocol version mismatch with `peer` in words that name both ends' versions and
/// say which to upgrade; `None` when both speak this protocol.
pub fn version_mismatch_hint(peer: Peer<'_>) -> Option<String> {
    use std::cmp::Ordering;
    let ours = env!("CARGO_PKG_VERSION");
    let protocol = match peer {
        Peer::Agent { protocol, .. } | Peer::Viewer { protocol, .. } => protocol,
    };
    let newer = match protocol.cmp(&PROTOCOL_VERSION) {
        Ordering::Equal => return None,
        Ordering::Greater => true,
        Ordering::Less => false,
    };
    Some(match peer {
        Peer::Agent { version, .. } => {
            let theirs = if version.is_empty() {
                format!("a memcity of protocol {protocol}")
            } else {
                format!("memcity {version} (protocol {protocol})")
            };
            if newer {
                format!("the agent is {theirs}; this memcity {ours} speaks protocol {PROTOCOL_VERSION}: upgrade this memcity to the agent's version")
            } else {
                format!("the agent is {theirs}; this memcity {ours} needs protocol {PROTOCOL_VERSION}: upgrade the agent (libmemcity.so) to memcity {ours}, or watch it with a memcity of its version")
            }
        }
        Peer::Viewer { client, .. } => {
            let theirs = if client.is_empty() {
                format!("the viewer speaks protocol {protocol}")
            } else {
                format!("the viewer ({client}) speaks protocol {protocol}")
            };
            if newer {
                format!("this agent is memcity {ours} (protocol {PROTOCOL_VERSION}); {theirs}: upgrade the agent (libmemcity.so) to the viewer's version, or connect with memcity {ours}")
            } else {
                format!("this agent is memcity {ours} (protocol {PROTOCOL_VERSION}); {theirs}: upgrade the viewer to memcity {ours}")
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each end's version named, and the right one to upgrade, from either side.
    #[test]
    fn a_version_mismatch_says_which_end_to_upgrade() {
        let ours = env!("CARGO_PKG_VERSION");
        let same = Peer::Agent {
            protocol: PROTOCOL_VERSION,
            version: "9.9.9",
        };
        assert_eq!(version_mismatch_hint(same), None);
        let newer_agent = version_mismatch_hint(Peer::Agent {
            protocol: PROTOCOL_VERSION + 1,
            version: "0.2.0",
        })
        .unwrap();
        assert!(newer_agent.starts_with(&format!(
            "the agent is memcity 0.2.0 (protocol {}); this memcity {ours} speaks protocol {PROTOCOL_VERSION}: upgrade this memcity",
            PROTOCOL_VERSION + 1
        )), "{newer_agent}");
        let older_agent = version_mismatch_hint(Peer::Agent {
            protocol: PROTOCOL_VERSION.saturating_sub(1),
            version: "",
        })
        .unwrap();
        assert!(
            older_agent.contains("upgrade the agent (libmemcity.so) to memcity"),
            "{older_agent}"
        );
        let newer_viewer = version_mismatch_hint(Peer::Viewer {
            protocol: PROTOCOL_VERSION + 1,
            client: "memcity-record 0.2.0",
        })
        .unwrap();
        assert!(
            newer_viewer.contains("the viewer (memcity-record 0.2.0) speaks protocol")
                && newer_viewer.contains("upgrade the agent (libmemcity.so)"),
            "{newer_viewer}"
        );
        let older_viewer = version_mismatch_hint(Peer::Viewer {
            protocol: PROTOCOL_VERSION.saturating_sub(1),
            client: "",
        })
        .unwrap();
        assert!(
            older_viewer.ends_with(&format!("upgrade the viewer to memcity {ours}")),
            "{older_viewer}"
        );
    }
}
