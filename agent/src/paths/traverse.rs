//! The search itself, in slices: root after root, depth first through instance fields and
//! array elements with JNI, each object met keyed (`visit.rs`), each target met merged into
//! the tree of paths (`found.rs`), a root left once it has gone dry.

use std::ptr;
use std::time::{Duration, Instant};

use jni::sys::{jint, jobject, jsize, JNIEnv};

use super::*;
use crate::jvmti::{LocalFrame, RootKind};

impl Search {
    /// Runs the search for about `slice`; true when it is done.
    pub fn run(&mut self, env: &mut Env, slice: Duration) -> bool {
        let start = Instant::now();
        let deadline = start + slice;
        // SAFETY: the worker's own JNIEnv; the frame frees the slice's local references.
        let Some(_frame) = (unsafe { LocalFrame::push(env.jni, 64) }) else {
            self.incomplete = "no JNI local frame".into();
            return true;
        };
        // Frames come back from their weak references; one whose object the GC freed meanwhile
        // (the application dropped it) has nothing left to search.
        let jni = env.jni;
        if self.stack.is_empty() && self.next_root >= self.roots.len() && self.may_resume() {
            self.resume_deferred();
        }
        jni!(
            jni,
            EnsureLocalCapacity,
            (2 * self.stack.len() + 64) as jint
        );
        for frame in &mut self.stack {
            for (object, global) in [
                (&mut frame.object, &mut frame.global),
                (&mut frame.pending, &mut frame.pending_global),
            ] {
                if *global && !object.is_null() {
                    let local = jni!(jni, NewLocalRef, *object);
                    jni!(jni, DeleteWeakGlobalRef, *object);
                    *object = local;
                    *global = false;
                }
            }
            if frame.object.is_null() {
                frame.cursor = frame.length;
            }
        }
        // An array its holder has replaced since the last slice (a list or map that grew) is
        // garbage: searching on through it would keep it alive, since ZGC and Shenandoah keep
        // what a weak reference yields during their marking, and the estimates would count it.
        // It is finished now; popping it reads the field again and searches the new array.
        for i in 1..self.stack.len() {
            let (below, above) = self.stack.split_at_mut(i);
            let (parent, frame) = (&below[i - 1], &mut above[0]);
            if frame.via.is_null() || parent.object.is_null() || frame.object.is_null() {
                continue;
            }
            let now = jni!(jni, GetObjectField, parent.object, frame.via);
            if jni!(jni, IsSameObject, now, frame.object) == jni::sys::JNI_FALSE {
                frame.cursor = frame.length;
            }
            if !now.is_null() {
                jni!(jni, DeleteLocalRef, now);
            }
        }
        let mut steps = 0u32;
        let done = loop {
            steps += 1;
            if steps & 0xff == 0 && Instant::now() >= deadline {
                break false;
            }
            // Between roots only: the rest of a root may still shorten paths found in it. A
            // search through every static and thread is after where the growth is, not yet
            // its shortest paths (see `PREFERRED_DRY_FLOOR`).
            let enough = self.found as f64 >= ENOUGH_FOUND * self.targets.len() as f64;
            if enough && (self.stack.is_empty() || self.scope == Scope::StaticsAndThreads) {
                self.stopped_early = true;
                break true;
            }
            if self.focused()
                && !self.stack.is_empty()
                && gone_dry(
                    self.met - self.met_at_root,
                    self.met_at_find.max(self.met_at_root) - self.met_at_root,
                    self.root_floor,
                )
            {
                self.defer_root(jni);
            }
            // A root left dry resumes at the next slice's start, where the stack's references
            // become local ones again.
            if self.stack.is_empty() && self.next_root >= self.roots.len() && self.may_resume() {
                break false;
            }
            if !self.step(env) {
                // The last roots may have entered nothing (a static holding null, a thread
                // gone): the ones left dry are still to come back to.
                break !self.may_resume();
            }
        };
        if jni!(env.jni, ExceptionCheck) == jni::sys::JNI_TRUE {
            jni!(env.jni, ExceptionClear);
        }
        hold_weakly(jni, &mut self.stack);
        self.cpu += start.elapsed();
        done
    }

    /// One reference of the search; false when there is nothing left to do.
    pub(super) fn step(&mut self, env: &mut Env) -> bool {
        let jni = env.jni;
        let Some(top) = self.stack.last_mut() else {
            return self.next_root(env);
        };
        if top.cursor >= top.length {
            if top.pending.is_null() {
                let frame = self.stack.pop().expect("a top frame");
                if self.revisit_from == self.stack.len() {
                    self.revisit_from = usize::MAX;
                }
                let replaced = match self.stack.last() {
                    // A parent the GC freed between slices (its weak reference came back null)
                    // has no field to read again: JNI would dereference null and crash the JVM.
                    Some(parent) if !frame.via.is_null() && !parent.object.is_null() => {
                        let now = jni!(jni, GetObjectField, parent.object, frame.via);
                        if !now.is_null()
                            && jni!(jni, IsSameObject, now, frame.object) == jni::sys::JNI_FALSE
                        {
                            Some(now)
                        } else {
                            if !now.is_null() {
                                jni!(jni, DeleteLocalRef, now);
                            }
                            None
                        }
                    }
                    _ => None,
                };
                release(jni, frame.object, frame.global);
                if let Some(now) = replaced {
                    if !self.reach(env, now, frame.via_name, true) {
                        jni!(jni, DeleteLocalRef, now);
                    }
                }
            } else {
                release(jni, top.object, top.global);
                // The chain's next link takes the frame's place (a tail call).
                top.object = std::mem::replace(&mut top.pending, ptr::null_mut());
                top.global = top.pending_global;
                top.length = top.pending_length;
                top.cursor = 0;
                top.run += 1;
            }
            return true;
        }
        // Newest first in a focused search (see `gone_dry`).
        let cursor = if self.scope != Scope::Full {
            top.length - 1 - top.cursor
        } else {
            top.cursor
        };
        top.cursor += 1;
        let (object, field) = match self.classes[top.class as usize].as_ref().map(|c| c.kind) {
            Some(Kind::ObjectArray) => (
                jni!(jni, GetObjectArrayElement, top.object, cursor as jsize),
                ELEMENTS_FIELD,
            ),
            _ => {
                let info = self.classes[top.class as usize]
                    .as_ref()
                    .expect("a known class");
                let (id, name) = info.fields[cursor as usize];
                self.via = id;
                (jni!(jni, GetObjectField, top.object, id), name)
            }
        };
        if !object.is_null() && !self.reach(env, object, field, true) {
            jni!(jni, DeleteLocalRef, object);
        }
        self.via = ptr::null_mut();
        true
    }

    /// Not through every root (see `scope`).
    pub(super) fn focused(&self) -> bool {
        self.scope != Scope::Full
    }

    /// Leaves the rest of the current root unsearched (a focused search gone dry in it), or
    /// the search's stack (its end).
    pub(super) fn leave_root(&mut self, jni: *mut JNIEnv) {
        for frame in self.stack.drain(..) {
            release(jni, frame.object, frame.global);
            release(jni, frame.pending, frame.pending_global);
        }
        self.revisit_from = usize::MAX;
    }

    /// Leaves the current root gone dry: for good through the preferred roots (where the
    /// growth was, its newest objects come first), or, through every static and thread, for
    /// now. A growth no search has placed yet may lie past a root's first `DRY_FLOOR`
    /// objects (a server's sessions, deep in the server's graph behind its connectors, pools
    /// and handlers), and a search that finds too few of its samples elsewhere comes back for
    /// it (`may_resume`).
    pub(super) fn defer_root(&mut self, jni: *mut JNIEnv) {
        if self.scope != Scope::StaticsAndThreads {
            self.leave_root(jni);
            return;
        }
        let mut stack = std::mem::take(&mut self.stack);
        hold_weakly(jni, &mut stack);
        self.deferred.push_back(Deferred {
            root: self.current_root,
            stack,
            revisit_from: std::mem::replace(&mut self.revisit_from, usize::MAX),
            met: self.met - self.met_at_root,
            met_at_find: self.met_at_find.max(self.met_at_root) - self.met_at_root,
        });
    }

    /// Whether the search, past its last root, goes back to a root it left dry: while it has
    /// found fewer than `ENOUGH_TO_SHOW` (too few to be kept: the worker's `keep_found`), or
    /// fewer than half of its targets that survived a GC. Those are mostly alive, so the
    /// roots it has been through so far hold a growth of them only if it found them there;
    /// a few new objects in some static's cache are not where the heap grows. Its youngest
    /// targets are not counted: many are garbage, which no root reaches.
    pub(super) fn may_resume(&self) -> bool {
        !self.deferred.is_empty()
            && self.visited.len() < MAX_VISITED
            && self.incomplete.is_empty()
            && (self.found < ENOUGH_TO_SHOW || 2 * self.settled_found < self.settled)
    }

    /// Resumes the root left dry longest ago where it was left, its allowance past its last
    /// find raised to twice the objects it had met: each round costs a few times what the
    /// search had spent on it at most.
    pub(super) fn resume_deferred(&mut self) {
        let Some(root) = self.deferred.pop_front() else {
            return;
        };
        self.current_root = root.root;
        self.stack = root.stack;
        self.revisit_from = root.revisit_from;
        self.met_at_root = self.met - root.met;
        self.met_at_find = self.met_at_root + root.met_at_find;
        self.root_floor = 2 * root.met;
    }

    /// Starts the next root's frame; false when none is left.
    pub(super) fn next_root(&mut self, env: &mut Env) -> bool {
        let jni = env.jni;
        while self.next_root < self.roots.len() {
            let index = self.next_root;
            self.next_root += 1;
            self.current_root = index as u32;
            self.met_at_root = self.met;
            self.root_floor = self.scope.dry_floor();
            let object = match self.roots[index].1 {
                RootObject::Held(weak) => {
                    let object = jni!(jni, NewLocalRef, weak);
                    self.let_go_of_root(jni, index);
                    object
                }
                RootObject::Static(class, field) => {
                    jni!(jni, GetStaticObjectField, class, field)
                }
            };
            if object.is_null() {
                continue; // a static holding nothing, or a local's object gone since
            }
            if !self.reach(env, object, index as u32, true) {
                jni!(jni, DeleteLocalRef, object);
            }
            if !self.stack.is_empty() || self.visited.len() >= MAX_VISITED {
                return self.visited.len() <= MAX_VISITED;
            }
        }
        false
    }

    /// Root `index` is being come to: its weak reference is no longer the search's to keep
    /// (the root's frame holds the object from here on, as long as it is searched). Deleted
    /// once no root still to come shares it. Held to the search's end, every local of every
    /// thread at the enumeration stayed in the heap that long on generational ZGC, whose young
    /// collections keep what a weak reference holds: a map of a million entries the
    /// application had dropped, for seconds.
    pub(super) fn let_go_of_root(&mut self, jni: *mut JNIEnv, index: usize) {
        let RootObject::Held(weak) =
            std::mem::replace(&mut self.roots[index].1, RootObject::Held(ptr::null_mut()))
        else {
            return;
        };
        if weak.is_null() {
            return;
        }
        let holds = self.root_holds.entry(weak as usize).or_insert(1);
        *holds -= 1;
        if *holds == 0 {
            self.root_holds.remove(&(weak as usize));
            jni!(jni, DeleteWeakGlobalRef, weak);
        }
    }

    /// `object` is referenced by the top frame through `field` (or is a root's object, `field`
    /// then the root's index): count it if it is a target, and enter it if it is new. An `owned`
    /// local reference is kept by a frame it enters (returns true) instead of copied.
    pub(super) fn reach(
        &mut self,
        env: &mut Env,
        object: jobject,
        field: u32,
        owned: bool,
    ) -> bool {
        let jni = env.jni;
        self.met += 1;
        let class = jni!(jni, GetObjectClass, object);
        let info = self.class_info(env, class);
        jni!(jni, DeleteLocalRef, class);
        let Some((class, kind)) = info else {
            return false;
        };
        if kind == Kind::Mirror {
            return false;
        }
        let Ok(identity) = env.jvmti.object_hash(object) else {
            return false;
        };
        let identity = identity as u32;
        let depth = self.stack.len();
        self.check_target(jni, object, identity, class, field);
        if self.stack.is_empty() {
            self.root_objects
                .insert(self.current_root, (identity, class));
        }
        let revisiting = self.revisit_from != usize::MAX;
        if !self.enters(kind, class, identity, revisiting) {
            return false;
        }
        let terminal = self.classes[class as usize]
            .as_ref()
            .is_some_and(|c| c.terminal);
        let (length, second) = self.length_and_second(env, object, class, kind, terminal);
        let met = if terminal {
            Met::New
        } else {
            self.visit(visit_key(identity, class, second), depth)
        };
        // Below a frame entered again everything was counted once; a terminal object has no
        // key to tell, an object new even there (the application linked it since) has.
        let counted = match met {
            Met::Seen => return false,
            Met::Shorter => false,
            Met::New => !(terminal && revisiting),
        };
        if counted {
            self.visited_count += 1;
            *self.reached.entry((self.current_root, class)).or_default() += 1;
        }
        if terminal {
            if let Some(distinct) = self.distinct.get_mut(&class) {
                distinct.insert(identity);
            }
        }
        if self.visited.len() >= MAX_VISITED {
            self.incomplete =
                format!("the search kept track of {MAX_VISITED} objects, its limit, and stopped");
            self.next_root = self.roots.len();
            return false;
        }
        let entered = Entered {
            object,
            owned,
            class,
            kind,
            length,
            identity,
            field,
            met,
        };
        self.enter(jni, entered)
    }

    /// Counts `object` as found if it is one of the targets not yet found, or found by a longer
    /// path from this root.
    fn check_target(
        &mut self,
        jni: *mut JNIEnv,
        object: jobject,
        identity: u32,
        class: u32,
        field: u32,
    ) {
        let Some(candidates) = self.by_hash.get(&identity) else {
            return;
        };
        let (root, depth) = (self.current_root, self.stack.len() as u32);
        let hit = candidates.iter().copied().find(|&t| {
            let target = &self.targets[t as usize];
            // Found already, it moves only to a shorter path from its own root.
            (!target.found || (target.root == root && depth < target.depth))
                && jni!(jni, IsSameObject, target.weak, object) == jni::sys::JNI_TRUE
        });
        if let Some(t) = hit {
            self.found_target(t, identity, class, field);
        }
    }

    /// Whether an object of this kind is entered; a leaf is only counted.
    fn enters(&mut self, kind: Kind, class: u32, identity: u32, revisiting: bool) -> bool {
        match kind {
            Kind::Leaf | Kind::Mirror => {
                if !revisiting {
                    *self.reached.entry((self.current_root, class)).or_default() += 1;
                }
                if let Some(distinct) = self.distinct.get_mut(&class) {
                    distinct.insert(identity);
                }
                false
            }
            // A live thread is a root of its own; enter it only as that (not from another
            // root, nor as a local's object: `main` holding a worker's `Thread` does not hold
            // the worker's thread-locals).
            Kind::Thread => {
                self.stack.is_empty()
                    && self
                        .roots
                        .get(self.current_root as usize)
                        .is_some_and(|r| r.0.kind == RootKind::Thread)
            }
            Kind::Instance | Kind::ObjectArray => true,
        }
    }

    /// The references an object entered has (an array's length, an instance's reference
    /// fields), and the identity hash of what its first one holds, which its visit key takes.
    fn length_and_second(
        &mut self,
        env: &mut Env,
        object: jobject,
        class: u32,
        kind: Kind,
        terminal: bool,
    ) -> (u32, u32) {
        let jni = env.jni;
        if kind == Kind::ObjectArray {
            let length = jni!(jni, GetArrayLength, object).max(0) as u32;
            return (length, length);
        }
        let info = self.classes[class as usize]
            .as_ref()
            .expect("a known class");
        if terminal {
            // No key: entering it twice costs its few fields, and nothing below it can lead
            // back (a catalog's millions of products would otherwise fill `MAX_VISITED`).
            return (info.fields.len() as u32, 0);
        }
        let length = info.fields.len() as u32;
        let second = info
            .fields
            .first()
            .map(|&(id, _)| jni!(jni, GetObjectField, object, id))
            .filter(|o| !o.is_null())
            .map_or(0, |o| {
                let h = env.jvmti.object_hash(o).unwrap_or(0) as u32;
                jni!(jni, DeleteLocalRef, o);
                h
            });
        (length, second)
    }

    /// Enters an object: as the top frame's chain's next link (entered once that frame is done)
    /// or as a new frame. Returns whether its `owned` reference was kept.
    fn enter(&mut self, jni: *mut JNIEnv, e: Entered) -> bool {
        let chained = self.stack.last().is_some_and(|top| top.class == e.class);
        if chained {
            let top = self.stack.last_mut().expect("a top frame");
            if top.pending.is_null() {
                // The chain's next link: entered once this frame is done (see `Frame::pending`).
                top.pending = if e.owned {
                    e.object
                } else {
                    jni!(jni, NewLocalRef, e.object)
                };
                top.pending_global = false;
                top.pending_length = e.length;
                if e.met == Met::Shorter {
                    self.revisit_from = self.revisit_from.min(self.stack.len() - 1);
                }
                return e.owned;
            }
        }
        if self.stack.len() >= MAX_DEPTH {
            self.too_deep += 1;
            return false;
        }
        let (run, first_identity, first_field) = match self.stack.last() {
            Some(top) if chained => (top.run + 1, top.identity, top.field),
            _ => (1, e.identity, e.field),
        };
        if e.met == Met::Shorter {
            self.revisit_from = self.revisit_from.min(self.stack.len());
        }
        if self.stack.len() % 64 == 63 {
            // Room for the slice's local references (a frame each; -Xcheck:jni counts them).
            jni!(jni, EnsureLocalCapacity, (self.stack.len() + 128) as jint);
        }
        self.stack.push(Frame {
            object: if e.owned {
                e.object
            } else {
                jni!(jni, NewLocalRef, e.object)
            },
            global: false,
            pending: ptr::null_mut(),
            pending_global: false,
            pending_length: 0,
            class: e.class,
            cursor: 0,
            length: e.length,
            node: NONE,
            run,
            identity: first_identity,
            field: first_field,
            chained,
            via: if e.kind == Kind::ObjectArray {
                self.via
            } else {
                ptr::null_mut()
            },
            via_name: e.field,
        });
        e.owned
    }

    /// Gives every frame of the stack its merged node; returns the top's.
    pub(super) fn materialize(&mut self) -> u32 {
        for i in 0..self.stack.len() {
            if self.stack[i].node == NONE {
                let node = if self.stack[i].chained {
                    self.stack[i - 1].node
                } else {
                    let parent = if i == 0 {
                        0
                    } else {
                        self.stack[i - 1].node + 1
                    };
                    let f = &self.stack[i];
                    self.merge.node(parent, f.identity, f.class, f.field)
                };
                self.stack[i].node = node;
            }
            let (node, run) = (self.stack[i].node, self.stack[i].run);
            let array = self.classes[self.stack[i].class as usize]
                .as_ref()
                .is_some_and(|c| c.kind == Kind::ObjectArray);
            let merged = &mut self.merge.nodes[node as usize];
            merged.chain = merged.chain.max(run);
            if array {
                merged.length = merged.length.max(u64::from(self.stack[i].length));
            }
        }
        self.stack.last().map_or(NONE, |f| f.node)
    }

    /// Whether to enter an object with this key met at this depth (see `Visit`).
    pub(super) fn visit(&mut self, key: u64, depth: usize) -> Met {
        let visit = Visit::new(key, self.current_root, depth);
        if self.visited.insert(visit) {
            return Met::New;
        }
        let seen = *self.visited.get(&visit).expect("a visited key");
        if !visit.shortens(seen) {
            return Met::Seen;
        }
        if self.revisits >= self.visited_count {
            if self.revisits == self.visited_count {
                self.revisits += 1;
                crate::log::once!(
                    Info,
                    "path search: {} objects entered again by shorter paths, as many as \
                     entered once; the paths found first stand for the rest",
                    self.visited_count
                );
            }
            return Met::Seen;
        }
        self.revisits += 1;
        self.visited.replace(visit);
        Met::Shorter
    }

    /// Counts a target at the top of the stack, or moves it there from a longer path.
    pub(super) fn found_target(&mut self, target: u32, identity: u32, class: u32, field: u32) {
        let t = &self.targets[target as usize];
        if t.found {
            let (node, class, weight, born_s) = (t.node, t.class, t.weight, t.born_s);
            self.merge.uncount(node, class, weight, born_s);
        } else {
            if t.recent {
                *self.found_by_root.entry(self.current_root).or_default() += 1;
            }
            self.found += 1;
            if t.settled {
                self.settled_found += 1;
            }
            self.met_at_find = self.met;
        }
        let node = match self.stack.last() {
            None => self.merge.node(0, identity, class, field),
            // An object of the chain's own class is one more link of it: counted at the chain.
            Some(top) if top.class == class => self.materialize(),
            Some(_) => {
                let parent = self.materialize() + 1;
                self.merge.node(parent, identity, class, field)
            }
        };
        let holder = self
            .stack
            .last()
            .map(|top| (top.class, field, Instant::now()));
        let t = &mut self.targets[target as usize];
        t.found = true;
        t.holder = holder;
        t.root = self.current_root;
        t.depth = self.stack.len() as u32;
        t.node = node;
        let (tclass, weight, born_s) = (t.class, t.weight, t.born_s);
        self.merge.count(node, tclass, weight, born_s);
    }
}

/// An object `reach` enters, with what it learned of it.
struct Entered {
    object: jobject,
    owned: bool,
    class: u32,
    kind: Kind,
    length: u32,
    identity: u32,
    field: u32,
    met: Met,
}
