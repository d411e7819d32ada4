//! Checks the committed bindings against the `jvmti.h` of every JDK installed here, for the parts
//! the agent uses: function-table slots, event-callback slots, capability bits, constants.
//! bindgen's own asserts pin the layout of the header it was generated from; this catches a JDK
//! whose header differs (the table only ever grows, but a test is cheaper than trust).

use std::path::PathBuf;

use crate::jvmti::sys;

fn headers() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path().join("include/jvmti.h"))
                .filter(|p| p.exists())
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let header = PathBuf::from(home).join("include/jvmti.h");
        if header.exists() {
            found.push(header);
        }
    }
    found.sort();
    found.dedup_by(|a, b| std::fs::canonicalize(&*a).ok() == std::fs::canonicalize(&*b).ok());
    found
}

/// The text between `start` and `end` markers.
fn section<'a>(header: &'a str, start: &str, end: &str) -> &'a str {
    let from = header.find(start).unwrap_or_else(|| panic!("no '{start}'"));
    let to = from
        + header[from..]
            .find(end)
            .unwrap_or_else(|| panic!("no '{end}'"));
    &header[from..to]
}

/// Member names of the JVMTI function table, in slot order.
fn function_slots(header: &str) -> Vec<String> {
    let body = section(
        header,
        "typedef struct jvmtiInterface_1_ {",
        "} jvmtiInterface_1;",
    );
    let mut slots = Vec::new();
    for line in body.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("void *") {
            slots.push(rest.trim_end_matches(';').to_string());
        } else if let Some(at) = line.find("(JNICALL *") {
            let rest = &line[at + "(JNICALL *".len()..];
            slots.push(rest[..rest.find(')').unwrap()].to_string());
        }
    }
    slots
}

/// Member names of a `typedef struct { TYPE NAME; ... } end;` block.
fn struct_members(header: &str, start: &str, end: &str) -> Vec<String> {
    section(header, start, end)
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';') && !l.starts_with("/*"))
        .map(|l| {
            l.trim_end_matches(';')
                .split_whitespace()
                .last()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Capability names in bit order.
fn capability_bits(header: &str) -> Vec<String> {
    let body = section(
        header,
        "unsigned int can_tag_objects",
        "} jvmtiCapabilities;",
    );
    body.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("unsigned int "))
        .map(|l| l.split(':').next().unwrap().trim().to_string())
        .collect()
}

fn constant(header: &str, name: &str) -> i64 {
    // `NAME = value,` with any spacing before the '='.
    let at = header
        .match_indices(name)
        .map(|(at, _)| at + name.len())
        .find(|&end| header[end..].trim_start().starts_with('='))
        .unwrap_or_else(|| panic!("no {name}"));
    let value = header[at..]
        .trim_start()
        .trim_start_matches('=')
        .trim_start()
        .split([',', '\n', ' '])
        .next()
        .unwrap();
    if let Some(hex) = value.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).unwrap()
    } else {
        value.parse().unwrap()
    }
}

macro_rules! slot_of {
    ($ty:ty, $field:ident) => {
        std::mem::offset_of!($ty, $field) / std::mem::size_of::<usize>()
    };
}

#[test]
fn bindings_match_every_installed_jdk_header() {
    let headers = headers();
    assert!(
        !headers.is_empty(),
        "no JDK with include/jvmti.h found (install a JDK)"
    );
    for path in headers {
        let header = std::fs::read_to_string(&path).unwrap();
        let label = path.display();

        let slots = function_slots(&header);
        macro_rules! check_functions {
            ($($name:ident),*) => {$(
                let index = slots.iter().position(|s| s == stringify!($name))
                    .unwrap_or_else(|| panic!("{label}: no {}", stringify!($name)));
                assert_eq!(slot_of!(sys::jvmtiInterface_1_, $name), index, "{label}: {}", stringify!($name));
            )*};
        }
        check_functions!(
            SetEventNotificationMode,
            RunAgentThread,
            GetThreadInfo,
            GetStackTrace,
            GetTag,
            SetTag,
            FollowReferences,
            GetLoadedClasses,
            GetClassSignature,
            GetSourceFileName,
            GetMethodName,
            GetMethodDeclaringClass,
            GetLineNumberTable,
            CreateRawMonitor,
            RawMonitorEnter,
            RawMonitorExit,
            RawMonitorWait,
            RawMonitorNotifyAll,
            Deallocate,
            GetObjectSize,
            SetEventCallbacks,
            GetPotentialCapabilities,
            AddCapabilities,
            GetSystemProperty,
            GetThreadLocalStorage,
            SetThreadLocalStorage,
            DisposeEnvironment,
            SetHeapSamplingInterval
        );

        let events = struct_members(
            &header,
            "jvmtiEventVMInit VMInit;",
            "} jvmtiEventCallbacks;",
        );
        macro_rules! check_events {
            ($($name:ident),*) => {$(
                let index = events.iter().position(|s| s == stringify!($name))
                    .unwrap_or_else(|| panic!("{label}: no event {}", stringify!($name)));
                assert_eq!(slot_of!(sys::jvmtiEventCallbacks, $name), index, "{label}: {}", stringify!($name));
            )*};
        }
        check_events!(VMInit, VMDeath, GarbageCollectionFinish, SampledObjectAlloc);

        let heap = struct_members(
            &header,
            "jvmtiHeapIterationCallback heap_iteration_callback;",
            "};",
        );
        assert_eq!(
            slot_of!(sys::jvmtiHeapCallbacks, heap_reference_callback),
            heap.iter()
                .position(|s| s == "heap_reference_callback")
                .unwrap()
        );
        assert_eq!(
            slot_of!(sys::jvmtiHeapCallbacks, array_primitive_value_callback),
            heap.iter()
                .position(|s| s == "array_primitive_value_callback")
                .unwrap(),
            "{label}"
        );

        let bits = capability_bits(&header);
        let bit_of = |set: fn(&mut sys::jvmtiCapabilities)| {
            let mut caps = crate::jvmti::empty_capabilities();
            set(&mut caps);
            // SAFETY: reading the plain-old-data struct as bytes.
            let bytes: [u8; 16] = unsafe { std::mem::transmute(caps) };
            let word = u128::from_le_bytes(bytes);
            assert_eq!(word.count_ones(), 1);
            word.trailing_zeros() as usize
        };
        for (name, set) in [
            (
                "can_tag_objects",
                (|c: &mut sys::jvmtiCapabilities| c.set_can_tag_objects(1)) as fn(&mut _),
            ),
            ("can_generate_garbage_collection_events", |c| {
                c.set_can_generate_garbage_collection_events(1)
            }),
            ("can_generate_sampled_object_alloc_events", |c| {
                c.set_can_generate_sampled_object_alloc_events(1)
            }),
            ("can_get_line_numbers", |c| c.set_can_get_line_numbers(1)),
            ("can_get_source_file_name", |c| {
                c.set_can_get_source_file_name(1)
            }),
        ] {
            let index = bits
                .iter()
                .position(|b| b == name)
                .unwrap_or_else(|| panic!("{label}: no {name}"));
            assert_eq!(bit_of(set), index, "{label}: {name}");
        }

        for (name, ours) in [
            (
                "JVMTI_HEAP_REFERENCE_CLASS",
                sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_CLASS as i64,
            ),
            (
                "JVMTI_HEAP_REFERENCE_FIELD",
                sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD as i64,
            ),
            (
                "JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT",
                sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT as i64,
            ),
            (
                "JVMTI_HEAP_REFERENCE_STATIC_FIELD",
                sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STATIC_FIELD as i64,
            ),
            ("JVMTI_VISIT_OBJECTS", sys::JVMTI_VISIT_OBJECTS as i64),
            ("JVMTI_VISIT_ABORT", sys::JVMTI_VISIT_ABORT as i64),
            (
                "JVMTI_EVENT_VM_INIT",
                sys::jvmtiEvent_JVMTI_EVENT_VM_INIT as i64,
            ),
            (
                "JVMTI_EVENT_VM_DEATH",
                sys::jvmtiEvent_JVMTI_EVENT_VM_DEATH as i64,
            ),
            (
                "JVMTI_EVENT_GARBAGE_COLLECTION_FINISH",
                sys::jvmtiEvent_JVMTI_EVENT_GARBAGE_COLLECTION_FINISH as i64,
            ),
            (
                "JVMTI_EVENT_SAMPLED_OBJECT_ALLOC",
                sys::jvmtiEvent_JVMTI_EVENT_SAMPLED_OBJECT_ALLOC as i64,
            ),
            ("JVMTI_VERSION_11", sys::JVMTI_VERSION_11 as i64),
        ] {
            assert_eq!(constant(&header, name), ours, "{label}: {name}");
        }
    }
}
