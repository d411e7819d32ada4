//! Benchmark of `memcity export --pprof` (run by scripts/bench-pprof.sh in release mode): the size
//! of one pprof profile of a heap with 10,000 allocation sites, and the time to build and to
//! encode it. Prints medians; asserts nothing beyond the shape (this machine is shared and
//! noisy).
//!
//! The heap: 1,000 types in 100 packages, 10 sites each, grouped by package, type and site, as
//! the agent sends it. Sites are named as the agent names them: half an application frame alone,
//! half a library frame above the first application frame (`site_frames=1`, the default), or,
//! for the deep variant, 8 frames each (`site_frames=8`). Application methods repeat across
//! sites (500 classes of 7 methods), as real call sites share their callers.

use std::time::{Duration, Instant};

use memcity_city::model::CityModel;
use memcity_city::pprof::{encode_gzipped, heap_profile};
use memcity_proto::v1::{
    exactness::Source, stream_message::Kind, Exactness, Handshake, Node, Snapshot, StreamMessage,
    StringTable,
};
use prost::Message;

const TYPES: usize = 1_000;
const SITES_PER_TYPE: usize = 10;
const RUNS: usize = 9;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// An application frame, `com.example.pP.ClassC.methodM(ClassC.java:L)`, numbered by `n`.
fn app_frame(n: usize) -> String {
    let class = n % 500;
    format!(
        "com.example.p{}.Class{class}.method{}(Class{class}.java:{})",
        class / 10,
        n % 7,
        10 + n % 300
    )
}

/// A JDK frame from a pool of 40, numbered by `n`.
fn library_frame(n: usize) -> String {
    let class = n % 40;
    format!(
        "java.util.Lib{class}.op{}(Lib{class}.java:{})",
        n % 3,
        100 + n % 50
    )
}

/// The name of site `s`: with `deep`, 8 frames; else one frame, or a library frame above the
/// first application frame.
fn site_name(s: usize, deep: bool) -> String {
    if deep {
        (0..8)
            .map(|d| {
                if d < 3 {
                    library_frame(s * 3 + d)
                } else {
                    app_frame(s * 5 + d)
                }
            })
            .collect::<Vec<_>>()
            .join(" <- ")
    } else if s.is_multiple_of(2) {
        app_frame(s)
    } else {
        format!("{} <- ... <- {}", library_frame(s), app_frame(s))
    }
}

/// A session of two snapshots (a walk, then an estimate 10 s later in which every site grew),
/// with the agent's handshake.
fn session(deep: bool) -> CityModel {
    let msg = |kind| StreamMessage { kind: Some(kind) };
    let mut names = Vec::new();
    let packages = TYPES / 10;
    for p in 0..packages {
        names.push(format!("com.example.p{p}"));
    }
    for t in 0..TYPES {
        names.push(format!("com.example.p{}.Type{t}", t / 10));
    }
    for s in 0..TYPES * SITES_PER_TYPE {
        names.push(site_name(s, deep));
    }
    let mut m = CityModel::new();
    m.apply(&msg(Kind::Handshake(Handshake {
        protocol_version: memcity_proto::PROTOCOL_VERSION,
        classifiers: vec!["package".into(), "type".into(), "site".into()],
        sampling_interval: 512 * 1024,
        start_time_unix_ms: 1_700_000_000_000,
        ..Default::default()
    })))
    .unwrap();
    m.apply(&msg(Kind::Strings(StringTable {
        sites: Vec::new(),
        first_id: 1,
        names,
    })))
    .unwrap();
    for seq in 0..2u64 {
        let mut root = Node::default();
        for p in 0..packages {
            let mut package = Node {
                name: p as u32 + 1,
                ..Default::default()
            };
            for t in p * 10..(p + 1) * 10 {
                let mut ty = Node {
                    name: (packages + t) as u32 + 1,
                    ..Default::default()
                };
                for s in t * SITES_PER_TYPE..(t + 1) * SITES_PER_TYPE {
                    let objects = (1 + (s as u64 * 7919) % 50_000) * (1 + seq);
                    ty.children.push(Node {
                        name: (packages + TYPES + s) as u32 + 1,
                        objects,
                        bytes: objects * 40,
                        estimated: true,
                        objects_error: objects / 10,
                        bytes_error: objects * 4,
                        ..Default::default()
                    });
                    ty.objects += objects;
                    ty.bytes += objects * 40;
                }
                package.objects += ty.objects;
                package.bytes += ty.bytes;
                package.children.push(ty);
            }
            root.objects += package.objects;
            root.bytes += package.bytes;
            root.children.push(package);
        }
        m.apply(&msg(Kind::Snapshot(Snapshot {
            seq,
            time_ms: seq * 10_000,
            root: Some(root),
            exactness: Some(Exactness {
                source: if seq == 0 {
                    Source::Walk
                } else {
                    Source::Estimate
                } as i32,
                ..Default::default()
            }),
            ..Default::default()
        })))
        .unwrap();
    }
    m
}

fn main() {
    for (deep, label) in [(false, "site_frames=1"), (true, "site_frames=8")] {
        let model = session(deep);
        let timed = |since: Option<usize>| {
            let mut build = Vec::new();
            let mut encode = Vec::new();
            let mut out = None;
            for _ in 0..RUNS {
                let t = Instant::now();
                let built = heap_profile(&model, 1, since).unwrap();
                build.push(t.elapsed());
                let t = Instant::now();
                let gz = encode_gzipped(&built.profile);
                encode.push(t.elapsed());
                out = Some((built, gz));
            }
            let (built, gz) = out.unwrap();
            assert_eq!(built.profile.sample.len(), TYPES * SITES_PER_TYPE);
            (median(build), median(encode), built, gz)
        };
        let (build, encode, built, gz) = timed(None);
        let p = &built.profile;
        println!(
            "{label}: one snapshot, {} samples ({} stacks, {} locations, {} functions, {} strings): \
             {} bytes encoded, {} gzipped; build median {:.1} ms, encode + gzip {:.1} ms",
            p.sample.len(),
            built.stacks,
            p.location.len(),
            p.function.len(),
            p.string_table.len(),
            p.encoded_len(),
            gz.len(),
            build.as_secs_f64() * 1e3,
            encode.as_secs_f64() * 1e3
        );
        let (build, encode, built, gz) = timed(Some(0));
        println!(
            "{label}: growth between two snapshots, {} samples: {} bytes encoded, {} gzipped; \
             build median {:.1} ms, encode + gzip {:.1} ms",
            built.profile.sample.len(),
            built.profile.encoded_len(),
            gz.len(),
            build.as_secs_f64() * 1e3,
            encode.as_secs_f64() * 1e3
        );
    }
}
