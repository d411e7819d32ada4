//! The house: no two modules of a crate import each other, however far round (issue 33). A
//! circle makes each of its modules need the others to be read, tested or moved; the layers
//! (the JVMTI layer, sampling, the census, the search, the worker, the ports; the model, the
//! leak analysis, the views) stay layers only while nothing below imports what stands above.
//!
//! A module imports another where its code (tests left out) names `crate::` followed by the
//! other's path. The crate's root (`lib.rs`, `main.rs`) is its face, which declares every
//! module and hands names on: it is left out, as are a folder's own modules naming each other
//! through `super::` (a struct's `impl` blocks in files of their own).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use memcity_e2e::root;

/// Every `.rs` file under `src` (binaries left out: each is a crate of its own) by its module
/// path (`worker::search`), with its code before its tests.
fn modules(src: &Path) -> BTreeMap<String, (PathBuf, String)> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    dirs.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["lib"] || parts == ["main"] {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Up to the tests' module (`mod tests`, `pub(crate) mod tests`).
            let tests = text.match_indices("#[cfg(test)]\n").find(|&(i, marker)| {
                let next = text[i + marker.len()..].lines().next().unwrap_or_default();
                next.trim_end().ends_with("mod tests {")
            });
            // Comments left out: a doc link names a module without importing it.
            let code = text[..tests.map_or(text.len(), |(i, _)| i)]
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(parts.join("::"), (path, code));
        }
    }
    out
}

/// The paths a use-tree stands for: `a::{b::X, c::{d, e}}` is `a::b::X`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let prefix = &tree[..open];
    let inner = tree[open + 1..].trim_end().trim_end_matches('}');
    // Split the group at its top-level commas.
    let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// The use-tree or path that starts at `text`: names, `::`, `*` and balanced braces.
fn tree_at(text: &str) -> &str {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            c if depth > 0 || c.is_alphanumeric() || c == '_' || c == ':' || c == '*' => {}
            c if c.is_whitespace() && depth > 0 => {}
            _ => return &text[..i],
        }
        if depth == 0 && c == '}' {
            return &text[..=i];
        }
    }
    text
}

/// The modules the code of module `me` names: after `crate::` (the longest known prefix of
/// each path, every path of a grouped `use`), and its own child modules named by their names
/// (`use found::Merge`, `pub use schedule::*`, `vthreads::id(..)`), through which a module
/// hands on what its children hold.
fn imports(me: &str, code: &str, known: &BTreeMap<String, (PathBuf, String)>) -> BTreeSet<String> {
    let mut paths = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let start = i + "crate::".len();
        paths.extend(expand(tree_at(&code[start..])));
    }
    let child_prefix = if me.is_empty() {
        String::new()
    } else {
        format!("{me}::")
    };
    for child in known.keys().filter_map(|k| k.strip_prefix(&child_prefix)) {
        if child.contains("::") {
            continue;
        }
        let named = format!("{child}::");
        let by_name = code.match_indices(&named).any(|(i, _)| {
            let before = code[..i].chars().next_back().unwrap_or(' ');
            !(before.is_alphanumeric() || before == '_' || before == ':')
        });
        if by_name {
            paths.push(child.to_string());
            paths.last_mut().unwrap().insert_str(0, &child_prefix);
        }
    }
    paths
        .iter()
        .filter_map(|path| {
            let segments: Vec<&str> = path
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|prefix| known.contains_key(prefix))
        })
        .collect()
}

/// A circle among `edges`, as the modules on it, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth first, with the path walked: a module met again on the path closes a circle.
    fn visit(
        at: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(k) = path.iter().position(|p| p == at) {
            let mut found = path[k..].to_vec();
            found.push(at.to_string());
            return Some(found);
        }
        if !done.insert(at.to_string()) {
            return None;
        }
        path.push(at.to_string());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

fn edges_of(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let known = modules(src);
    known
        .iter()
        .map(|(name, (_, code))| {
            let mut to = imports(name, code, &known);
            to.remove(name);
            (name.clone(), to)
        })
        .collect()
}

#[test]
fn no_crate_has_modules_that_import_each_other() {
    let mut found = Vec::new();
    for krate in ["agent", "city", "viewer", "proto", "page", "dump", "tests"] {
        let edges = edges_of(&root().join(krate).join("src"));
        assert!(
            edges.len() > 2 || krate == "tests",
            "{krate}: {} modules read",
            edges.len()
        );
        if let Some(circle) = circle(&edges) {
            found.push(format!("{krate}: {}", circle.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// The check finds a circle where there is one, and through grouped imports.
#[test]
fn the_check_finds_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("worker")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod worker;").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "use crate::{\n    y,\n    worker::{search::go, z::Z},\n};\npub struct B;",
    )
    .unwrap();
    std::fs::write(src.join("worker/mod.rs"), "mod search;\npub use search::*;").unwrap();
    std::fs::write(
        src.join("worker/search.rs"),
        "pub fn go() { let _ = crate::a::A; }\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}",
    )
    .unwrap();
    let edges = edges_of(src);
    // Every path of a nested group: `worker::z::Z` is the folder's own (no module `z`).
    assert_eq!(
        edges["b"],
        BTreeSet::from(["worker".to_string(), "worker::search".to_string()])
    );
    assert_eq!(edges["worker::search"], BTreeSet::from(["a".to_string()]));
    // A folder hands on what its children hold: an edge to each it names.
    assert_eq!(
        edges["worker"],
        BTreeSet::from(["worker::search".to_string()])
    );
    let found = circle(&edges).expect("a -> b -> worker::search -> a");
    assert_eq!(found.first(), found.last());
    assert!(
        found.contains(&"worker::search".to_string()) && found.contains(&"b".to_string()),
        "{found:?}"
    );
    std::fs::write(src.join("worker/search.rs"), "pub fn go() {}").unwrap();
    assert_eq!(circle(&edges_of(src)), None);
}
