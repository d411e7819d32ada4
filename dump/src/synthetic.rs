//! Small heap dumps written by hand, in HotSpot's format: the unit tests' and the fuzz corpus's.
//! Not a dump writer for real heaps (it holds the whole file in memory).

/// Writes a dump record by record; heap sub-records go into one segment, written at `finish`.
pub struct Builder {
    out: Vec<u8>,
    segment: Vec<u8>,
    next_symbol: u64,
    next_serial: u32,
}

/// Basic type codes.
pub const OBJECT: u8 = 2;
pub const INT: u8 = 10;
pub const LONG: u8 = 11;

impl Default for Builder {
    fn default() -> Self {
        Self::new(1_700_000_000_000)
    }
}

impl Builder {
    /// A dump taken at `time_ms` (since the Unix epoch), with 8-byte ids.
    pub fn new(time_ms: u64) -> Self {
        let mut out = b"JAVA PROFILE 1.0.2\0".to_vec();
        out.extend_from_slice(&8u32.to_be_bytes());
        out.extend_from_slice(&time_ms.to_be_bytes());
        Builder {
            out,
            segment: Vec::new(),
            next_symbol: 0x1000,
            next_serial: 1,
        }
    }

    fn record(&mut self, tag: u8, body: &[u8]) {
        self.out.push(tag);
        self.out.extend_from_slice(&0u32.to_be_bytes());
        self.out
            .extend_from_slice(&(body.len() as u32).to_be_bytes());
        self.out.extend_from_slice(body);
    }

    /// A symbol; its id.
    pub fn string(&mut self, text: &str) -> u64 {
        let id = self.next_symbol;
        self.next_symbol += 8;
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(text.as_bytes());
        self.record(0x01, &body);
        id
    }

    /// A loaded class (`name` as hprof spells it: `java/lang/String`, `[B`) with its instance
    /// fields (own only, in declaration order) and statics.
    pub fn class(
        &mut self,
        id: u64,
        name: &str,
        super_id: u64,
        fields: &[(&str, u8)],
        statics: &[(&str, u8, u64)],
    ) {
        let name_id = self.string(name);
        let mut body = self.next_serial.to_be_bytes().to_vec();
        self.next_serial += 1;
        body.extend_from_slice(&id.to_be_bytes());
        body.extend_from_slice(&1u32.to_be_bytes());
        body.extend_from_slice(&name_id.to_be_bytes());
        self.record(0x02, &body);
        let field_ids: Vec<(u64, u8)> = fields.iter().map(|(n, t)| (self.string(n), *t)).collect();
        let static_ids: Vec<(u64, u8, u64)> = statics
            .iter()
            .map(|(n, t, v)| (self.string(n), *t, *v))
            .collect();
        let s = &mut self.segment;
        s.push(0x20);
        s.extend_from_slice(&id.to_be_bytes());
        s.extend_from_slice(&1u32.to_be_bytes());
        s.extend_from_slice(&super_id.to_be_bytes());
        for _ in 0..5 {
            s.extend_from_slice(&0u64.to_be_bytes()); // loader, signers, domain, reserved x2
        }
        let size: u32 = fields.iter().map(|(_, t)| value_size(*t) as u32).sum();
        s.extend_from_slice(&size.to_be_bytes());
        s.extend_from_slice(&0u16.to_be_bytes());
        s.extend_from_slice(&(static_ids.len() as u16).to_be_bytes());
        for (name, ty, value) in static_ids {
            s.extend_from_slice(&name.to_be_bytes());
            s.push(ty);
            s.extend_from_slice(&value.to_be_bytes()[8 - value_size(ty)..]);
        }
        s.extend_from_slice(&(field_ids.len() as u16).to_be_bytes());
        for (name, ty) in field_ids {
            s.extend_from_slice(&name.to_be_bytes());
            s.push(ty);
        }
    }

    /// An instance: its values, this class's fields first, then the superclasses', each value
    /// at its type's size.
    pub fn instance(&mut self, id: u64, class: u64, values: &[(u8, u64)]) {
        let s = &mut self.segment;
        s.push(0x21);
        s.extend_from_slice(&id.to_be_bytes());
        s.extend_from_slice(&1u32.to_be_bytes());
        s.extend_from_slice(&class.to_be_bytes());
        let size: usize = values.iter().map(|(t, _)| value_size(*t)).sum();
        s.extend_from_slice(&(size as u32).to_be_bytes());
        for &(ty, v) in values {
            s.extend_from_slice(&v.to_be_bytes()[8 - value_size(ty)..]);
        }
    }

    pub fn object_array(&mut self, id: u64, class: u64, elements: &[u64]) {
        let s = &mut self.segment;
        s.push(0x22);
        s.extend_from_slice(&id.to_be_bytes());
        s.extend_from_slice(&1u32.to_be_bytes());
        s.extend_from_slice(&(elements.len() as u32).to_be_bytes());
        s.extend_from_slice(&class.to_be_bytes());
        for e in elements {
            s.extend_from_slice(&e.to_be_bytes());
        }
    }

    /// A primitive array of `length` elements of type `ty`, zeros.
    pub fn primitive_array(&mut self, id: u64, ty: u8, length: u32) {
        let s = &mut self.segment;
        s.push(0x23);
        s.extend_from_slice(&id.to_be_bytes());
        s.extend_from_slice(&1u32.to_be_bytes());
        s.extend_from_slice(&length.to_be_bytes());
        s.push(ty);
        s.extend(std::iter::repeat_n(0u8, length as usize * value_size(ty)));
    }

    /// A system class root (its statics hold what they reference).
    pub fn sticky_class(&mut self, class: u64) {
        self.segment.push(0x05);
        self.segment.extend_from_slice(&class.to_be_bytes());
    }

    pub fn jni_global(&mut self, object: u64) {
        self.segment.push(0x01);
        self.segment.extend_from_slice(&object.to_be_bytes());
        self.segment.extend_from_slice(&0u64.to_be_bytes());
    }

    /// The dump's bytes: the segment, then the end record.
    pub fn finish(mut self) -> Vec<u8> {
        let segment = std::mem::take(&mut self.segment);
        self.record(0x1C, &segment);
        self.record(0x2C, &[]);
        self.out
    }
}

fn value_size(ty: u8) -> usize {
    crate::records::type_size(ty, 8).unwrap_or(8)
}

/// A small heap every test can reason about: `Holder.ALL` (a static) references a holder whose
/// `items` array holds 3 `Item`s; `Holder.SOME` references a second array sharing the first
/// item; each `Item` holds a `long[2]`. Ids are addresses laid out with compressed oops'
/// sizes (items 16 bytes, `long[2]` 32, `Object[3]` 32), so sizes are confirmed.
pub fn small_heap() -> Vec<u8> {
    let mut b = Builder::default();
    let (object, class, holder, item, array, longs) = (0x100, 0x200, 0x300, 0x400, 0x500, 0x600);
    b.class(object, "java/lang/Object", 0, &[], &[]);
    b.class(class, "java/lang/Class", object, &[], &[]);
    b.class(array, "[Ljava/lang/Object;", object, &[], &[]);
    b.class(longs, "[J", object, &[], &[]);
    b.class(item, "Item", object, &[("values", OBJECT)], &[]);
    let base = 0x10_0000u64;
    let (holder_obj, all, some) = (base, base + 16, base + 48);
    let items = [base + 72, base + 88, base + 104];
    let values = [base + 120, base + 152, base + 184];
    b.class(
        holder,
        "Holder",
        object,
        &[("items", OBJECT)],
        &[("ALL", OBJECT, holder_obj), ("SOME", OBJECT, some)],
    );
    // HotSpot roots every boot class this way.
    for boot in [object, class, array, longs, holder] {
        b.sticky_class(boot);
    }
    b.instance(holder_obj, holder, &[(OBJECT, all)]);
    b.object_array(all, array, &items);
    b.object_array(some, array, &items[..1]);
    for (i, v) in items.iter().zip(values) {
        b.instance(*i, item, &[(OBJECT, v)]);
        b.primitive_array(v, LONG, 2);
    }
    // One more object after the last, so the last array's size has a neighbour.
    b.instance(base + 216, object, &[]);
    b.finish()
}

/// A heap taken at `time_ms` whose `Holder.ALL` holds `items` objects, each with a `long[2]`:
/// a series of them, `items` rising, is a leak.
pub fn growing_heap(items: u64, time_ms: u64) -> Vec<u8> {
    let mut b = Builder::new(time_ms);
    let (object, class, holder, item, array, longs) = (0x100, 0x200, 0x300, 0x400, 0x500, 0x600);
    b.class(object, "java/lang/Object", 0, &[], &[]);
    b.class(class, "java/lang/Class", object, &[], &[]);
    b.class(array, "[Ljava/lang/Object;", object, &[], &[]);
    b.class(longs, "[J", object, &[], &[]);
    b.class(item, "com/example/Item", object, &[("values", OBJECT)], &[]);
    let base = 0x10_0000u64;
    let (holder_obj, all) = (base, base + 16);
    let array_size = (16 + 4 * items).div_ceil(8) * 8;
    let first = all + array_size;
    let item_at = |i: u64| first + 48 * i;
    b.class(
        holder,
        "com/example/Holder",
        object,
        &[("items", OBJECT)],
        &[("ALL", OBJECT, holder_obj)],
    );
    for boot in [object, class, array, longs, holder] {
        b.sticky_class(boot);
    }
    b.instance(holder_obj, holder, &[(OBJECT, all)]);
    let ids: Vec<u64> = (0..items).map(item_at).collect();
    b.object_array(all, array, &ids);
    for &at in &ids {
        b.instance(at, item, &[(OBJECT, at + 16)]);
        b.primitive_array(at + 16, LONG, 2);
    }
    b.instance(item_at(items), object, &[]);
    b.finish()
}
