//! The reader, sizes, paths, dominators and snapshot on hand-written dumps
//! (`synthetic::small_heap`), and what damaged input gets.

use std::io::Write;

use crate::heap::NONE;
use crate::synthetic::small_heap;
use crate::{read_bytes, Analysis, DumpError};

fn type_totals<'a>(analysis: &'a Analysis, name: &str) -> &'a crate::snapshot::TypeTotals {
    analysis
        .types
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no type {name}"))
}

#[test]
fn a_small_heap_reads_with_exact_counts_sizes_and_retained_sizes() {
    let heap = read_bytes(&small_heap()).unwrap();
    // 6 mirrors, the holder, 2 arrays, 3 items, 3 long[] and the last object.
    assert_eq!(heap.objects(), 16);
    let analysis = Analysis::new(&heap).unwrap();
    assert_eq!(
        analysis.sizes.layout.name,
        "compressed oops and class pointers"
    );
    let item = type_totals(&analysis, "Item");
    assert_eq!((item.objects, item.bytes), (3, 48));
    let longs = type_totals(&analysis, "long[]");
    assert_eq!((longs.objects, longs.bytes), (3, 96));
    let arrays = type_totals(&analysis, "java.lang.Object[]");
    assert_eq!((arrays.objects, arrays.bytes), (2, 32 + 24));
    // The holder keeps its array and the two items only it reaches (16 + 32 each); the first
    // item is also in `SOME`'s array, so the class (both statics' holder) keeps it.
    let holder = type_totals(&analysis, "Holder");
    assert_eq!(holder.retained, 16 + 32 + 2 * (16 + 32));
    // Items: each is the first of its type on its branch of the dominator tree.
    assert_eq!(item.retained, 3 * (16 + 32));
    // The last object is no root's.
    assert_eq!(analysis.unreachable(), (1, 16));
}

#[test]
fn paths_start_at_the_static_that_holds_them() {
    let heap = read_bytes(&small_heap()).unwrap();
    let analysis = Analysis::new(&heap).unwrap();
    let third_item = (0..heap.objects() as u32)
        .filter(|&o| heap.classes[heap.class_of[o as usize] as usize].name == "Item")
        .nth(2)
        .unwrap();
    let path = analysis.reach.path(third_item);
    let names: Vec<&str> = path
        .iter()
        .map(|&o| {
            heap.classes[heap.class_of[o as usize] as usize]
                .name
                .as_str()
        })
        .collect();
    assert_eq!(names, ["Holder", "java.lang.Object[]", "Item"]);
    let root = &analysis.reach.roots[analysis.reach.root[path[0] as usize] as usize];
    assert_eq!(
        root.kind,
        crate::paths::RootKind::Static {
            holder: "Holder".into(),
            field: "ALL".into()
        }
    );
    assert_eq!(heap.field_name(path[0], 0), "items");
}

#[test]
fn a_dump_becomes_a_session_of_one_exact_snapshot() {
    let messages = crate::session_bytes("small.hprof", &small_heap()).unwrap();
    use memcity_proto::v1::stream_message::Kind;
    let Some(Kind::Snapshot(snapshot)) = &messages.last().unwrap().kind else {
        panic!("the last message is the snapshot")
    };
    let dump = snapshot.dump.as_ref().unwrap();
    assert_eq!((dump.objects, dump.unreachable_objects), (16, 1));
    assert_eq!(snapshot.root.as_ref().unwrap().objects, 16);
    let paths = snapshot.paths.as_ref().unwrap();
    assert!(paths.found > 0 && paths.found <= paths.targets);
    // The holder keeps most of the reachable heap: it is the one retainer.
    assert!(!dump.retainers.is_empty());
}

#[test]
fn every_cut_of_a_dump_is_an_error_never_a_panic() {
    let whole = small_heap();
    for cut in 0..whole.len() {
        match read_bytes(&whole[..cut]) {
            Err(DumpError::Truncated { offset, .. }) => assert!(offset <= cut as u64),
            Err(DumpError::NotADump | DumpError::Malformed { .. }) => {}
            Err(other) => panic!("cut at {cut}: {other}"),
            Ok(_) => panic!("cut at {cut} read as whole"),
        }
    }
    let message = read_bytes(&whole[..whole.len() - 20])
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("cut short"), "{message}");
    assert!(message.contains("offset"), "{message}");
}

#[test]
fn an_unknown_record_is_named_with_its_offset() {
    let mut dump = small_heap();
    // The first record follows the 19-byte magic, the id size and the time.
    dump[31] = 0x99;
    let message = read_bytes(&dump).err().unwrap().to_string();
    assert_eq!(
        message,
        "the dump is damaged at offset 31: an unknown record tag 0x99 (HotSpot writes 0x01-0x0E, 0x1C and 0x2C)"
    );
}

#[test]
fn a_dump_of_many_gzip_members_reads_whole_and_a_cut_one_says_so() {
    let whole = small_heap();
    // As `-gz` writes it: independent members (here of 100 bytes each).
    let mut gz = Vec::new();
    for chunk in whole.chunks(100) {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(chunk).unwrap();
        gz.extend(e.finish().unwrap());
    }
    let plain = read_bytes(&whole).unwrap();
    let compressed = read_bytes(&gz).unwrap();
    assert!(compressed.compressed);
    assert_eq!(plain.objects(), compressed.objects());
    assert_eq!(plain.edges, compressed.edges);
    let error = read_bytes(&gz[..gz.len() / 2]).err().unwrap();
    let message = error.to_string();
    assert!(
        message.contains("cut short") || message.contains("gzip"),
        "{message}"
    );
}

#[test]
fn dangling_references_are_counted_and_left_out() {
    let mut b = crate::synthetic::Builder::default();
    b.class(0x100, "java/lang/Object", 0, &[], &[]);
    b.class(
        0x200,
        "Item",
        0x100,
        &[("next", crate::synthetic::OBJECT)],
        &[],
    );
    b.instance(0x1000, 0x200, &[(crate::synthetic::OBJECT, 0xdead_0000)]);
    let heap = read_bytes(&b.finish()).unwrap();
    assert_eq!(heap.dangling, 1);
    assert!(heap.edges.iter().all(|&e| e != NONE));
}

/// A doubly linked list of `n` nodes: `List.HEAD` (a static) holds the list object, which
/// holds the first and the last node; a JNI global also holds the last node, so no one object
/// dominates the nodes (as when the heap runs out inside `LinkedList.linkLast`).
fn list_held_twice(n: u64) -> Vec<u8> {
    use crate::synthetic::{Builder, OBJECT};
    let mut b = Builder::default();
    let (object, class, list, node) = (0x100, 0x200, 0x300, 0x400);
    let base = 0x10_0000u64;
    let list_obj = base;
    let node_at = |i: u64| base + 16 + 24 * i;
    b.class(object, "java/lang/Object", 0, &[], &[]);
    b.class(class, "java/lang/Class", object, &[], &[]);
    b.class(
        list,
        "List",
        object,
        &[("first", OBJECT), ("last", OBJECT)],
        &[("HEAD", OBJECT, list_obj)],
    );
    b.class(
        node,
        "Node",
        object,
        &[("next", OBJECT), ("prev", OBJECT)],
        &[],
    );
    for boot in [object, class, list, node] {
        b.sticky_class(boot);
    }
    b.instance(
        list_obj,
        list,
        &[(OBJECT, node_at(0)), (OBJECT, node_at(n - 1))],
    );
    for i in 0..n {
        let next = if i + 1 < n { node_at(i + 1) } else { 0 };
        let prev = if i > 0 { node_at(i - 1) } else { 0 };
        b.instance(node_at(i), node, &[(OBJECT, next), (OBJECT, prev)]);
    }
    b.jni_global(node_at(n - 1));
    b.finish()
}

#[test]
fn nodes_no_one_object_dominates_are_a_group_whose_paths_meet_at_their_list() {
    let messages = crate::session_bytes("list.hprof", &list_held_twice(1000)).unwrap();
    use memcity_proto::v1::stream_message::Kind;
    let mut names = memcity_proto::strings::StringResolver::new();
    let mut snapshot = None;
    for m in &messages {
        match &m.kind {
            Some(Kind::Strings(t)) => names.apply(t).unwrap(),
            Some(Kind::Snapshot(s)) => snapshot = Some(s.clone()),
            _ => {}
        }
    }
    let dump = snapshot.unwrap().dump.unwrap();
    let group = dump
        .retainers
        .iter()
        .find(|r| r.group_type != 0)
        .expect("a group retainer");
    assert_eq!(names.resolve(group.group_type), "Node");
    assert_eq!(group.group_objects, 1000);
    assert_eq!(group.retained_bytes, 1000 * 24);
    // The static's paths reach every node first (the JNI global's tier comes later), through
    // the list's two ends: the list is where they meet.
    let holder = group.path.last().expect("a meeting point");
    assert_eq!(names.resolve(holder.r#type), "List");
}

#[test]
fn a_dump_groups_by_loader_and_thread_and_says_it_has_no_sites() {
    use crate::grouping::{group, parse, Level, BOOT_LOADER, NO_SITE, NO_THREAD, UNREACHABLE};
    let heap = read_bytes(&small_heap()).unwrap();
    let analysis = Analysis::new(&heap).unwrap();
    let levels = parse("loader:thread:site:type").unwrap();
    assert_eq!(
        levels,
        [Level::Loader, Level::Thread, Level::Site, Level::Type]
    );
    let grouping = group(&analysis.parts(), &levels);
    let path_of = |name: &str| {
        let at = grouping
            .nodes
            .iter()
            .position(|g| g.name == name)
            .unwrap_or_else(|| panic!("no group {name}"));
        let mut path = Vec::new();
        let mut i = at;
        while i != 0 {
            path.push(grouping.nodes[i].name.as_str());
            i = grouping.nodes[i].parent as usize;
        }
        path.reverse();
        (path, grouping.nodes[at].clone())
    };
    // Every class of the small heap is the boot loader's; statics hold the items (no thread).
    let (path, items) = path_of("Item");
    assert_eq!(path, [BOOT_LOADER, NO_THREAD, NO_SITE, "Item"]);
    assert_eq!((items.objects, items.bytes), (3, 48));
    // The last object no root reaches.
    assert!(grouping
        .nodes
        .iter()
        .any(|g| g.name == UNREACHABLE && g.objects == 1));
    // The heap's node counts every object, and keeps what the roots reach.
    assert_eq!(grouping.nodes[0].objects, heap.objects() as u64);
    assert!(parse("package:nothing")
        .unwrap_err()
        .contains("package, type, loader, thread"));
    assert!(parse("type:type").unwrap_err().contains("twice"));
}

/// The allocator of the binaries that read dumps, here too, so its spilling is tested.
#[global_allocator]
static ALLOCATOR: crate::spill::Spill = crate::spill::Spill;

#[test]
fn a_spilled_array_is_a_file_beside_the_dump_that_reads_back_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("small.hprof");
    std::fs::write(&dump, small_heap()).unwrap();
    let before = crate::spill::spilled_bytes();
    {
        // Only this test reads the variable, between this line and the next but one.
        std::env::set_var("MEMCITY_SPILL", "always");
        let prepared = crate::spill::prepare(&dump, false);
        std::env::remove_var("MEMCITY_SPILL");
        assert_eq!(prepared.dir.as_deref(), Some(dir.path()));
        let mut big: Vec<u32> = vec![7; 1 << 20];
        big.extend(0..1000);
        assert!(crate::spill::spilled_bytes() >= before + (4 << 20));
        assert_eq!(big[12345], 7);
        assert_eq!(big[(1 << 20) + 999], 999);
        // A dump read while spilling reads as any other.
        let heap = crate::read(&dump).unwrap();
        assert_eq!(heap.objects(), 16);
    }
    // The files were unlinked from the start: nothing is left beside the dump.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
