use super::*;
use crate::jvmti::RootKind;

const CLASS: sys::jvmtiHeapReferenceKind = sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_CLASS;
const FIELD: sys::jvmtiHeapReferenceKind = sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD;
const ELEMENT: sys::jvmtiHeapReferenceKind =
    sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT;
const STATIC_REF: sys::jvmtiHeapReferenceKind =
    sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STATIC_FIELD;

fn state(object_array: &[bool]) -> State<'_> {
    state_with(object_array, &[], &[])
}

fn state_with<'a>(object_array: &'a [bool], memcity: &'a [bool], shared: &'a [bool]) -> State<'a> {
    let n = object_array.len();
    // Leaked: a test's id source and tracker live as long as its state, which borrows them.
    let next_class: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(n as u32)));
    let tracker: &'static Tracker = Box::leak(Box::new(Tracker::new(16)));
    let facts = ClassFacts {
        object_array,
        class_class: 99,
        weak_reference: &[],
        next_class,
        tracker: Some(tracker),
        holders: true,
        application: &[],
        threads: 0,
        memcity,
        shared,
    };
    State::new(facts, n, 3, Instant::now() + Duration::from_secs(60))
}

/// memcity's JFR repository (class 1) holds a map (2) in a static; the map's table (3, an
/// object array) holds a node (4) and one owned in this walk already, and the map refers
/// to a thread (6) and a string's bytes (5). The application's own map and table alike.
/// Everything memcity's object reaches first is memcity's, in objects and bytes, but not
/// the owned node, the thread, or anything of the application's.
#[test]
fn what_memcitys_objects_reach_first_is_counted_as_memcitys() {
    let object_array = [false, false, false, true, false, false, false];
    let memcity = [false, true, false, false, false, false, false];
    let shared = [false, false, false, false, false, false, true];
    let mut s = state_with(&object_array, &memcity, &shared);
    let t = tags::class_tag;
    let (mut map, mut table, mut node, mut thread, mut bytes) = (0i64, 0i64, 0i64, 0i64, 0i64);
    let mut owned = tags::with_owner(0, 5, 1, 3);
    let (mut app_map, mut app_table) = (0i64, 0i64);
    let mut mirror = t(1);
    // `(kind, referee class, referrer class, size, referee tag, referrer tag, length)`, as
    // HotSpot reports them.
    let at = |s: &mut State, kind, to, from, size, tag: &mut i64, referrer: &mut i64, len| {
        s.on_reference(kind, 1, &NO_FRAME, t(to), t(from), size, tag, referrer, len);
    };
    // The repository's static field: the declaring class is memcity's.
    at(&mut s, STATIC_REF, 2, 99, 48, &mut map, &mut mirror, -1);
    // The map's visit: its table, a thread, a byte[].
    at(&mut s, CLASS, 99, 2, 500, &mut 0, &mut map, -1);
    at(&mut s, FIELD, 3, 2, 48, &mut table, &mut map, 2);
    at(&mut s, FIELD, 6, 2, 120, &mut thread, &mut map, -1);
    at(&mut s, FIELD, 5, 2, 24, &mut bytes, &mut map, 8);
    // The table's visit: two nodes, one of them owned in this walk.
    at(&mut s, CLASS, 99, 3, 500, &mut 0, &mut table, -1);
    at(&mut s, ELEMENT, 4, 3, 32, &mut node, &mut table, -1);
    at(&mut s, ELEMENT, 4, 3, 32, &mut owned, &mut table, -1);
    at(&mut s, CLASS, 99, 4, 500, &mut 0, &mut node, -1);
    at(&mut s, CLASS, 99, 4, 500, &mut 0, &mut owned, -1);
    at(&mut s, CLASS, 99, 6, 500, &mut 0, &mut thread, -1);
    // The byte[]'s visit: its size comes through the primitive-array callback.
    at(&mut s, CLASS, 99, 5, 500, &mut 0, &mut bytes, -1);
    let user_data = (&mut s as *mut State).cast::<c_void>();
    // SAFETY: `user_data` is the state, as FollowReferences would pass it.
    unsafe { array_primitive_value(t(5), 24, &mut bytes, 8, 0, std::ptr::null(), user_data) };
    // The application's map and table.
    at(&mut s, CLASS, 99, 2, 500, &mut 0, &mut app_map, -1);
    at(&mut s, FIELD, 3, 2, 80, &mut app_table, &mut app_map, 8);
    at(&mut s, CLASS, 99, 3, 500, &mut 0, &mut app_table, -1);
    s.flush_visit();

    assert_eq!(s.objects, [0, 0, 2, 2, 2, 1, 1]);
    assert_eq!(s.memcity_objects, [0, 0, 1, 1, 1, 1, 0]);
    assert_eq!((s.array_bytes[3], s.memcity_array_bytes[3]), (128, 48));
    assert_eq!((s.array_bytes[5], s.memcity_array_bytes[5]), (24, 24));
    assert!(tags::is_memcity(map, 3) && tags::is_memcity(table, 3));
    assert!(
        !tags::is_memcity(thread, 3),
        "a thread is the application's"
    );
    assert_eq!(tags::owner(owned, 3), Some((5, 1)), "an owner stays");
    assert!(!tags::is_memcity(app_table, 3) && tags::epoch(app_table) == 3);
}

/// Replays the callback sequence HotSpot produces for: one Node (class 1) referencing a
/// Person (2) twice, whose visit references two Strings (3); then a String[] (4, an object
/// array of 40 bytes) referenced from two places and holding two Strings.
#[test]
fn class_references_count_objects_and_group_referrers() {
    let object_array = [false, false, false, false, true];
    let mut s = state(&object_array);
    let t = tags::class_tag;
    let mut tag = 0i64;
    let mut arr_tag = 0i64;
    let tracker = s.facts.tracker.unwrap();
    let slot = tracker.track(1, 5, 1, 10.0, 24, 0, 0, 1).unwrap();
    let mut referrer = tags::sample_tag(slot);
    let p = &mut tag as *mut i64;
    let r = &mut referrer as *mut i64;
    // Visit Node: CLASS, then two fields pointing at the Person.
    s.on_reference(CLASS, 1, &NO_FRAME, t(99), t(1), 500, p, r, -1);
    s.on_reference(FIELD, 1, &NO_FRAME, t(2), t(1), 24, p, r, -1);
    s.on_reference(FIELD, 1, &NO_FRAME, t(2), t(1), 24, p, r, -1);
    // Visit Person: two String fields.
    let mut plain = 0i64;
    let q = &mut plain as *mut i64;
    s.on_reference(CLASS, 1, &NO_FRAME, t(99), t(2), 500, p, q, -1);
    s.on_reference(FIELD, 1, &NO_FRAME, t(3), t(2), 24, p, q, -1);
    s.on_reference(FIELD, 1, &NO_FRAME, t(3), t(2), 24, p, q, -1);
    // The String[] reported twice as a referee: its bytes count once.
    s.on_reference(FIELD, 1, &NO_FRAME, t(4), t(2), 40, &mut arr_tag, q, 6);
    s.on_reference(FIELD, 1, &NO_FRAME, t(4), t(2), 40, &mut arr_tag, q, 6);
    // Visit the array: CLASS, then two elements.
    s.on_reference(CLASS, 1, &NO_FRAME, t(99), t(4), 500, p, q, -1);
    s.on_reference(ELEMENT, 1, &NO_FRAME, t(3), t(4), 24, p, q, -1);
    s.on_reference(ELEMENT, 1, &NO_FRAME, t(3), t(4), 24, p, q, -1);
    s.flush_visit();

    let references = references_by_class(&s.fields, 99);
    assert_eq!(s.objects, [0, 1, 1, 0, 1]);
    assert_eq!(s.instance_size[2], 24);
    assert_eq!(s.array_bytes[4], 40);
    assert_eq!(tags::epoch(arr_tag), 3);
    assert_eq!(
        references[&(1, 2)],
        RefCount {
            referrers: 1,
            references: 2
        }
    );
    assert_eq!(
        references[&(2, 3)],
        RefCount {
            referrers: 1,
            references: 2
        }
    );
    assert_eq!(references[&(2, 4)].references, 2);
    assert_eq!(references[&(4, 3)].referrers, 1);
    let key = tracker.get(slot).unwrap().key();
    let sample = s.sampled[&(1, key)];
    assert_eq!(sample.objects, 1);
    assert!((sample.weight - 10.0).abs() < 0.2);
    assert!((sample.variance - 90.0).abs() < 4.0);
    assert_eq!(
        s.seen_slots,
        [slot],
        "the walk lists the samples it reaches"
    );
    assert_eq!(s.visited, 3);
}

/// A sampled object met as a field's referee or an array's element is recorded with what
/// held it: the referrer's class and the walk's slot in it; plain objects are not.
#[test]
fn the_walk_records_what_holds_each_sample() {
    let object_array = [false, false, false, false, true];
    let mut s = state(&object_array);
    let t = tags::class_tag;
    let tracker = s.facts.tracker.unwrap();
    let (a, b) = (
        tracker.track(3, 1, 1, 1.0, 24, 0, 0, 1).unwrap(),
        tracker.track(3, 1, 1, 1.0, 24, 0, 0, 1).unwrap(),
    );
    let (mut a_tag, mut b_tag, mut plain, mut referrer) =
        (tags::sample_tag(a), tags::sample_tag(b), 0i64, 0i64);
    let r = &mut referrer as *mut i64;
    // A Person (2) holds sample a in its field 7 and a plain String.
    s.on_reference(CLASS, 0, &NO_FRAME, t(99), t(2), 500, &mut plain, r, -1);
    s.on_reference(FIELD, 7, &NO_FRAME, t(3), t(2), 24, &mut a_tag, r, -1);
    s.on_reference(FIELD, 8, &NO_FRAME, t(3), t(2), 24, &mut plain, r, -1);
    // A String[] (4) holds sample b.
    s.on_reference(CLASS, 0, &NO_FRAME, t(99), t(4), 500, &mut plain, r, -1);
    s.on_reference(ELEMENT, 0, &NO_FRAME, t(3), t(4), 24, &mut b_tag, r, -1);
    s.flush_visit();
    assert_eq!(s.holders.len(), 2);
    assert_eq!(s.holders[&a], (2, 7));
    assert_eq!(s.holders[&b], (4, ELEMENTS));
}

#[test]
fn classes_loaded_after_the_refresh_get_provisional_ids() {
    let object_array = [false, false];
    let mut s = state(&object_array);
    let mut mirror = 0i64;
    let mut other = 0i64;
    let m = &mut mirror as *mut i64;
    let o = &mut other as *mut i64;
    // The first object of an untagged class tags its mirror with the next id, 2.
    s.on_reference(CLASS, 1, &NO_FRAME, 0, 0, 1, m, o, -1);
    assert_eq!(tags::class_id(mirror), 2);
    // The VM then reports the class with that tag.
    s.on_reference(CLASS, 1, &NO_FRAME, 0, mirror, 1, m, o, -1);
    assert_eq!(s.objects, [0, 0, 2]);
    // A tag beyond every known id (not ours) falls into class 0.
    let mut plain = 5i64;
    s.on_reference(
        CLASS,
        1,
        &NO_FRAME,
        0,
        tags::class_tag(77),
        1,
        &mut plain,
        o,
        -1,
    );
    assert_eq!(s.objects[0], 1);
}

#[test]
fn weak_and_phantom_referents_are_not_followed_but_soft_ones_are() {
    let object_array = [false; 4];
    let weak = [false, true, false, false]; // class 1: a WeakReference subclass
    let mut s = state(&object_array);
    s.facts.weak_reference = &weak;
    let t = tags::class_tag;
    let mut tag = 0i64;
    let p = &mut tag as *mut i64;
    s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(1), 500, p, p, -1);
    // The referent (field 0): not followed, not counted.
    assert_eq!(
        s.on_reference(FIELD, REFERENT_FIELD, &NO_FRAME, t(3), t(1), 24, p, p, -1),
        0
    );
    // Another field (its queue) is an ordinary edge.
    assert_eq!(
        s.on_reference(FIELD, 1, &NO_FRAME, t(2), t(1), 24, p, p, -1),
        sys::JVMTI_VISIT_OBJECTS as jint
    );
    // A soft reference (class 2, not marked) keeps its referent: followed.
    s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(2), 500, p, p, -1);
    assert_eq!(
        s.on_reference(FIELD, REFERENT_FIELD, &NO_FRAME, t(3), t(2), 24, p, p, -1),
        sys::JVMTI_VISIT_OBJECTS as jint
    );
    s.flush_visit();
    let references = references_by_class(&s.fields, 99);
    assert!(!references.contains_key(&(1, 3)));
    assert!(
        !s.fields.keys().any(|&(from, _, to)| from == 1 && to == 3),
        "nor counted per field"
    );
    assert_eq!(references[&(1, 2)].references, 1);
    assert_eq!(references[&(2, 3)].references, 1);
}

#[test]
fn a_walk_past_its_deadline_aborts() {
    let object_array = [false, false];
    let mut s = state(&object_array);
    s.deadline = Instant::now() - Duration::from_millis(1);
    let mut tag = 0i64;
    let p = &mut tag as *mut i64;
    let mut last = 0;
    for _ in 0..0x1000 {
        last = s.on_reference(CLASS, 1, &NO_FRAME, 0, tags::class_tag(1), 1, p, p, -1);
    }
    assert_eq!(last, sys::JVMTI_VISIT_ABORT as jint);
    assert!(s.aborted);
}

/// A static field of application class 5 holds a map (class 1), whose table (class 2, an
/// object array of 16) holds two nodes (class 3): the static is a root, the map is owned at
/// level 0, the table at 1, the nodes at 2 (their depths in tags start where an application
/// static's three levels end at `MAX_OWNED_DEPTH`), and each reference is counted per field
/// too.
#[test]
fn statics_own_what_they_hold_and_references_count_per_field() {
    let object_array = [false, false, true, false, false, false];
    let application = [false, false, false, false, false, true];
    let mut s = state(&object_array);
    s.facts.application = &application;
    let t = tags::class_tag;
    let mut mirror = t(5);
    let (mut map, mut table, mut node_a, mut node_b) = (0i64, 0i64, 0i64, 0i64);
    let mut scratch = 0i64;
    let sp = &mut scratch as *mut i64;
    // The mirror's visit reports the static field (index 2) to the map.
    s.on_reference(
        STATIC_REF,
        2,
        &NO_FRAME,
        t(1),
        t(99),
        24,
        &mut map,
        &mut mirror,
        -1,
    );
    let start = tags::MAX_OWNED_DEPTH - 3;
    assert_eq!(tags::owner(map, 3).map(|o| o.1), Some(start));
    // The map's visit: its table field (index 1).
    s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(1), 24, sp, &mut map, -1);
    s.on_reference(
        FIELD,
        1,
        &NO_FRAME,
        t(2),
        t(1),
        80,
        &mut table,
        &mut map,
        16,
    );
    assert_eq!(tags::owner(table, 3).map(|o| o.1), Some(start + 1));
    // The table's visit: two elements.
    s.on_reference(CLASS, -1, &NO_FRAME, t(99), t(2), 80, sp, &mut table, -1);
    s.on_reference(
        ELEMENT,
        0,
        &NO_FRAME,
        t(3),
        t(2),
        32,
        &mut node_a,
        &mut table,
        -1,
    );
    s.on_reference(
        ELEMENT,
        1,
        &NO_FRAME,
        t(3),
        t(2),
        32,
        &mut node_b,
        &mut table,
        -1,
    );
    s.flush_visit();
    assert_eq!(
        tags::owner(node_b, 3).map(|o| o.1),
        Some(start + 2),
        "the table's first elements"
    );

    let root = tags::owner(map, 3).unwrap().0;
    let r = s.roots[root as usize - 1];
    assert_eq!(
        (r.kind, r.class, r.slot),
        (RootKind::StaticField, 5, STATIC | 2)
    );
    assert_eq!(s.owned[&(root, 0, 0, 0, 1)].references, 1);
    assert_eq!(s.owned[&(root, 1, 1, 1, 2)].max_length, 16);
    let nodes = s.owned[&(root, 2, 2, ELEMENTS, 3)];
    assert_eq!((nodes.references, nodes.max_fanout), (2, 2));
    assert_eq!(s.fields[&(5, STATIC | 2, 1)].references, 1);
    assert_eq!(s.fields[&(1, 1, 2)].max_length, 16);
    assert_eq!(s.fields[&(2, ELEMENTS, 3)].referrers, 1);
    // In the next walk (epoch 4) these owners mean nothing.
    assert_eq!(tags::owner(map, 4), None);
}

/// A thread (class 1, owner 1 as the worker tags it) holds a thread-local map (2), its table
/// (3, an object array), an entry (4), the entry's value, a list (5), and the list's array
/// (6, 1000 long) of records (7): the thread owns down to the list's array, so the array's
/// length is counted for the thread at level 5, and the records are not owned.
#[test]
fn a_thread_owns_its_thread_locals_values_and_their_arrays() {
    let object_array = [false, false, false, true, false, false, true, false];
    let mut s = state(&object_array);
    s.facts.threads = 1;
    s.start_depths = vec![0];
    let t = tags::class_tag;
    let mut scratch = 0i64;
    let sp = &mut scratch as *mut i64;
    let mut objects = [0i64; 8];
    objects[1] = tags::with_owner(0, 1, 0, 3);
    let thread_ref = sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_THREAD;
    s.on_reference(
        thread_ref,
        -1,
        &NO_FRAME,
        t(1),
        0,
        120,
        &mut objects[1],
        std::ptr::null_mut(),
        -1,
    );
    // Each object's visit reports its one reference to the next class.
    for class in 1..7usize {
        let (head, tail) = objects.split_at_mut(class + 1);
        let (referrer, referee) = (&mut head[class], &mut tail[0]);
        s.on_reference(
            CLASS,
            -1,
            &NO_FRAME,
            t(99),
            t(class as u32),
            24,
            sp,
            referrer,
            -1,
        );
        let (kind, length) = match class + 1 {
            4 | 7 => (ELEMENT, -1),
            6 => (FIELD, 1000),
            3 => (FIELD, 16),
            _ => (FIELD, -1),
        };
        s.on_reference(
            kind,
            0,
            &NO_FRAME,
            t(class as u32 + 1),
            t(class as u32),
            24,
            referee,
            referrer,
            length,
        );
    }
    s.flush_visit();
    let depths: Vec<Option<u8>> = objects[1..]
        .iter()
        .map(|&tag| tags::owner(tag, 3).map(|o| o.1))
        .collect();
    assert_eq!(
        depths,
        [Some(0), Some(1), Some(2), Some(3), Some(4), Some(5), None]
    );
    assert_eq!(s.owned[&(1, 5, 5, 0, 6)].max_length, 1000);
    assert_eq!(s.owned[&(1, 6, 6, ELEMENTS, 7)].references, 1);
}
