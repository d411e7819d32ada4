//! A synthetic session for the metrics' tests and `examples/bench_metrics.rs`.

use memcity_proto::v1::{snapshot::Trigger, Handshake, Node, Snapshot, StringTable};
use memcity_proto::v1::{stream_message::Kind, StreamMessage, WalkCost};

/// A synthetic session for tests and `examples/bench_metrics.rs`: `packages` x `types` types
/// (`p3.T7`), the types of package 0 growing by `rise` objects a snapshot, one snapshot every
/// `every_ms`.
pub struct Session {
    pub packages: u32,
    pub types: u32,
    pub rise: u64,
    pub every_ms: u64,
}

impl Session {
    pub fn messages(&self, snapshots: u64) -> Vec<StreamMessage> {
        let mut names = Vec::new();
        for p in 0..self.packages {
            names.push(format!("p{p}"));
            for t in 0..self.types {
                names.push(format!("p{p}.T{t}"));
            }
        }
        let mut out = vec![
            StreamMessage {
                kind: Some(Kind::Handshake(Handshake {
                    protocol_version: memcity_proto::PROTOCOL_VERSION,
                    classifiers: vec!["package".into(), "type".into()],
                    pid: 42,
                    ..Default::default()
                })),
            },
            StreamMessage {
                kind: Some(Kind::Strings(StringTable {
                    sites: Vec::new(),
                    first_id: 1,
                    names,
                })),
            },
        ];
        for seq in 0..snapshots {
            let mut packages = Vec::new();
            let mut id = 1;
            for p in 0..self.packages {
                let package = id;
                id += 1;
                let mut children = Vec::new();
                for _ in 0..self.types {
                    let objects = 100 + if p == 0 { self.rise * seq } else { 0 };
                    children.push(Node {
                        name: id,
                        objects,
                        bytes: objects * 24,
                        ..Default::default()
                    });
                    id += 1;
                }
                packages.push(Node {
                    name: package,
                    objects: children.iter().map(|c| c.objects).sum(),
                    bytes: children.iter().map(|c| c.bytes).sum(),
                    children,
                    ..Default::default()
                });
            }
            out.push(StreamMessage {
                kind: Some(Kind::Snapshot(Snapshot {
                    seq,
                    time_ms: seq * self.every_ms,
                    trigger: Trigger::Gc as i32,
                    root: Some(Node {
                        objects: packages.iter().map(|c| c.objects).sum(),
                        bytes: packages.iter().map(|c| c.bytes).sum(),
                        children: packages,
                        ..Default::default()
                    }),
                    cost: Some(WalkCost {
                        total_pause_ns: 2_000_000_000,
                        refused_walks: 1,
                        ..Default::default()
                    }),
                    ..Default::default()
                })),
            });
        }
        out
    }
}
