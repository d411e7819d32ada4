//! Writes a session in the Memory Cities JSON format (shared/memory-cities-json.md), so that the
//! original tools open memcity sessions: per snapshot, the tree in both formats AntTracks writes
//! (`anttracks-format`, `default-format`) and the points-to and pointed-from maps. [`load`]
//! reads it back; a round trip gives the same city, group by group (tested below).
//!
//! What the format has no place for stays behind: estimates' errors, the reference graph by
//! field, roots and paths, and the session's JVM details.
//!
//! [`load`]: crate::load

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::model::{CityModel, NodeId, Role, ROOT};

/// The root's key, as AntTracks names it.
const ROOT_KEY: &str = "Overall";

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The classifier folder (`<dir>/<classifiers>`), which `memcity replay` and the original
    /// tools open.
    pub folder: PathBuf,
    pub snapshots: usize,
}

/// Writes `model` below `dir` (created if missing; files of the same names are replaced).
pub fn memory_cities_json(model: &CityModel, dir: &Path) -> std::io::Result<Written> {
    let classifiers = model.level_roles();
    let folder_name: String = classifiers
        .iter()
        .map(|c| c.split_whitespace().collect::<String>())
        .collect();
    let folder = dir.join(if folder_name.is_empty() {
        "Unclassified".to_string()
    } else {
        folder_name
    });
    let anttracks = folder.join("anttracks-format");
    let default = folder.join("default-format");
    for d in [
        &anttracks,
        &default,
        &default.join("points-to-maps"),
        &default.join("pointed-from-maps"),
    ] {
        std::fs::create_dir_all(d)?;
    }
    let ids: HashMap<&str, i64> = classifiers
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i as i64))
        .collect();
    let keys = full_keys(model);
    let mut names_used: HashMap<u64, usize> = HashMap::new();
    for (index, frame) in model.frames().iter().enumerate() {
        // One file per point in time; a time twice gets a suffix (the time inside stays).
        let n = names_used.entry(frame.time_ms).or_default();
        let name = match *n {
            0 => format!("{}.json", frame.time_ms),
            k => format!("{}_{k}.json", frame.time_ms),
        };
        *n += 1;
        let values: HashMap<NodeId, (u64, u64)> = model
            .values(index)
            .iter()
            .map(|&(id, objects, bytes)| (id, (objects, bytes)))
            .collect();
        let tree = json!({
            "classifiers": classifiers
                .iter()
                .enumerate()
                .map(|(i, c)| json!({ "name": c, "id": i }))
                .collect::<Vec<_>>(),
            "time": frame.time_ms,
            "root": anttracks_node(model, ROOT, &values, &keys, &ids),
        });
        write(&anttracks.join(&name), &tree)?;
        let tree = json!({
            "time": frame.time_ms,
            "root": default_node(model, ROOT, &values, &keys),
        });
        write(&default.join(&name), &tree)?;
        let (points_to, pointed_from) = pointer_maps(model, index, &keys);
        write(
            &default.join("points-to-maps").join(&name),
            &json!({ "time": frame.time_ms, "pointerMap": points_to }),
        )?;
        write(
            &default.join("pointed-from-maps").join(&name),
            &json!({ "time": frame.time_ms, "pointerMap": pointed_from }),
        )?;
    }
    Ok(Written {
        folder,
        snapshots: model.len(),
    })
}

/// Each node's full key, from the root's down.
fn full_keys(model: &CityModel) -> Vec<Vec<String>> {
    let mut keys: Vec<Vec<String>> = Vec::with_capacity(model.nodes().len());
    for (id, node) in model.nodes().iter().enumerate() {
        let key = match node.parent {
            None => vec![ROOT_KEY.to_string()],
            Some(parent) => {
                let mut key = keys[parent as usize].clone();
                key.push(node.name.clone());
                key
            }
        };
        debug_assert_eq!(keys.len(), id, "parents come before their children");
        keys.push(key);
    }
    keys
}

/// A node and the children present at this snapshot, in the anttracks format.
fn anttracks_node(
    model: &CityModel,
    id: NodeId,
    values: &HashMap<NodeId, (u64, u64)>,
    keys: &[Vec<String>],
    classifier_ids: &HashMap<&str, i64>,
) -> Value {
    let node = model.node(id);
    let (objects, bytes) = values.get(&id).copied().unwrap_or_default();
    let key = &keys[id as usize];
    let mut out = Map::new();
    out.insert("key".into(), json!(key.last().expect("a key")));
    out.insert("fullKey".into(), json!(key));
    out.insert("fullKeyAsString".into(), json!(key.join("#")));
    let classifier = if id == ROOT || node.role == Role::Unclassified {
        -1
    } else {
        classifier_ids.get(node.role.label()).copied().unwrap_or(-1)
    };
    out.insert("classifierId".into(), json!(classifier));
    out.insert("objects".into(), json!(objects));
    out.insert("bytes".into(), json!(bytes));
    out.insert("transitiveClosureSize".into(), json!(-1));
    out.insert("retainedSize".into(), json!(-1));
    let children: Vec<Value> = node
        .children
        .iter()
        .filter(|c| values.contains_key(c))
        .map(|&c| anttracks_node(model, c, values, keys, classifier_ids))
        .collect();
    if !children.is_empty() {
        out.insert("children".into(), Value::Array(children));
    }
    Value::Object(out)
}

/// The same in the default format.
fn default_node(
    model: &CityModel,
    id: NodeId,
    values: &HashMap<NodeId, (u64, u64)>,
    keys: &[Vec<String>],
) -> Value {
    let node = model.node(id);
    let (objects, bytes) = values.get(&id).copied().unwrap_or_default();
    let key = &keys[id as usize];
    let children: Vec<Value> = node
        .children
        .iter()
        .filter(|c| values.contains_key(c))
        .map(|&c| default_node(model, c, values, keys))
        .collect();
    json!({
        "key": key.join("#"),
        "name": key.last().expect("a key"),
        "role": if id == ROOT { "" } else { node.role.label() },
        "objects": objects,
        "bytes": bytes,
        "children": children,
    })
}

type PointerMap = BTreeMap<String, BTreeMap<String, u64>>;

/// Points-to (A -> B: distinct objects of B that A's objects reference, which memcity bounds by
/// its reference count) and pointed-from (B <- A: distinct objects of A referencing B), keyed by
/// the full keys of the groups the references name (types).
fn pointer_maps(
    model: &CityModel,
    index: usize,
    keys: &[Vec<String>],
) -> (Option<PointerMap>, Option<PointerMap>) {
    let frame = &model.frames()[index];
    if frame.references.is_empty() {
        return (None, None);
    }
    let key = |name: &str| model.node_named(name).map(|id| keys[id as usize].join("#"));
    let mut points_to = PointerMap::new();
    let mut pointed_from = PointerMap::new();
    for r in &frame.references {
        let (Some(from), Some(to)) = (key(&r.from), key(&r.to)) else {
            continue;
        };
        points_to
            .entry(from.clone())
            .or_default()
            .insert(to.clone(), r.references);
        pointed_from
            .entry(to)
            .or_default()
            .insert(from, r.referrers);
    }
    (Some(points_to), Some(pointed_from))
}

fn write(path: &Path, value: &Value) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer(&mut out, value)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;
    use crate::model::Metric;

    fn golden() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto/tests/data/golden-v1.mcrec")
    }

    /// Recording -> export -> import: the same city, group by group, snapshot by snapshot, and
    /// the same references.
    #[test]
    fn a_recording_exported_and_imported_is_the_same_city() {
        let original = load::recording(&golden()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = memory_cities_json(&original, dir.path()).unwrap();
        assert_eq!(written.snapshots, original.len());
        assert!(written.folder.join("anttracks-format").is_dir());
        let imported = load::memory_cities_json(dir.path()).unwrap();
        assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
        assert_eq!(imported.len(), original.len());
        let mut compared = 0;
        for index in 0..original.len() {
            assert_eq!(
                imported.frames()[index].time_ms,
                original.frames()[index].time_ms
            );
            for &(id, objects, bytes) in original.values(index) {
                let path = original.path(id);
                let there = imported
                    .find(&path)
                    .unwrap_or_else(|| panic!("{path:?} is missing after the round trip"));
                assert_eq!(
                    imported.value(there, index, Metric::Objects),
                    objects,
                    "{path:?} at {index}"
                );
                assert_eq!(imported.value(there, index, Metric::Bytes), bytes);
                assert_eq!(
                    imported.node(there).role,
                    original.node(id).role,
                    "{path:?}"
                );
                compared += 1;
            }
            let mut want = original.frames()[index].references.clone();
            let mut got = imported.frames()[index].references.clone();
            let order = |r: &crate::model::Reference| (r.from.clone(), r.to.clone());
            want.sort_by_key(order);
            got.sort_by_key(order);
            assert_eq!(got, want, "references at {index}");
        }
        assert!(compared > 100, "only {compared} groups compared");
        // No group appears from nowhere.
        let groups = |m: &CityModel| (0..m.len()).map(|i| m.values(i).len()).sum::<usize>();
        assert_eq!(groups(&imported), groups(&original));
    }

    #[test]
    fn the_files_are_laid_out_as_anttracks_writes_them() {
        let original = load::recording(&golden()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = memory_cities_json(&original, dir.path()).unwrap();
        let time = original.frames()[0].time_ms;
        for sub in [
            "anttracks-format",
            "default-format",
            "default-format/points-to-maps",
            "default-format/pointed-from-maps",
        ] {
            let file = written.folder.join(sub).join(format!("{time}.json"));
            assert!(file.is_file(), "{}", file.display());
        }
        let tree: Value = serde_json::from_str(
            &std::fs::read_to_string(written.folder.join(format!("anttracks-format/{time}.json")))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(tree["root"]["fullKeyAsString"], "Overall");
        assert_eq!(tree["root"]["classifierId"], -1);
        let child = &tree["root"]["children"][0];
        assert_eq!(
            child["fullKeyAsString"].as_str().unwrap(),
            child["fullKey"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("#")
        );
    }
}
