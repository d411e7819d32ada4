//! A dump read into compact arrays: every object by a dense index (its order in the file), its
//! class, its array length, and its references as one flat list (CSR).
//!
//! Two passes over the file: the first keeps classes, names, roots, threads' stacks and every
//! object's id; between them the ids are sorted once so a reference resolves by a bucketed
//! search; the second records each object's class and references. Per object this holds the
//! id (8 bytes), its position in id order (4), class (4), length (4) and edge offset (8); per
//! reference its target (4) and field slot (1). Nothing per object is a map.

use std::collections::HashMap;

use memcity_proto::names;

use crate::input::Input;
use crate::records::{self, ClassDump, RootRecord, Visitor, TYPE_OBJECT};
use crate::DumpError;

/// "No object": a class without a mirror in the dump, a superclass of `java.lang.Object`.
pub const NONE: u32 = u32::MAX;

/// A slot that names no field: an array's element, or past the 255 fields a slot tells apart.
pub const SLOT_ELEMENT: u8 = 255;
/// A class object's references that are not its statics (MAT's edges to the superclass and
/// the class loader: they keep classes and loaders alive in the dominator tree).
pub const SLOT_SUPER: u8 = 253;
pub const SLOT_LOADER: u8 = 254;
/// Statics past this index share it.
const SLOT_LAST: u8 = 252;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Instance,
    ObjectArray,
    /// Elements of this basic type (records' codes).
    PrimitiveArray(u8),
}

#[derive(Debug)]
pub struct Class {
    /// The class's id in the dump (its mirror's address).
    pub id: u64,
    /// Java name: `java.lang.String`, `byte[]`.
    pub name: String,
    pub shape: Shape,
    /// The object index of its `java.lang.Class` mirror.
    pub object: u32,
    pub super_class: u32,
    /// The loader's object id (0: the boot loader).
    pub loader: u64,
    /// Reference fields of an instance, in the dump's value order (own fields, then the
    /// superclass's): byte offset into the values and the field's name.
    pub ref_fields: Vec<(u32, String)>,
    /// Sum of the instance fields' sizes in the JVM with references at 4 and at 8 bytes:
    /// the sizes' layouts need both.
    pub field_bytes: [u32; 2],
    /// Static fields: name, basic type, value.
    pub statics: Vec<(String, u8, u64)>,
    /// Slot of `java.lang.ref.Reference.referent` in `ref_fields`, for `Reference` subclasses.
    pub referent: Option<u8>,
}

/// What a root record names, with the object it roots.
#[derive(Clone, Copy, Debug)]
pub struct RootEntry {
    pub kind: RootRecord,
    pub object: u32,
}

/// A stack frame of a thread's trace, named.
#[derive(Clone, Debug)]
pub struct FrameName {
    /// `Class.method(File.java:line)`.
    pub name: String,
}

pub struct Heap {
    pub id_size: usize,
    /// When the dump began, milliseconds since the Unix epoch (the header's).
    pub time_ms: u64,
    pub classes: Vec<Class>,
    /// Index of `java.lang.Class`, the class of every mirror.
    pub class_class: u32,
    /// Per object (file order).
    pub class_of: Vec<u32>,
    pub length: Vec<u32>,
    pub edge_start: Vec<u64>,
    pub edges: Vec<u32>,
    pub slots: Vec<u8>,
    /// Object ids in ascending order, and each one's object index.
    pub sorted_ids: Vec<u64>,
    pub by_address: Vec<u32>,
    pub roots: Vec<RootEntry>,
    /// (mirror object, its class), sorted by object.
    pub mirrors: Vec<(u32, u32)>,
    /// Thread serial -> its trace's frames, top first.
    pub stacks: HashMap<u32, Vec<FrameName>>,
    /// Thread serial -> the thread object.
    pub thread_objects: HashMap<u32, u32>,
    /// Thread object -> its name (`Thread.name`).
    pub thread_names: HashMap<u32, String>,
    /// Classes the dump lists (LOAD CLASS) but does not describe: not fully loaded when it was
    /// taken, so HotSpot skipped them. Their mirrors exist, and the histogram counts them.
    pub undumped_classes: u64,
    /// References to ids that are no object of the dump (CDS objects the dumper masks, or a
    /// damaged dump): left out of the graph.
    pub dangling: u64,
    /// Whether the file was gzip-compressed, and its size on disk.
    pub compressed: bool,
}

impl Heap {
    pub fn objects(&self) -> usize {
        self.class_of.len()
    }

    /// The references of object `o`: targets and the slots they were read from.
    pub fn references(&self, o: u32) -> (&[u32], &[u8]) {
        let range = self.edge_start[o as usize] as usize..self.edge_start[o as usize + 1] as usize;
        (&self.edges[range.clone()], &self.slots[range])
    }

    /// The field a reference of `o` at `slot` was read from: `next`, `[]` for array elements,
    /// `static NAME` for a class's statics.
    pub fn field_name(&self, o: u32, slot: u8) -> String {
        let class = &self.classes[self.class_of[o as usize] as usize];
        if self.class_of[o as usize] == self.class_class && self.is_mirror(o) {
            return match slot {
                SLOT_SUPER => "<superclass>".into(),
                SLOT_LOADER => "<classloader>".into(),
                _ => "<static>".into(),
            };
        }
        match class.shape {
            Shape::Instance => class
                .ref_fields
                .get(slot as usize)
                .filter(|_| slot != SLOT_ELEMENT)
                .map(|(_, name)| name.clone())
                .unwrap_or_else(|| "<field>".into()),
            _ => "[]".into(),
        }
    }

    /// Whether object `o` is a class's mirror (a CLASS_DUMP), not an instance.
    pub fn is_mirror(&self, o: u32) -> bool {
        self.length[o as usize] == MIRROR
    }

    /// The class whose mirror object `o` is.
    pub fn mirror_class(&self, o: u32) -> Option<u32> {
        let at = self.mirrors.binary_search_by_key(&o, |&(m, _)| m).ok()?;
        Some(self.mirrors[at].1)
    }

    /// The object index of an id, if the dump holds that object.
    pub fn index_of(&self, id: u64) -> Option<u32> {
        self.sorted_ids
            .binary_search(&id)
            .ok()
            .map(|at| self.by_address[at])
    }
}

/// `length` of a class's mirror: arrays' lengths never reach it (u32::MAX elements is past
/// any JVM's array limit).
pub const MIRROR: u32 = u32::MAX;

/// Reads the objects and references of the dump `open` gives, in two passes (its threads'
/// names are a third, `threads.rs`).
pub fn read_graph(open: &dyn Fn() -> Result<Input, DumpError>) -> Result<Heap, DumpError> {
    let mut phases = crate::phases::Phases::start();
    let mut input = open()?;
    let mut scan = Scan::default();
    records::read(&mut input, &mut scan)?;
    let compressed = input.compressed();
    drop(input);
    phases.done("pass 1");
    let mut heap = scan.into_heap(compressed)?;
    phases.done("ids sorted");
    let mut input = open()?;
    let mut graph = Graph::new(&mut heap);
    records::read(&mut input, &mut graph)?;
    graph.finish()?;
    phases.done("pass 2");
    Ok(heap)
}

/// Pass 1.
#[derive(Default)]
struct Scan {
    id_size: usize,
    time_ms: u64,
    strings: HashMap<u64, Box<[u8]>>,
    class_names: HashMap<u64, u64>,
    class_serials: HashMap<u32, u64>,
    frames: HashMap<u64, (u64, u64, u32, i32)>,
    traces: HashMap<u32, (u32, Vec<u64>)>,
    roots: Vec<(RootRecord, u64)>,
    class_dumps: Vec<ClassDump>,
    /// Every object's id, in file order (class dumps included: mirrors are objects).
    ids: Vec<u64>,
    /// Primitive array element types met.
    primitive_types: [bool; 12],
}

impl Visitor for Scan {
    fn header(&mut self, id_size: usize, time_ms: u64) {
        self.id_size = id_size;
        self.time_ms = time_ms;
    }
    fn string(&mut self, id: u64, utf8: &[u8]) {
        self.strings.insert(id, utf8.into());
    }
    fn load_class(&mut self, serial: u32, class: u64, name: u64) {
        self.class_names.insert(class, name);
        self.class_serials.insert(serial, class);
    }
    fn frame(
        &mut self,
        id: u64,
        method: u64,
        _signature: u64,
        file: u64,
        class_serial: u32,
        line: i32,
    ) {
        self.frames.insert(id, (method, file, class_serial, line));
    }
    fn trace(&mut self, serial: u32, thread: u32, frames: &[u64]) {
        self.traces.insert(serial, (thread, frames.to_vec()));
    }
    fn root(&mut self, kind: RootRecord, object: u64) {
        self.roots.push((kind, object));
    }
    fn class_dump(&mut self, class: ClassDump) {
        self.ids.push(class.id);
        self.class_dumps.push(class);
    }
    fn wants_bodies(&self) -> bool {
        false
    }
    fn instance(&mut self, id: u64, _class: u64, _values: &[u8]) {
        self.ids.push(id);
    }
    fn object_array(&mut self, id: u64, _class: u64, _length: u32) {
        self.ids.push(id);
    }
    fn primitive_array(&mut self, id: u64, ty: u8, _length: u32) {
        self.ids.push(id);
        self.primitive_types[ty as usize] = true;
    }
}

impl Scan {
    fn name(&self, symbol: u64) -> String {
        self.strings
            .get(&symbol)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_else(|| format!("<symbol 0x{symbol:x}>"))
    }

    fn into_heap(self, compressed: bool) -> Result<Heap, DumpError> {
        let objects = self.ids.len();
        if objects >= NONE as usize - 1 {
            return Err(DumpError::TooBig { objects });
        }
        let (order, sorted_ids) = self.sorted()?;
        let index_of = |id: u64| sorted_ids.binary_search(&id).ok().map(|at| order[at]);
        let (mut classes, class_by_id) = self.classes(&index_of);
        self.lay_out(&mut classes);
        let class_class = match classes.iter().position(|c| c.name == "java.lang.Class") {
            Some(c) => c as u32,
            None => {
                classes.push(synthetic("java.lang.Class", Shape::Instance));
                (classes.len() - 1) as u32
            }
        };
        // Primitive arrays name no class: each is the class of its element type's name.
        for ty in 4u8..=11 {
            let name = java_name(records::primitive_array_name(ty));
            if self.primitive_types[ty as usize] && !classes.iter().any(|c| c.name == name) {
                classes.push(synthetic(&name, Shape::PrimitiveArray(ty)));
            }
        }
        let (roots, thread_objects, stacks) = self.roots(&index_of);
        let mut mirrors: Vec<(u32, u32)> = classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.object != NONE)
            .map(|(i, c)| (c.object, i as u32))
            .collect();
        mirrors.sort_unstable();
        let undumped = self
            .class_names
            .keys()
            .filter(|id| !class_by_id.contains_key(id))
            .count() as u64;
        Ok(Heap {
            id_size: self.id_size,
            time_ms: self.time_ms,
            classes,
            class_class,
            class_of: vec![NONE; objects],
            length: vec![0; objects],
            edge_start: Vec::with_capacity(objects + 1),
            edges: Vec::new(),
            slots: Vec::new(),
            sorted_ids,
            by_address: order,
            roots,
            mirrors,
            stacks,
            thread_objects,
            thread_names: HashMap::new(),
            undumped_classes: undumped,
            dangling: 0,
            compressed,
        })
    }

    /// The objects in id (address) order, and their ids in that order; two objects of one id
    /// are damage.
    fn sorted(&self) -> Result<(Vec<u32>, Vec<u64>), DumpError> {
        let mut order: Vec<u32> = (0..self.ids.len() as u32).collect();
        order.sort_unstable_by_key(|&o| self.ids[o as usize]);
        let sorted_ids: Vec<u64> = order.iter().map(|&o| self.ids[o as usize]).collect();
        if let Some(w) = sorted_ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(DumpError::Malformed {
                offset: 0,
                what: format!("two objects with the id 0x{:x}", w[0]),
            });
        }
        Ok((order, sorted_ids))
    }

    /// The classes the dump describes, named, with their superclasses; and each one's index by
    /// its id.
    fn classes(&self, index_of: &dyn Fn(u64) -> Option<u32>) -> (Vec<Class>, HashMap<u64, u32>) {
        let mut classes = Vec::with_capacity(self.class_dumps.len() + 8);
        let mut class_by_id: HashMap<u64, u32> = HashMap::new();
        for dump in &self.class_dumps {
            let internal = self
                .class_names
                .get(&dump.id)
                .map(|&n| self.name(n))
                .unwrap_or_else(|| format!("<class 0x{:x}>", dump.id));
            class_by_id.insert(dump.id, classes.len() as u32);
            classes.push(Class {
                id: dump.id,
                name: java_name(&internal),
                shape: shape_of(&internal),
                object: index_of(dump.id).unwrap_or(NONE),
                super_class: NONE,
                loader: dump.loader,
                ref_fields: Vec::new(),
                field_bytes: [0, 0],
                statics: dump
                    .statics
                    .iter()
                    .map(|s| (self.name(s.name), s.ty, s.value))
                    .collect(),
                referent: None,
            });
        }
        for (c, dump) in self.class_dumps.iter().enumerate() {
            classes[c].super_class = class_by_id.get(&dump.super_id).copied().unwrap_or(NONE);
        }
        (classes, class_by_id)
    }

    /// Instance layouts: own fields first, then each superclass's, as INSTANCE_DUMP orders them.
    fn lay_out(&self, classes: &mut [Class]) {
        for c in 0..classes.len() {
            let mut offset = 0u32;
            let mut bytes = [0u32; 2];
            let mut fields = Vec::new();
            let mut referent = None;
            let mut at = c as u32;
            let mut depth = 0;
            while at != NONE && depth < 64 {
                let dump = &self.class_dumps[at as usize];
                let declaring = &classes[at as usize].name;
                for f in &dump.fields {
                    let size = records::type_size(f.ty, self.id_size).unwrap_or(0) as u32;
                    if f.ty == TYPE_OBJECT || f.ty == 1 {
                        let name = self.name(f.name);
                        if declaring == "java.lang.ref.Reference" && name == "referent" {
                            referent = Some(fields.len().min(SLOT_ELEMENT as usize - 1) as u8);
                        }
                        fields.push((offset, name));
                        bytes[0] += 4;
                        bytes[1] += 8;
                    } else {
                        bytes[0] += size;
                        bytes[1] += size;
                    }
                    offset += size;
                }
                at = classes[at as usize].super_class;
                depth += 1;
            }
            let class = &mut classes[c];
            class.ref_fields = fields;
            class.field_bytes = bytes;
            class.referent = referent;
        }
    }

    /// The roots whose objects the dump holds (a masked CDS object roots nothing), each thread's
    /// object by its serial, and each thread's stack, named.
    #[allow(clippy::type_complexity)] // three tables read together, each named by its use
    fn roots(
        &self,
        index_of: &dyn Fn(u64) -> Option<u32>,
    ) -> (
        Vec<RootEntry>,
        HashMap<u32, u32>,
        HashMap<u32, Vec<FrameName>>,
    ) {
        let roots: Vec<RootEntry> = self
            .roots
            .iter()
            .filter_map(|&(kind, id)| index_of(id).map(|object| RootEntry { kind, object }))
            .collect();
        let mut thread_objects = HashMap::new();
        let mut stacks = HashMap::new();
        for root in &roots {
            if let RootRecord::Thread { thread, trace } = root.kind {
                thread_objects.insert(thread, root.object);
                if let Some((_, frames)) = self.traces.get(&trace) {
                    let named = frames.iter().map(|f| self.frame_name(*f)).collect();
                    stacks.insert(thread, named);
                }
            }
        }
        (roots, thread_objects, stacks)
    }

    fn frame_name(&self, frame: u64) -> FrameName {
        let Some(&(method, file, class_serial, line)) = self.frames.get(&frame) else {
            return FrameName {
                name: "(unknown frame)".into(),
            };
        };
        let class = self
            .class_serials
            .get(&class_serial)
            .and_then(|id| self.class_names.get(id))
            .map(|&n| java_name(&self.name(n)))
            .unwrap_or_default();
        let file = (file != 0).then(|| self.name(file));
        let line = (line > 0).then_some(line);
        FrameName {
            name: names::frame_name(&class, &self.name(method), file.as_deref(), line),
        }
    }
}

fn synthetic(name: &str, shape: Shape) -> Class {
    Class {
        id: 0,
        name: name.to_owned(),
        shape,
        object: NONE,
        super_class: NONE,
        loader: 0,
        ref_fields: Vec::new(),
        field_bytes: [0, 0],
        statics: Vec::new(),
        referent: None,
    }
}

/// The Java name of a class as hprof names it (`java/lang/String`, `[B`,
/// `pkg/Foo$$Lambda+0x0000000800c01000`): as the agent and `jcmd GC.class_histogram` name it.
pub fn java_name(internal: &str) -> String {
    let signature = if internal.starts_with('[') {
        internal.to_owned()
    } else {
        format!("L{internal};")
    };
    // Hidden classes: HotSpot's symbol spells the suffix with '+', the histogram with '/'.
    names::java_name(&signature).replace("+0x", "/0x")
}

fn shape_of(internal: &str) -> Shape {
    match internal.as_bytes() {
        [b'[', b'L' | b'[', ..] => Shape::ObjectArray,
        [b'[', t] => Shape::PrimitiveArray(match t {
            b'Z' => 4,
            b'C' => 5,
            b'F' => 6,
            b'D' => 7,
            b'B' => 8,
            b'S' => 9,
            b'I' => 10,
            _ => 11,
        }),
        _ => Shape::Instance,
    }
}

/// Pass 2: each object's class, length and references, in the order pass 1 numbered them.
struct Graph<'h> {
    heap: &'h mut Heap,
    class_by_id: HashMap<u64, u32>,
    primitive_class: [u32; 12],
    next: u32,
    /// An object whose id or class does not match pass 1 (the file changed between passes).
    mismatch: Option<String>,
    /// Buckets over the id range: the first sorted position of each, so a reference resolves
    /// by a search of a few ids instead of the whole array.
    bucket_shift: u32,
    bucket_start: Vec<u32>,
    base: u64,
}

impl<'h> Graph<'h> {
    fn new(heap: &'h mut Heap) -> Self {
        let class_by_id = heap
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.object != NONE)
            .map(|(i, c)| (c.id, i as u32))
            .collect();
        let mut primitive_class = [NONE; 12];
        for (i, c) in heap.classes.iter().enumerate() {
            if let Shape::PrimitiveArray(ty) = c.shape {
                primitive_class[ty as usize] = i as u32;
            }
        }
        let (base, bucket_shift, bucket_start) = buckets(&heap.sorted_ids);
        heap.edge_start.push(0);
        Self {
            heap,
            class_by_id,
            primitive_class,
            next: 0,
            mismatch: None,
            bucket_shift,
            bucket_start,
            base,
        }
    }

    fn resolve(&self, id: u64) -> Option<u32> {
        if id < self.base {
            return None;
        }
        let b = ((id - self.base) >> self.bucket_shift) as usize;
        if b + 1 >= self.bucket_start.len() {
            return None;
        }
        let (lo, hi) = (
            self.bucket_start[b] as usize,
            self.bucket_start[b + 1] as usize,
        );
        let ids = &self.heap.sorted_ids[lo..hi];
        ids.binary_search(&id)
            .ok()
            .map(|at| self.heap.by_address[lo + at])
    }

    /// Starts the next object; its index.
    fn begin(&mut self, id: u64, class: u32, length: u32) -> u32 {
        let o = self.next;
        self.next += 1;
        if self.resolve(id) != Some(o) {
            if self.mismatch.is_none() {
                self.mismatch = Some(format!(
                    "object 0x{id:x} is not where the first pass found it"
                ));
            }
        } else if let Some(slot) = self.heap.class_of.get_mut(o as usize) {
            *slot = class;
            self.heap.length[o as usize] = length;
        } else if self.mismatch.is_none() {
            self.mismatch = Some("more objects than in the first pass".into());
        }
        o
    }

    fn end(&mut self) {
        self.heap.edge_start.push(self.heap.edges.len() as u64);
    }

    fn edge(&mut self, id: u64, slot: u8) {
        if id == 0 {
            return;
        }
        match self.resolve(id) {
            Some(target) => {
                self.heap.edges.push(target);
                self.heap.slots.push(slot);
            }
            None => self.heap.dangling += 1,
        }
    }

    fn finish(self) -> Result<(), DumpError> {
        if let Some(problem) = self.mismatch {
            return Err(DumpError::Changed(problem));
        }
        if self.next as usize != self.heap.class_of.len() {
            return Err(DumpError::Changed(format!(
                "{} objects in the second pass, {} in the first",
                self.next,
                self.heap.class_of.len()
            )));
        }
        let heap = self.heap;
        heap.edges.shrink_to_fit();
        heap.slots.shrink_to_fit();
        Ok(())
    }

    fn id_at(&self, values: &[u8], offset: usize) -> u64 {
        let size = self.heap.id_size;
        match values.get(offset..offset + size) {
            Some(b) if size == 8 => u64::from_be_bytes(b.try_into().expect("8 bytes")),
            Some(b) => u32::from_be_bytes(b.try_into().expect("4 bytes")) as u64,
            None => 0,
        }
    }
}

/// About two ids per bucket over the ids' range.
fn buckets(sorted: &[u64]) -> (u64, u32, Vec<u32>) {
    let (Some(&lo), Some(&hi)) = (sorted.first(), sorted.last()) else {
        return (0, 0, vec![0, 0]);
    };
    let span = hi - lo + 1;
    let wanted = (sorted.len() as u64 / 2).max(1);
    let mut shift = 0;
    while (span >> shift) > wanted {
        shift += 1;
    }
    let count = ((span - 1) >> shift) as usize + 1;
    let mut start = Vec::with_capacity(count + 1);
    let mut at = 0usize;
    for b in 0..count as u64 {
        let first = lo + (b << shift);
        while at < sorted.len() && sorted[at] < first {
            at += 1;
        }
        start.push(at as u32);
    }
    start.push(sorted.len() as u32);
    (lo, shift, start)
}

impl Visitor for Graph<'_> {
    fn wants_bodies(&self) -> bool {
        true
    }
    fn class_dump(&mut self, class: ClassDump) {
        self.begin(class.id, self.heap.class_class, MIRROR);
        for (i, s) in class.statics.iter().enumerate() {
            if s.ty == TYPE_OBJECT {
                self.edge(s.value, i.min(SLOT_LAST as usize) as u8);
            }
        }
        self.edge(class.super_id, SLOT_SUPER);
        self.edge(class.loader, SLOT_LOADER);
        self.end();
    }
    fn instance(&mut self, id: u64, class: u64, values: &[u8]) {
        let c = self.class_by_id.get(&class).copied().unwrap_or(NONE);
        if c == NONE && self.mismatch.is_none() {
            self.mismatch = Some(format!(
                "an object of class 0x{class:x}, which the dump does not describe"
            ));
        }
        self.begin(id, c, 0);
        if c != NONE {
            let fields = std::mem::take(&mut self.heap.classes[c as usize].ref_fields);
            for (slot, (offset, _)) in fields.iter().enumerate() {
                let id = self.id_at(values, *offset as usize);
                self.edge(id, slot.min(SLOT_ELEMENT as usize - 1) as u8);
            }
            self.heap.classes[c as usize].ref_fields = fields;
        }
        self.end();
    }
    fn object_array(&mut self, id: u64, class: u64, length: u32) {
        let c = self.class_by_id.get(&class).copied().unwrap_or(NONE);
        if c == NONE && self.mismatch.is_none() {
            self.mismatch = Some(format!(
                "an array of class 0x{class:x}, which the dump does not describe"
            ));
        }
        self.begin(id, c, length);
        self.end();
    }
    fn elements(&mut self, ids: &[u8]) {
        // Elements belong to the array begun last: its end offset moves with them.
        self.heap.edge_start.pop();
        let size = self.heap.id_size;
        for chunk in ids.chunks_exact(size) {
            let id = if size == 8 {
                u64::from_be_bytes(chunk.try_into().expect("8 bytes"))
            } else {
                u32::from_be_bytes(chunk.try_into().expect("4 bytes")) as u64
            };
            self.edge(id, SLOT_ELEMENT);
        }
        self.end();
    }
    fn primitive_array(&mut self, id: u64, ty: u8, length: u32) {
        self.begin(id, self.primitive_class[ty as usize], length);
        self.end();
    }
}
