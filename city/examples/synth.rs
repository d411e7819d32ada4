//! Writes a synthetic recording for benchmarks: `synth OUT.mcrec BUILDINGS [SNAPSHOTS
//! [ERROR_PERCENT]]`. Buildings are types spread over packages of 100; a tenth of them grow, the
//! rest drift. With `ERROR_PERCENT`, every snapshot after the first is an estimate and every
//! type is ± that share of its objects (the viewer then draws a band of doubt on each).

use memcity_proto::recording::RecordingWriter;
use memcity_proto::v1::{
    exactness::Source, stream_message::Kind, Exactness, Handshake, Node, RecordingHeader,
    SessionEnd, Snapshot, StreamMessage, StringTable,
};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = args
        .get(1)
        .expect("usage: synth OUT.mcrec BUILDINGS [SNAPSHOTS]");
    let buildings: usize = args.get(2).and_then(|a| a.parse().ok()).expect("BUILDINGS");
    let snapshots: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10);
    let error_percent: Option<u64> = args
        .get(4)
        .map(|a| a.parse().expect("ERROR_PERCENT: a whole number of percent"));
    let packages = buildings.div_ceil(100);
    let header = RecordingHeader {
        handshake: Some(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            classifiers: vec!["package".into(), "type".into()],
            ..Default::default()
        }),
        writer: "synth".into(),
        ..Default::default()
    };
    let mut w = RecordingWriter::create(std::path::Path::new(out), &header)?;
    let mut names = Vec::new();
    for p in 0..packages {
        names.push(format!("com.example.p{p}"));
    }
    for b in 0..buildings {
        names.push(format!("com.example.p{}.Type{b}", b / 100));
    }
    w.write(&StreamMessage {
        kind: Some(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names,
        })),
    })?;
    for seq in 0..snapshots {
        let error = error_percent.filter(|_| seq > 0);
        let mut root = Node {
            estimated: error.is_some(),
            ..Default::default()
        };
        for p in 0..packages {
            let mut package = Node {
                name: p as u32 + 1,
                estimated: error.is_some(),
                ..Default::default()
            };
            for b in (p * 100)..((p + 1) * 100).min(buildings) {
                let base = 50 + (b as u64 * 7919) % 5000;
                let objects = if b % 10 == 0 {
                    base * (seq + 1)
                } else {
                    base + (seq * 13 + b as u64) % 40
                };
                package.children.push(Node {
                    name: (packages + b) as u32 + 1,
                    objects,
                    bytes: objects * 32,
                    estimated: error.is_some(),
                    objects_error: error.map_or(0, |e| objects * e / 100),
                    children: vec![],
                    ..Default::default()
                });
                package.objects += objects;
                package.bytes += objects * 32;
            }
            root.objects += package.objects;
            root.bytes += package.bytes;
            root.children.push(package);
        }
        w.write(&StreamMessage {
            kind: Some(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                classifiers: vec!["package".into(), "type".into()],
                root: Some(root),
                exactness: Some(Exactness {
                    source: if error.is_some() {
                        Source::Estimate
                    } else {
                        Source::Walk
                    } as i32,
                    ..Default::default()
                }),
                ..Default::default()
            })),
        })?;
    }
    // A whole session: readers warn about a recording without its end.
    w.write(&StreamMessage {
        kind: Some(Kind::End(SessionEnd {
            reason: "synthetic".into(),
            snapshots,
        })),
    })?;
    w.finish()?;
    Ok(())
}
