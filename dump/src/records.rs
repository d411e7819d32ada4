//! The HPROF format as HotSpot writes it (JDK 11 to 25), one pass over a dump's records.
//!
//! A pass hands each record to a [`Visitor`]; the two passes of a load are two visitors over the
//! same parser, and neither materialises records: object bodies a visitor does not want are
//! skipped by their length. Layouts are those of docs/heap-dumps-research.md §1 (HotSpot's
//! `heapDumper.cpp`); every count is checked against its enclosing segment before it is used,
//! so a damaged dump gives an error with its offset, never a read past its records.

use crate::input::Input;
use crate::DumpError;

/// Top-level record tags.
const STRING: u8 = 0x01;
const LOAD_CLASS: u8 = 0x02;
const FRAME: u8 = 0x04;
const TRACE: u8 = 0x05;
const HEAP_DUMP: u8 = 0x0C;
const HEAP_DUMP_SEGMENT: u8 = 0x1C;
const HEAP_DUMP_END: u8 = 0x2C;
/// Tags the format defines that carry nothing memcity reads (HotSpot writes none of them).
const OTHER_KNOWN: [u8; 9] = [0x03, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0D, 0x0E];

/// Heap dump sub-record tags.
const ROOT_UNKNOWN: u8 = 0xFF;
const ROOT_JNI_GLOBAL: u8 = 0x01;
const ROOT_JNI_LOCAL: u8 = 0x02;
const ROOT_JAVA_FRAME: u8 = 0x03;
const ROOT_NATIVE_STACK: u8 = 0x04;
const ROOT_STICKY_CLASS: u8 = 0x05;
const ROOT_THREAD_BLOCK: u8 = 0x06;
const ROOT_MONITOR_USED: u8 = 0x07;
const ROOT_THREAD_OBJECT: u8 = 0x08;
const CLASS_DUMP: u8 = 0x20;
const INSTANCE_DUMP: u8 = 0x21;
const OBJ_ARRAY_DUMP: u8 = 0x22;
const PRIM_ARRAY_DUMP: u8 = 0x23;

/// Basic type codes of fields and primitive arrays.
pub const TYPE_OBJECT: u8 = 2;
pub const TYPE_BOOLEAN: u8 = 4;
pub const TYPE_LONG: u8 = 11;

/// The size of a value of basic type `ty` (object references: `id_size`); None for a code the
/// format does not define.
pub fn type_size(ty: u8, id_size: usize) -> Option<usize> {
    Some(match ty {
        1 | TYPE_OBJECT => id_size,
        4 | 8 => 1,
        5 | 9 => 2,
        6 | 10 => 4,
        7 | TYPE_LONG => 8,
        _ => return None,
    })
}

/// The hprof name of the primitive array class of element type `ty` (`[B`).
pub fn primitive_array_name(ty: u8) -> &'static str {
    match ty {
        4 => "[Z",
        5 => "[C",
        6 => "[F",
        7 => "[D",
        8 => "[B",
        9 => "[S",
        10 => "[I",
        _ => "[J",
    }
}

/// A GC root record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootRecord {
    Unknown,
    JniGlobal,
    JniLocal { thread: u32, frame: u32 },
    JavaFrame { thread: u32, frame: u32 },
    NativeStack { thread: u32 },
    StickyClass,
    ThreadBlock { thread: u32 },
    MonitorUsed,
    Thread { thread: u32, trace: u32 },
}

/// A field of a class: its name's symbol id and basic type.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: u64,
    pub ty: u8,
}

/// A static field and its value (a reference's id for objects; primitives as read).
#[derive(Clone, Copy, Debug)]
pub struct Static {
    pub name: u64,
    pub ty: u8,
    pub value: u64,
}

/// A CLASS_DUMP: a loaded class, its superclass, loader, statics and own instance fields.
#[derive(Clone, Debug)]
pub struct ClassDump {
    pub id: u64,
    pub super_id: u64,
    pub loader: u64,
    pub statics: Vec<Static>,
    pub fields: Vec<Field>,
}

/// What a pass does with each record. Every method has a default that ignores the record.
pub trait Visitor {
    fn header(&mut self, _id_size: usize, _time_ms: u64) {}
    fn string(&mut self, _id: u64, _utf8: &[u8]) {}
    fn load_class(&mut self, _serial: u32, _class: u64, _name: u64) {}
    fn frame(
        &mut self,
        _id: u64,
        _method: u64,
        _signature: u64,
        _file: u64,
        _class_serial: u32,
        _line: i32,
    ) {
    }
    fn trace(&mut self, _serial: u32, _thread: u32, _frames: &[u64]) {}
    fn root(&mut self, _kind: RootRecord, _object: u64) {}
    fn class_dump(&mut self, _class: ClassDump) {}
    /// Whether this pass reads objects' fields and elements (false: they are skipped).
    fn wants_bodies(&self) -> bool;
    fn instance(&mut self, _id: u64, _class: u64, _values: &[u8]) {}
    /// An object array; its elements follow in [`Visitor::elements`] calls when the pass wants bodies.
    fn object_array(&mut self, _id: u64, _class: u64, _length: u32) {}
    /// Consecutive elements of the last object array, as raw ids.
    fn elements(&mut self, _ids: &[u8]) {}
    fn primitive_array(&mut self, _id: u64, _ty: u8, _length: u32) {}
    /// Whether this pass wants the elements of primitive array `id` (at most a MiB of them),
    /// given to [`Visitor::primitive_data`] before `primitive_array`.
    fn wants_primitive(&self, _id: u64) -> bool {
        false
    }
    fn primitive_data(&mut self, _id: u64, _data: &[u8]) {}
    /// Whether this pass has all it wanted: the read ends there.
    fn done(&self) -> bool {
        false
    }
}

/// Reads the whole dump through `visitor`.
pub fn read(input: &mut Input, visitor: &mut dyn Visitor) -> Result<(), DumpError> {
    header(input, visitor)?;
    let mut ended = false;
    while !input.at_end()? {
        let at = input.offset();
        let tag = input.u8("a record's tag")?;
        input.u32("a record's time")?;
        let length = input.u32("a record's length")? as u64;
        match tag {
            STRING => {
                let id_size = input.id_size() as u64;
                if length < id_size {
                    return Err(malformed(at, "a string record shorter than its id"));
                }
                let id = input.id("a string's id")?;
                let text = (length - id_size) as usize;
                if text > 1 << 20 {
                    input.skip(text as u64, "a string")?;
                } else {
                    let bytes = input.bytes(text, "a string")?;
                    visitor.string(id, bytes);
                }
            }
            LOAD_CLASS => {
                let serial = input.u32("a class's serial")?;
                let class = input.id("a class's id")?;
                input.u32("a class's trace")?;
                let name = input.id("a class's name")?;
                expect_consumed(input, at, length, "LOAD CLASS")?;
                visitor.load_class(serial, class, name);
            }
            FRAME => {
                let id = input.id("a frame's id")?;
                let method = input.id("a frame's method")?;
                let signature = input.id("a frame's signature")?;
                let file = input.id("a frame's source file")?;
                let class = input.u32("a frame's class")?;
                let line = input.u32("a frame's line")? as i32;
                expect_consumed(input, at, length, "STACK FRAME")?;
                visitor.frame(id, method, signature, file, class, line);
            }
            TRACE => {
                let serial = input.u32("a trace's serial")?;
                let thread = input.u32("a trace's thread")?;
                let count = input.u32("a trace's frame count")? as u64;
                if 12 + count * input.id_size() as u64 != length {
                    return Err(malformed(
                        at,
                        "a stack trace whose frame count does not match its length",
                    ));
                }
                let mut frames = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    frames.push(input.id("a trace's frame")?);
                }
                visitor.trace(serial, thread, &frames);
            }
            HEAP_DUMP | HEAP_DUMP_SEGMENT => {
                segment(input, visitor, length)?;
                if visitor.done() {
                    return Ok(());
                }
            }
            HEAP_DUMP_END => {
                input.skip(length, "the heap dump's end")?;
                ended = true;
            }
            tag if OTHER_KNOWN.contains(&tag) => input.skip(length, "a record")?,
            tag => {
                return Err(malformed(
                    at,
                    &format!(
                    "an unknown record tag 0x{tag:02x} (HotSpot writes 0x01-0x0E, 0x1C and 0x2C)"
                ),
                ))
            }
        }
    }
    if !ended {
        return Err(DumpError::Truncated {
            offset: input.offset(),
            what: "the heap dump's end record (the dump was cut short, or is still being written)"
                .into(),
        });
    }
    Ok(())
}

/// The time in a dump's header, milliseconds since the Unix epoch.
pub fn header_time(input: &mut Input) -> Result<u64, DumpError> {
    struct Time(u64);
    impl Visitor for Time {
        fn header(&mut self, _id_size: usize, time_ms: u64) {
            self.0 = time_ms;
        }
        fn wants_bodies(&self) -> bool {
            false
        }
    }
    let mut time = Time(0);
    header(input, &mut time)?;
    Ok(time.0)
}

fn header(input: &mut Input, visitor: &mut dyn Visitor) -> Result<(), DumpError> {
    const MAGIC: &[u8] = b"JAVA PROFILE ";
    let start = input.bytes(MAGIC.len(), "the header")?;
    if start != MAGIC {
        return Err(DumpError::NotADump);
    }
    let mut version = Vec::new();
    loop {
        let b = input.u8("the header's version")?;
        if b == 0 {
            break;
        }
        version.push(b);
        if version.len() > 16 {
            return Err(malformed(0, "a header version without its terminating NUL"));
        }
    }
    if !matches!(&version[..], b"1.0.1" | b"1.0.2") {
        return Err(DumpError::Unsupported(format!(
            "format JAVA PROFILE {} (memcity reads HotSpot's 1.0.1 and 1.0.2; Android's 1.0.3 needs `hprof-conv` first)",
            String::from_utf8_lossy(&version)
        )));
    }
    let id_size = input.u32("the header's id size")? as usize;
    if id_size != 4 && id_size != 8 {
        return Err(malformed(
            input.offset() - 4,
            &format!("an id size of {id_size} (4 or 8)"),
        ));
    }
    input.set_id_size(id_size);
    let time_ms = input.u64("the header's time")?;
    visitor.header(id_size, time_ms);
    Ok(())
}

fn expect_consumed(input: &Input, at: u64, length: u64, what: &str) -> Result<(), DumpError> {
    if input.offset() != at + 9 + length {
        return Err(malformed(
            at,
            &format!("a {what} record of length {length}"),
        ));
    }
    Ok(())
}

fn malformed(offset: u64, what: &str) -> DumpError {
    DumpError::Malformed {
        offset,
        what: what.to_owned(),
    }
}

/// The sub-records of one HEAP DUMP (SEGMENT) of `length` bytes.
fn segment(input: &mut Input, visitor: &mut dyn Visitor, length: u64) -> Result<(), DumpError> {
    let end = input.offset() + length;
    let id = input.id_size() as u64;
    let bodies = visitor.wants_bodies();
    while input.offset() < end {
        let at = input.offset();
        let left = end - at;
        let tag = input.u8("a heap dump sub-record's tag")?;
        // The fixed part of each sub-record, checked against the segment before it is read.
        let fixed = match tag {
            ROOT_UNKNOWN | ROOT_STICKY_CLASS | ROOT_MONITOR_USED => id,
            ROOT_JNI_GLOBAL => 2 * id,
            ROOT_JNI_LOCAL | ROOT_JAVA_FRAME | ROOT_THREAD_OBJECT => id + 8,
            ROOT_NATIVE_STACK | ROOT_THREAD_BLOCK => id + 4,
            CLASS_DUMP => 7 * id + 8,
            INSTANCE_DUMP => 2 * id + 8,
            OBJ_ARRAY_DUMP => 2 * id + 8,
            PRIM_ARRAY_DUMP => id + 9,
            tag => {
                return Err(malformed(
                    at,
                    &format!("an unknown heap dump sub-record 0x{tag:02x} (not a HotSpot dump, or damaged here)"),
                ))
            }
        };
        if 1 + fixed > left {
            return Err(malformed(at, "a sub-record running past its segment"));
        }
        match tag {
            CLASS_DUMP => class_dump(input, visitor, at, end)?,
            INSTANCE_DUMP => instance(input, visitor, at, end, bodies)?,
            OBJ_ARRAY_DUMP => object_array(input, visitor, at, end, bodies)?,
            PRIM_ARRAY_DUMP => {
                if primitive_array(input, visitor, at, end)? {
                    return Ok(());
                }
            }
            _ => root(input, visitor, tag)?,
        }
    }
    if input.offset() != end {
        return Err(malformed(end, "a sub-record running past its segment"));
    }
    Ok(())
}

/// A root sub-record, its tag read.
fn root(input: &mut Input, visitor: &mut dyn Visitor, tag: u8) -> Result<(), DumpError> {
    match tag {
        ROOT_UNKNOWN | ROOT_STICKY_CLASS | ROOT_MONITOR_USED => {
            let object = input.id("a root")?;
            let kind = match tag {
                ROOT_UNKNOWN => RootRecord::Unknown,
                ROOT_STICKY_CLASS => RootRecord::StickyClass,
                _ => RootRecord::MonitorUsed,
            };
            visitor.root(kind, object);
        }
        ROOT_JNI_GLOBAL => {
            let object = input.id("a JNI global")?;
            input.id("a JNI global's handle")?;
            visitor.root(RootRecord::JniGlobal, object);
        }
        ROOT_JNI_LOCAL | ROOT_JAVA_FRAME => {
            let object = input.id("a local")?;
            let thread = input.u32("a local's thread")?;
            let frame = input.u32("a local's frame")?;
            let kind = if tag == ROOT_JNI_LOCAL {
                RootRecord::JniLocal { thread, frame }
            } else {
                RootRecord::JavaFrame { thread, frame }
            };
            visitor.root(kind, object);
        }
        ROOT_THREAD_OBJECT => {
            let object = input.id("a thread")?;
            let thread = input.u32("a thread's serial")?;
            let trace = input.u32("a thread's trace")?;
            visitor.root(RootRecord::Thread { thread, trace }, object);
        }
        ROOT_NATIVE_STACK | ROOT_THREAD_BLOCK => {
            let object = input.id("a root")?;
            let thread = input.u32("a root's thread")?;
            let kind = if tag == ROOT_NATIVE_STACK {
                RootRecord::NativeStack { thread }
            } else {
                RootRecord::ThreadBlock { thread }
            };
            visitor.root(kind, object);
        }
        _ => unreachable!("sub-record tags are checked before"),
    }
    Ok(())
}

/// An INSTANCE DUMP, its tag read at `at`.
fn instance(
    input: &mut Input,
    visitor: &mut dyn Visitor,
    at: u64,
    end: u64,
    bodies: bool,
) -> Result<(), DumpError> {
    let object = input.id("an object's id")?;
    input.u32("an object's trace")?;
    let class = input.id("an object's class")?;
    let n = input.u32("an object's size")? as u64;
    if n > end - input.offset() {
        return Err(malformed(at, "an object whose fields run past its segment"));
    }
    if bodies && n <= 1 << 20 {
        let values = input.bytes(n as usize, "an object's fields")?;
        visitor.instance(object, class, values);
    } else {
        // An instance of over a MiB of fields does not exist; the pass still counts it.
        input.skip(n, "an object's fields")?;
        visitor.instance(object, class, &[]);
    }
    Ok(())
}

/// An OBJ ARRAY DUMP, its tag read at `at`.
fn object_array(
    input: &mut Input,
    visitor: &mut dyn Visitor,
    at: u64,
    end: u64,
    bodies: bool,
) -> Result<(), DumpError> {
    let id = input.id_size() as u64;
    let object = input.id("an array's id")?;
    input.u32("an array's trace")?;
    let length = input.u32("an array's length")?;
    let class = input.id("an array's class")?;
    let n = length as u64 * id;
    if n > end - input.offset() {
        return Err(malformed(
            at,
            "an array whose elements run past its segment",
        ));
    }
    visitor.object_array(object, class, length);
    if bodies {
        let chunk = (1 << 16) * id as usize;
        let mut rest = n as usize;
        while rest > 0 {
            let step = rest.min(chunk);
            let ids = input.bytes(step, "an array's elements")?;
            visitor.elements(ids);
            rest -= step;
        }
    } else {
        input.skip(n, "an array's elements")?;
    }
    Ok(())
}

/// A PRIM ARRAY DUMP, its tag read at `at`; whether the visitor has all it wanted.
fn primitive_array(
    input: &mut Input,
    visitor: &mut dyn Visitor,
    at: u64,
    end: u64,
) -> Result<bool, DumpError> {
    let id = input.id_size() as u64;
    let object = input.id("an array's id")?;
    input.u32("an array's trace")?;
    let length = input.u32("an array's length")?;
    let ty = input.u8("an array's type")?;
    let Some(size) = type_size(ty, id as usize).filter(|_| ty >= TYPE_BOOLEAN) else {
        return Err(malformed(at, &format!("a primitive array of type {ty}")));
    };
    let n = length as u64 * size as u64;
    if n > end - input.offset() {
        return Err(malformed(
            at,
            "an array whose elements run past its segment",
        ));
    }
    if n <= 1 << 20 && visitor.wants_primitive(object) {
        let data = input.bytes(n as usize, "an array's elements")?;
        visitor.primitive_data(object, data);
    } else {
        input.skip(n, "an array's elements")?;
    }
    visitor.primitive_array(object, ty, length);
    Ok(visitor.done())
}

fn class_dump(
    input: &mut Input,
    visitor: &mut dyn Visitor,
    at: u64,
    end: u64,
) -> Result<(), DumpError> {
    let id_size = input.id_size();
    let id = input.id("a class's id")?;
    input.u32("a class's trace")?;
    let super_id = input.id("a class's superclass")?;
    let loader = input.id("a class's loader")?;
    for _ in 0..4 {
        // Signers, protection domain and two reserved ids: nothing a heap's picture needs.
        input.id("a class's header")?;
    }
    // The values' length of an instance, which each INSTANCE_DUMP says again.
    input.u32("a class's instance size")?;
    let constants = input.u16("a class's constant pool size")?;
    for _ in 0..constants {
        input.u16("a constant's index")?;
        let ty = input.u8("a constant's type")?;
        let size = type_size(ty, id_size)
            .ok_or_else(|| malformed(at, &format!("a constant of type {ty}")))?;
        input.skip(size as u64, "a constant")?;
    }
    let count = input.u16("a class's static count")?;
    let mut statics = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let name = input.id("a static's name")?;
        let ty = input.u8("a static's type")?;
        let size = type_size(ty, id_size)
            .ok_or_else(|| malformed(at, &format!("a static field of type {ty}")))?;
        let value = match size {
            1 => input.u8("a static's value")? as u64,
            2 => input.u16("a static's value")? as u64,
            4 => input.u32("a static's value")? as u64,
            _ => input.u64("a static's value")?,
        };
        statics.push(Static { name, ty, value });
    }
    let count = input.u16("a class's field count")?;
    let mut fields = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let name = input.id("a field's name")?;
        let ty = input.u8("a field's type")?;
        if type_size(ty, id_size).is_none() {
            return Err(malformed(at, &format!("a field of type {ty}")));
        }
        fields.push(Field { name, ty });
    }
    if input.offset() > end {
        return Err(malformed(at, "a class running past its segment"));
    }
    visitor.class_dump(ClassDump {
        id,
        super_id,
        loader,
        statics,
        fields,
    });
    Ok(())
}
