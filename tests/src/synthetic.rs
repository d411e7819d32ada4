//! Recordings written for tests that need what no agent gives on demand (the agent's side is
//! tested against real JVMs elsewhere).

use std::path::Path;

use memcity_proto::recording::RecordingWriter;
use memcity_proto::v1::{
    stream_message::Kind, Death, Handshake, Lifetimes, Moment, Node, RecordingHeader, SessionEnd,
    Snapshot, StreamMessage, StringTable, Survivors,
};

/// Snapshots in [`lifetimes_recording`], one a second, two GCs apart.
pub const LIFETIMES_SNAPSHOTS: u64 = 5;

/// The classifier chain of the synthetic sessions.
pub fn package_and_type() -> Vec<String> {
    vec!["package".to_string(), "type".to_string()]
}

/// A recording's header for a synthetic session of `package_and_type`, written by `writer`.
pub fn header(writer: &str) -> RecordingHeader {
    RecordingHeader {
        handshake: Some(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            classifiers: package_and_type(),
            ..Default::default()
        }),
        writer: writer.into(),
        ..Default::default()
    }
}

/// Writes a session of [`LIFETIMES_SNAPSHOTS`] snapshots (package `app`, types `app.Cache` and
/// `app.Session`) whose every snapshot after the first books the same deaths:
///
/// | allocation site (context) | last holder | objects | age in GCs | allocated meanwhile |
/// |---|---|---|---|---|
/// | `app.Loader.load` (`app.Loader`) | `app.Cache` | 400 | 2 | 16 MiB |
/// | `ArrayList.grow <- ... <- app.Cache.put` (`app.Cache`) | `app.Cache` | 300 | 0 | 1 MiB |
/// | the same | none seen | 100 | 0 | 1 MiB |
/// | `app.Worker.run` (`app.Worker`) | `app.Session` | 200 | 1 | 4 MiB |
/// | the same | none seen | 50 | 0 | 1 MiB |
///
/// and whose survivors are 10, 20 and 30 objects of `app.Loader.load` at 0, 1 and 2-3 GCs, and
/// 5 of `app.Worker.run` at 0.
pub fn lifetimes_recording(path: &Path) -> std::io::Result<()> {
    let classifiers = package_and_type();
    let mut w = RecordingWriter::create(path, &header("memcity-e2e lifetimes"))?;
    let names = [
        "app",
        "app.Cache",
        "app.Session",
        "app.Loader.load(Loader.java:9)",
        "java.util.ArrayList.grow(ArrayList.java:237) <- ... <- app.Cache.put(Cache.java:20)",
        "app.Worker.run(Worker.java:5)",
        "byte[]",
    ];
    w.write(&StreamMessage {
        kind: Some(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names: names.iter().map(|n| n.to_string()).collect(),
        })),
    })?;
    for seq in 0..LIFETIMES_SNAPSHOTS {
        // GCs counted from 10, so that a death's birth (GCs survived, plus the GC that freed it,
        // before it) is never before the first.
        let (time_ms, gc, allocated) = (seq * 1000, 10 + seq * 2, seq * 64 * MIB);
        let deaths = if seq == 0 {
            Vec::new()
        } else {
            booked_deaths(time_ms, gc, allocated)
        };
        let survivors = |site, by_gc_age: &[f64]| Survivors {
            r#type: 7,
            site,
            by_gc_age: by_gc_age.to_vec(),
        };
        let leaf = |name, objects: u64| Node {
            name,
            objects,
            bytes: objects * 24,
            ..Default::default()
        };
        let package = Node {
            name: 1,
            objects: 150,
            bytes: 150 * 24,
            children: vec![leaf(2, 100), leaf(3, 50)],
            ..Default::default()
        };
        w.write(&StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms,
                gc_count: gc,
                classifiers: classifiers.clone(),
                root: Some(Node {
                    objects: 150,
                    bytes: 150 * 24,
                    children: vec![package],
                    ..Default::default()
                }),
                lifetimes: Some(Lifetimes {
                    deaths_booked: deaths.len() as u64,
                    deaths,
                    alive: vec![survivors(4, &[10.0, 20.0, 30.0]), survivors(6, &[5.0])],
                    allocated_bytes: allocated,
                }),
                ..Default::default()
            })),
        })?;
    }
    w.write(&StreamMessage {
        kind: Some(Kind::End(SessionEnd {
            reason: "synthetic".into(),
            snapshots: LIFETIMES_SNAPSHOTS,
        })),
    })?;
    w.finish()?;
    Ok(())
}

const MIB: u64 = 1 << 20;

/// The deaths each snapshot of [`lifetimes_recording`] after the first books (its table), at
/// `time_ms`, GC `gc` and `allocated` bytes.
fn booked_deaths(time_ms: u64, gc: u64, allocated: u64) -> Vec<Death> {
    let death = |site, holder_type, weight, gcs: u64, bytes: u64| Death {
        r#type: 7,
        site,
        weight,
        size: 24,
        born: Some(Moment {
            time_ms: time_ms.saturating_sub(500),
            gc: gc - gcs - 1,
            allocated_bytes: allocated - bytes,
        }),
        died: Some(Moment {
            time_ms,
            gc,
            allocated_bytes: allocated,
        }),
        holder_type,
        ..Default::default()
    };
    vec![
        death(4, 2, 400.0, 2, 16 * MIB),
        death(5, 2, 300.0, 0, MIB),
        death(5, 0, 100.0, 0, MIB),
        death(6, 3, 200.0, 1, 4 * MIB),
        death(6, 0, 50.0, 0, MIB),
    ]
}

/// Writes a session of `snapshots` snapshots a second apart, each a walk, of package `app` with
/// `types` types: `app.Leak` rising by 10 objects a second, the others steady (`app.T0`,
/// `app.T1`, ...). Long enough, with a small `memcity --memory`, to be thinned.
pub fn long_recording(path: &Path, snapshots: u64, types: u32) -> std::io::Result<()> {
    let mut w = RecordingWriter::create(path, &header("memcity-e2e long"))?;
    let mut names = vec!["app".to_string(), "app.Leak".to_string()];
    names.extend((0..types).map(|t| format!("app.T{t}")));
    w.write(&StreamMessage {
        kind: Some(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names,
        })),
    })?;
    for seq in 0..snapshots {
        let leaf = |name, objects: u64| Node {
            name,
            objects,
            bytes: objects * 24,
            ..Default::default()
        };
        let mut children = vec![leaf(2, 1_000 + 10 * seq)];
        children.extend((0..types).map(|t| leaf(3 + t, 500 + u64::from(t))));
        let objects: u64 = children.iter().map(|c| c.objects).sum();
        let package = Node {
            name: 1,
            objects,
            bytes: objects * 24,
            children,
            ..Default::default()
        };
        w.write(&StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                gc_count: seq,
                trigger: memcity_proto::v1::snapshot::Trigger::Gc as i32,
                classifiers: package_and_type(),
                root: Some(Node {
                    objects,
                    bytes: objects * 24,
                    children: vec![package],
                    ..Default::default()
                }),
                ..Default::default()
            })),
        })?;
    }
    w.write(&StreamMessage {
        kind: Some(Kind::End(SessionEnd {
            reason: "the synthetic session ended".into(),
            snapshots,
        })),
    })?;
    w.finish().map(drop)
}

/// The types memcity's own objects and the application's share, in [`own_and_app_recording`]:
/// the application's under their packages, memcity's under its top-level `(memcity)` group.
pub const SHARED_TYPES: [&str; 2] = ["java.lang.String", "byte[]"];

/// Writes a session of three snapshots, a second apart, each a walk, where the application and
/// memcity hold objects of the same types (`java.lang.String` under `java.lang`, `byte[]` under
/// `(primitive arrays)`, both again under `(memcity)`), all four the city's tallest buildings
/// among a package of smaller types: what a user sees of an application beside memcity's own
/// JFR stream.
pub fn own_and_app_recording(path: &Path) -> std::io::Result<()> {
    const OTHERS: u32 = 24;
    let mut w = RecordingWriter::create(path, &header("memcity-e2e own and app"))?;
    let mut names: Vec<String> = [
        "java.lang",
        SHARED_TYPES[0],
        "(primitive arrays)",
        SHARED_TYPES[1],
        "(memcity)",
        "java.util",
    ]
    .map(String::from)
    .to_vec();
    names.extend((0..OTHERS).map(|t| format!("java.util.T{t}")));
    w.write(&StreamMessage {
        kind: Some(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names,
        })),
    })?;
    let snapshots = 3;
    for seq in 0..snapshots {
        let node = |name, children: Vec<Node>| {
            let objects = children.iter().map(|c: &Node| c.objects).sum();
            Node {
                name,
                objects,
                bytes: objects * 24,
                children,
                ..Default::default()
            }
        };
        let leaf = |name, objects: u64| Node {
            name,
            objects,
            bytes: objects * 24,
            ..Default::default()
        };
        let grown = |objects: u64| objects + seq * objects / 10;
        let others = (0..OTHERS).map(|t| leaf(7 + t, 800 + 10 * u64::from(t)));
        let top = vec![
            node(1, vec![leaf(2, grown(4_000))]),
            node(3, vec![leaf(4, grown(3_400))]),
            node(5, vec![leaf(2, 3_000), leaf(4, 2_600)]),
            node(6, others.collect()),
        ];
        w.write(&StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                gc_count: seq,
                trigger: memcity_proto::v1::snapshot::Trigger::Gc as i32,
                classifiers: package_and_type(),
                root: Some(node(0, top)),
                ..Default::default()
            })),
        })?;
    }
    w.write(&StreamMessage {
        kind: Some(Kind::End(SessionEnd {
            reason: "the synthetic session ended".into(),
            snapshots,
        })),
    })?;
    w.finish().map(drop)
}
