//! Threads' names, for roots named as the agent names them (`thread "main"`, `local in
//! App.run(App.java:12) of thread "worker-3"`).
//!
//! A name is a `String`'s `byte[]`, and the graph says which array: thread -> `name` -> `value`.
//! Its bytes are read by a third pass that wants only those arrays and stops once it has them
//! all: a JVM names most of its threads early, so their arrays are near the start of the heap,
//! and of the file (a `new String` wraps an array made before it, so no earlier pass can know
//! the array when it meets it).

use std::collections::{HashMap, HashSet};

use crate::heap::{Heap, NONE};
use crate::input::Input;
use crate::records::{self, Visitor};
use crate::DumpError;

/// Thread object -> its name.
pub fn thread_names(
    heap: &Heap,
    open: &dyn Fn() -> Result<Input, DumpError>,
) -> Result<HashMap<u32, String>, DumpError> {
    // Thread object -> the array of its name.
    let mut arrays: HashMap<u32, u32> = HashMap::new();
    for &t in heap.thread_objects.values() {
        if let Some(array) = field(heap, t, "name").and_then(|s| field(heap, s, "value")) {
            arrays.insert(t, array);
        }
    }
    if arrays.is_empty() {
        return Ok(HashMap::new());
    }
    let wanted_objects: HashSet<u32> = arrays.values().copied().collect();
    let mut wanted: HashMap<u64, Option<Vec<u8>>> = HashMap::new();
    for (at, &o) in heap.by_address.iter().enumerate() {
        if wanted_objects.contains(&o) {
            wanted.insert(heap.sorted_ids[at], None);
        }
    }
    let mut pass = Names {
        missing: wanted.len(),
        wanted,
    };
    records::read(&mut open()?, &mut pass).or_else(|e| {
        // What the first two passes read whole cannot fail here but by a change to the file.
        if pass.missing == 0 {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    let id_of: HashMap<u32, u64> = heap
        .by_address
        .iter()
        .enumerate()
        .filter(|(_, o)| wanted_objects.contains(o))
        .map(|(at, &o)| (o, heap.sorted_ids[at]))
        .collect();
    Ok(arrays
        .into_iter()
        .filter_map(|(t, array)| {
            let bytes = pass.wanted.get(id_of.get(&array)?)?.as_ref()?;
            Some((t, decode(bytes)))
        })
        .collect())
}

/// The object `o`'s field `name` references, if any.
fn field(heap: &Heap, o: u32, name: &str) -> Option<u32> {
    let c = heap.class_of[o as usize];
    if c == NONE || heap.is_mirror(o) {
        return None;
    }
    let slot = heap.classes[c as usize]
        .ref_fields
        .iter()
        .position(|(_, n)| n == name)?;
    let (targets, slots) = heap.references(o);
    targets
        .iter()
        .zip(slots)
        .find(|(_, &s)| s as usize == slot)
        .map(|(&t, _)| t)
}

/// A compact string's bytes: Latin-1, or UTF-16 in the dumping machine's order (little-endian
/// on x86 and aarch64; `String.coder` is a primitive field, which the graph does not keep, so
/// UTF-16 is told by its zero high bytes).
fn decode(bytes: &[u8]) -> String {
    let utf16 = bytes.len() >= 2
        && bytes.len().is_multiple_of(2)
        && bytes.iter().skip(1).step_by(2).all(|&b| b == 0);
    if utf16 {
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        bytes.iter().map(|&b| b as char).collect()
    }
}

struct Names {
    wanted: HashMap<u64, Option<Vec<u8>>>,
    missing: usize,
}

impl Visitor for Names {
    fn wants_bodies(&self) -> bool {
        false
    }
    fn wants_primitive(&self, id: u64) -> bool {
        matches!(self.wanted.get(&id), Some(None))
    }
    fn primitive_data(&mut self, id: u64, data: &[u8]) {
        if let Some(slot @ None) = self.wanted.get_mut(&id) {
            *slot = Some(data.to_vec());
            self.missing -= 1;
        }
    }
    fn done(&self) -> bool {
        self.missing == 0
    }
}
