//! What the fuzz targets (`fuzz/`) run, here so the same code runs on stable too: the unit test
//! below replays the committed corpus and every crash the fuzzer ever found
//! (`fuzz/regressions/`) through it. Each function takes arbitrary bytes and must neither panic
//! nor hang; errors are fine, they are what bad input should get.

use std::path::Path;

use memcity_proto::recording::RecordingReader;
use memcity_proto::v1::StreamMessage;
use prost::Message;

use crate::layout::{layout, LayoutConfig};
use crate::model::{CityModel, Metric};

/// Everything a reader does with a recording: open, read every message into a model, then what
/// the report and the city compute from it.
pub fn recording_bytes(data: &[u8]) {
    let Ok(mut reader) = RecordingReader::new(data, Path::new("fuzz.mcrec")) else {
        return;
    };
    let mut model = CityModel::new();
    while let Ok(Some(message)) = reader.next_message() {
        if model.apply(&message).is_err() {
            break;
        }
    }
    let _ = reader.damage_summary();
    exercise(&model);
    // The page reads a recording as it arrives: in pieces it must read what the file gives.
    let piece = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let mut arriving = crate::load::Arriving::new(Path::new("fuzz.mcrec"));
    let pushed = data
        .chunks(piece)
        .try_for_each(|chunk| arriving.push(chunk));
    if let (Ok(()), Ok(whole)) = (pushed, arriving.finish()) {
        let file = crate::load::recording_bytes(data, Path::new("fuzz.mcrec"));
        let file = file.expect("what arrived in pieces loads whole");
        assert_eq!(whole.len(), file.len(), "in {piece}-byte pieces");
        assert_eq!(whole.warnings, file.warnings, "in {piece}-byte pieces");
    }
}

/// A live stream: protobuf messages, each after its length (u16, little-endian), applied in
/// order.
pub fn stream_bytes(data: &[u8]) {
    let mut model = CityModel::new();
    let mut rest = data;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let (chunk, tail) = rest[2..].split_at(len);
        rest = tail;
        if let Ok(message) = StreamMessage::decode(chunk) {
            if model.apply(&message).is_err() {
                return;
            }
        }
    }
    exercise(&model);
}

/// A heap dump (plain or gzip-compressed) read into a session, then what the report and the
/// city compute from it.
pub fn dump_bytes(data: &[u8]) {
    let Ok(messages) = memcity_dump::session_bytes("fuzz.hprof", data) else {
        return;
    };
    let mut model = CityModel::new();
    for message in &messages {
        if model.apply(message).is_err() {
            return;
        }
    }
    exercise(&model);
}

/// A Memory Cities export of one tree file holding `data`.
pub fn json_bytes(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let trees = dir.path().join("Fuzz").join("anttracks-format");
    if std::fs::create_dir_all(&trees).is_err()
        || std::fs::write(trees.join("1.json"), data).is_err()
    {
        return;
    }
    if let Ok(model) = crate::load::memory_cities_json(dir.path()) {
        exercise(&model);
    }
}

fn exercise(model: &CityModel) {
    let _ = crate::leak::suspects::suspects(model);
    let _ = model.top_growers(Metric::Objects, 10);
    let config = LayoutConfig::default();
    let city = layout(model, &config);
    let last = model.len().saturating_sub(1) as f64;
    let _ = crate::scene::build(
        model,
        &city,
        last,
        &crate::scene::ViewSettings::default(),
        None,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzz corpus and every input that once crashed a target: none may panic now.
    #[test]
    fn the_corpus_and_past_crashes_pass() {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut replayed = 0;
        for (target, run) in [
            ("recording", recording_bytes as fn(&[u8])),
            ("stream", stream_bytes),
            ("json", json_bytes),
            ("dump", dump_bytes),
        ] {
            for dir in ["corpus", "regressions"] {
                let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let data = std::fs::read(entry.path()).unwrap();
                    run(&data);
                    replayed += 1;
                }
            }
        }
        assert!(
            replayed >= 4,
            "the committed corpus is missing ({replayed} inputs)"
        );
    }
}
