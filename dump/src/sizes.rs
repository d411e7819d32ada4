//! Objects' sizes in the JVM, which a dump does not carry: inferred from its addresses.
//!
//! An object's id is its address, so in address order the distance to the next object is its
//! size wherever the two are adjacent, which after a GC (compacting, or ZGC's dense
//! relocation) most are. Every instance of a class has one size, so the smallest distance over
//! its instances is that size as soon as one of them has a neighbour; the layout (header size,
//! reference width, array base: compressed oops and class pointers, compact headers) is the
//! candidate whose formula most distances confirm, and sizes the rest. The formula is the
//! JDK 15+ field layout (fields packed, holes filled); a class whose instances never touch
//! another object falls back to it (docs/heap-dumps-research.md §1.7).

use crate::heap::{Heap, Shape, MIRROR, NONE};
use crate::records;

/// How the JVM lays objects out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub header: u64,
    pub reference: u64,
    /// Where an array's elements start: for elements of up to 4 bytes, and of 8.
    pub array_base: [u64; 2],
    pub name: &'static str,
}

const ALIGN: u64 = 8;

const LAYOUTS_64: [Layout; 5] = [
    Layout {
        header: 12,
        reference: 4,
        array_base: [16, 16],
        name: "compressed oops and class pointers",
    },
    Layout {
        header: 12,
        reference: 8,
        array_base: [16, 16],
        name: "compressed class pointers, uncompressed oops",
    },
    Layout {
        header: 16,
        reference: 8,
        array_base: [24, 24],
        name: "uncompressed oops and class pointers",
    },
    Layout {
        header: 16,
        reference: 8,
        array_base: [20, 24],
        name: "uncompressed oops and class pointers (JDK 22+)",
    },
    Layout {
        header: 8,
        reference: 4,
        array_base: [12, 16],
        name: "compact object headers",
    },
];

const LAYOUT_32: Layout = Layout {
    header: 8,
    reference: 4,
    array_base: [12, 16],
    name: "32-bit",
};

/// A distance to the next object past this is free space, not a size worth trusting.
const SLACK: u64 = 64;
/// HotSpot pads each `@Contended` group with 128 bytes on both sides.
const CONTENDED: u64 = 320;

pub struct Sizes {
    pub layout: Layout,
    /// Per class: an instance's size (0 for array classes).
    instance: Vec<u64>,
    /// Per class: its mirror's size.
    mirror: Vec<u64>,
    /// Objects whose size a neighbour confirmed, of those measured: how far to trust the bytes.
    pub confirmed: u64,
}

fn align(n: u64) -> u64 {
    n.div_ceil(ALIGN) * ALIGN
}

impl Layout {
    fn instance(&self, field_bytes: [u32; 2]) -> u64 {
        let fields = field_bytes[(self.reference == 8) as usize] as u64;
        align(self.header + fields).max(ALIGN * 2)
    }

    fn array(&self, element: u64, length: u32) -> u64 {
        let base = self.array_base[(element == 8) as usize];
        align(base + element * length as u64)
    }
}

impl Sizes {
    pub fn infer(heap: &Heap) -> Sizes {
        let candidates: &[Layout] = if heap.id_size == 4 {
            &[LAYOUT_32]
        } else {
            &LAYOUTS_64
        };
        let layout = *candidates
            .iter()
            .max_by_key(|l| confirming(heap, l))
            .expect("candidates are never empty");
        let classes = heap.classes.len();
        let mut min_gap = vec![u64::MAX; classes];
        let mut gapped = vec![0u32; classes];
        let mut min_mirror_gap = u64::MAX;
        for (o, gap) in gaps(heap) {
            let c = heap.class_of[o as usize];
            if c == NONE {
                continue;
            }
            if heap.length[o as usize] == MIRROR {
                min_mirror_gap = min_mirror_gap.min(gap);
            } else if heap.classes[c as usize].shape == Shape::Instance {
                let slot = &mut min_gap[c as usize];
                *slot = (*slot).min(gap);
                gapped[c as usize] += 1;
            }
        }
        let mut instance = vec![0; classes];
        // Padding the dump cannot show (`@Contended` fields, as `Thread`'s random seeds on
        // JDK 17, and injected fields) is measured on the class that has it and inherited by
        // its subclasses, whose instances may be too few to measure: superclasses first.
        let mut extra = vec![u64::MAX; classes];
        for c in 0..classes {
            let mut chain = vec![c];
            while let Some(&top) = chain.last() {
                let up = heap.classes[top].super_class;
                if up == NONE || extra[up as usize] != u64::MAX || chain.len() > 64 {
                    break;
                }
                chain.push(up as usize);
            }
            for &k in chain.iter().rev() {
                if extra[k] != u64::MAX {
                    continue;
                }
                let class = &heap.classes[k];
                let up = class.super_class;
                // A superclass not worked out (a chain past 64 classes, or a cycle only a
                // damaged dump has) gives nothing.
                let inherited = match up {
                    NONE => 0,
                    up if extra[up as usize] == u64::MAX => 0,
                    up => extra[up as usize],
                };
                let formula = layout.instance(class.field_bytes) + inherited;
                let measured = min_gap[k];
                let credible = measured <= formula.saturating_add(SLACK)
                    || (measured <= formula.saturating_add(CONTENDED) && gapped[k] >= 2);
                instance[k] = if credible { measured } else { formula };
                extra[k] = if credible {
                    inherited.max(measured.saturating_sub(formula - inherited))
                } else {
                    inherited
                };
                if class.shape != Shape::Instance {
                    instance[k] = 0;
                }
            }
        }
        // A mirror holds `java.lang.Class`'s fields (some injected, so not all in the dump)
        // and its class's statics; the smallest mirror seen bounds the first part.
        let class_fields = heap
            .classes
            .get(heap.class_class as usize)
            .map(|c| layout.instance(c.field_bytes))
            .unwrap_or(96);
        let base = if min_mirror_gap <= class_fields + SLACK {
            min_mirror_gap
        } else {
            class_fields
        };
        let mirror = heap
            .classes
            .iter()
            .map(|c| {
                let statics: u64 = c
                    .statics
                    .iter()
                    .filter(|(name, _, _)| !name.starts_with('<'))
                    .map(|&(_, ty, _)| match ty {
                        records::TYPE_OBJECT | 1 => layout.reference,
                        ty => records::type_size(ty, 8).unwrap_or(8) as u64,
                    })
                    .sum();
                align(base + statics)
            })
            .collect();
        let confirmed = confirming(heap, &layout);
        Sizes {
            layout,
            instance,
            mirror,
            confirmed,
        }
    }

    /// The size of a mirror of a class without statics (an array class's).
    pub fn bare_mirror(&self) -> u64 {
        self.mirror.iter().copied().min().unwrap_or(96)
    }

    /// The size of object `o` in the JVM.
    pub fn of(&self, heap: &Heap, o: u32) -> u64 {
        let c = heap.class_of[o as usize];
        if c == NONE {
            return 0;
        }
        let length = heap.length[o as usize];
        if length == MIRROR {
            // Which class's mirror: the one whose object this is.
            return self.mirror_of(heap, o);
        }
        let class = &heap.classes[c as usize];
        match class.shape {
            Shape::Instance => self.instance[c as usize],
            Shape::ObjectArray => self.layout.array(self.layout.reference, length),
            Shape::PrimitiveArray(ty) => self
                .layout
                .array(records::type_size(ty, 8).unwrap_or(1) as u64, length),
        }
    }

    fn mirror_of(&self, heap: &Heap, o: u32) -> u64 {
        heap.mirror_class(o)
            .map(|c| self.mirror[c as usize])
            .unwrap_or_else(|| self.mirror.first().copied().unwrap_or(96))
    }
}

/// (object, distance to the next object in address order) for neighbours within a MiB.
fn gaps(heap: &Heap) -> impl Iterator<Item = (u32, u64)> + '_ {
    heap.sorted_ids
        .windows(2)
        .zip(&heap.by_address)
        .filter_map(|(w, &o)| {
            let gap = w[1] - w[0];
            (gap < 1 << 20).then_some((o, gap))
        })
}

/// Neighbours whose distance equals the size `layout` gives them.
fn confirming(heap: &Heap, layout: &Layout) -> u64 {
    let sizes = Sizes {
        layout: *layout,
        instance: heap
            .classes
            .iter()
            .map(|c| layout.instance(c.field_bytes))
            .collect(),
        mirror: Vec::new(),
        confirmed: 0,
    };
    gaps(heap)
        .filter(|&(o, gap)| heap.length[o as usize] != MIRROR && sizes.of(heap, o) == gap)
        .count() as u64
}
