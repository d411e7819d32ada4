//! The golden recording: a real agent session (LinkedListLeak on JDK 17, Serial GC, classifiers
//! package:type:site, made by scripts/make-golden.sh) that every future reader must still open.

use std::path::Path;

use memcity_proto::recording::{RecordingReader, Tail};
use memcity_proto::strings::StringResolver;
use memcity_proto::v1::{stream_message::Kind, Node, Snapshot};

fn find<'a>(node: &'a Node, names: &StringResolver, name: &str) -> Option<&'a Node> {
    if names.resolve(node.name) == name {
        return Some(node);
    }
    node.children.iter().find_map(|c| find(c, names, name))
}

fn any_node(node: &Node, f: &dyn Fn(&Node) -> bool) -> bool {
    f(node) || node.children.iter().any(|c| any_node(c, f))
}

fn check_sums(node: &Node) {
    if !node.children.is_empty() {
        let objects: u64 = node.children.iter().map(|c| c.objects).sum();
        let bytes: u64 = node.children.iter().map(|c| c.bytes).sum();
        assert_eq!(objects, node.objects, "children of {} add up", node.name);
        assert_eq!(bytes, node.bytes);
        node.children.iter().for_each(check_sums);
    }
}

/// A golden recording read whole: its header, names and snapshots, checked to end cleanly
/// with the session's end at VM death, as every golden session does.
struct Golden {
    version: u32,
    header: memcity_proto::v1::RecordingHeader,
    names: StringResolver,
    snapshots: Vec<Snapshot>,
}

fn read_golden(file: &str) -> Golden {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
    let mut reader = RecordingReader::open(&path).unwrap();
    let mut names = StringResolver::new();
    let mut snapshots: Vec<Snapshot> = Vec::new();
    let mut ended = None;
    while let Some(message) = reader.next_message().unwrap() {
        match message.kind {
            Some(Kind::Strings(t)) => names.apply(&t).unwrap(),
            Some(Kind::Snapshot(s)) => snapshots.push(s),
            Some(Kind::End(e)) => ended = Some(e),
            _ => {}
        }
    }
    assert_eq!(reader.tail(), Some(&Tail::Clean), "{file}");
    assert_eq!(reader.skipped_corrupt(), 0, "{file}");
    assert_eq!(ended.unwrap().reason, "vm-death", "{file}");
    Golden {
        version: reader.format_version(),
        header: reader.header().clone(),
        names,
        snapshots,
    }
}

#[test]
fn golden_v1_reads() {
    let Golden {
        version,
        header,
        names,
        snapshots,
    } = read_golden("golden-v1.mcrec");
    assert_eq!(version, 1);
    assert_eq!(header.writer, "agent");
    let hello = header.handshake.unwrap();
    assert_eq!(hello.protocol_version, 1);
    assert_eq!(hello.classifiers, ["package", "type", "site"]);
    assert_eq!(hello.gc_name, "Serial");
    assert_eq!(hello.sampling_interval, 16 * 1024);
    assert!(hello.jvm_version.starts_with("17"));
    assert!(hello.command_line.contains("LinkedListLeak"));
    assert_eq!(snapshots.len(), 5);
    assert!(snapshots
        .windows(2)
        .all(|w| w[0].seq + 1 == w[1].seq && w[0].time_ms <= w[1].time_ms));

    let persons: Vec<u64> = snapshots
        .iter()
        .map(|s| {
            find(s.root.as_ref().unwrap(), &names, "LinkedListLeak$Person").map_or(0, |n| n.objects)
        })
        .collect();
    assert_eq!(persons[0], 0);
    assert!(persons.windows(2).all(|w| w[0] <= w[1]), "{persons:?}");
    assert!(*persons.last().unwrap() > 10_000, "{persons:?}");

    let last = snapshots.last().unwrap();
    check_sums(last.root.as_ref().unwrap());
    let exact = last.exactness.unwrap();
    assert!(exact.types_exact && exact.sites_estimated && exact.sampled_live_objects > 0);
    let person = find(last.root.as_ref().unwrap(), &names, "LinkedListLeak$Person").unwrap();
    assert!(!person.estimated);
    assert!(person.children.iter().all(|c| c.estimated));
    assert!(person.children.iter().any(|c| names
        .resolve(c.name)
        .starts_with("LinkedListLeak.main(LinkedListLeak.java:")));
    let refs: Vec<(&str, &str)> = last
        .references
        .iter()
        .map(|r| (names.resolve(r.from_type), names.resolve(r.to_type)))
        .collect();
    assert!(refs.contains(&("java.util.LinkedList$Node", "LinkedListLeak$Person")));
    assert!(refs.contains(&("LinkedListLeak$Person", "java.lang.String")));
    let cost = last.cost.unwrap();
    assert!(cost.pause_ns > 0 && cost.objects_visited > 0 && cost.wall_ns >= cost.total_pause_ns);
}

/// Format version 2 (scripts/make-golden.sh): LinkedListLeak on JDK 17 with G1, walks 2 s apart
/// and estimates between them, with what version 2 added to a snapshot: the walks' field edges
/// and GC roots, the estimates' errors and unconfirmed parts, object paths from the static
/// list that leaks, lifetimes, the heap's use.
#[test]
fn golden_v2_reads() {
    let Golden {
        version,
        header,
        names,
        snapshots,
    } = read_golden("golden-v2.mcrec");
    assert_eq!(version, 2);
    let hello = header.handshake.unwrap();
    assert_eq!(hello.classifiers, ["package", "type", "site"]);
    assert_eq!(hello.gc_name, "G1");
    assert!(hello.jvm_version.starts_with("17"));
    let estimate = |s: &Snapshot| {
        s.exactness
            .as_ref()
            .is_some_and(|e| e.source() == memcity_proto::v1::exactness::Source::Estimate)
    };
    let (estimates, walks): (Vec<&Snapshot>, Vec<&Snapshot>) =
        snapshots.iter().partition(|s| estimate(s));
    assert!(
        walks.len() >= 2 && estimates.len() >= 2,
        "{} walks, {} estimates",
        walks.len(),
        estimates.len()
    );
    assert!(walks
        .iter()
        .all(|s| !s.roots.is_empty() && !s.fields.is_empty()));
    let root = |s: &&Snapshot| s.root.clone().unwrap_or_default();
    assert!(estimates
        .iter()
        .any(|s| any_node(&root(s), &|n| n.objects_error > 0)));
    assert!(estimates
        .iter()
        .any(|s| any_node(&root(s), &|n| n.objects_unconfirmed > 0)));
    assert!(snapshots
        .iter()
        .all(|s| s.heap.is_some_and(|h| h.used_bytes > 0)));
    // The paths name the static list that leaks.
    let paths = snapshots
        .iter()
        .filter_map(|s| s.paths.as_ref())
        .find(|p| p.found > 0)
        .expect("a search that found paths");
    assert!(
        paths.nodes.iter().any(|n| n
            .root
            .as_ref()
            .is_some_and(|r| names.resolve(r.name).contains("LinkedListLeak.PEOPLE"))),
        "the list's root"
    );
    let lifetimes: Vec<_> = snapshots
        .iter()
        .filter_map(|s| s.lifetimes.as_ref())
        .collect();
    assert!(lifetimes.iter().any(|l| !l.deaths.is_empty()), "deaths");
    assert!(lifetimes.iter().any(|l| !l.alive.is_empty()), "survivors");
    let last = snapshots.last().unwrap();
    check_sums(last.root.as_ref().unwrap());
    let person = find(last.root.as_ref().unwrap(), &names, "LinkedListLeak$Person").unwrap();
    assert!(person.objects > 10_000, "{}", person.objects);
}
