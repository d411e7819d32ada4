//! The application's virtual threads (JDK 21+), for the path search's roots.
//!
//! Why: a parked virtual thread's frames live in the heap (its continuation's stack chunks),
//! not on a platform thread's stack, so they are no GC root and JVMTI's `GetAllThreads` does not
//! list them. `FollowReferences` reports their locals only when the heap walk visits the
//! `VirtualThread` object itself (HotSpot's `VM_HeapWalkOperation::collect_vthread_stack_refs`,
//! JDK-8299414, in JDK 21): as stack locals with the virtual thread's tag, depth, method and
//! bytecode index. The path search's enumeration follows nothing, so it lets the walk into an
//! array of the virtual threads listed here and into nothing else (`paths::roots_callback`): one
//! stop for the roots and every parked thread's frames.
//!
//! How they are found: the JDK's thread containers (`jdk.internal.vm.ThreadContainers`), which
//! `jcmd Thread.dump_to_file` reads too. The root container tracks every virtual thread started
//! outside an executor unless the JVM runs with `-Djdk.trackAllThreads=false`; executors and
//! structured scopes are containers of their own, below it. JNI calls them without the module
//! checks that would stop reflection. Before JDK 21 the classes are missing and the list is
//! empty.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use jni::sys::{jclass, jmethodID, jobject, jobjectArray, jsize, jvalue, JNIEnv};

use crate::jvmti::LocalFrame;

/// Virtual threads whose frames one search looks into at most: each parked thread's frames are
/// walked inside the roots' stop, about 13 µs a thread of a few frames here (40 ms for 2,000,
/// 264 ms for 20,000; `scripts/bench-agent.sh` section vthreads). Past it, each search takes
/// the next ones in the containers' order ([`NEXT`]), so that every thread's frames are
/// looked into every few searches and each stop stays near 50 ms.
pub const MAX_VIRTUAL_THREADS: usize = 4096;
/// Where the next search's share of the virtual threads begins.
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// Thread containers visited at most (an executor per request would make many).
const MAX_CONTAINERS: usize = 10_000;

/// Global references to live virtual threads, at most [`MAX_VIRTUAL_THREADS`] from where the
/// last call stopped (the caller deletes them), and whether others were left out. Empty before
/// JDK 21, when the containers cannot be read, or on any exception (cleared: the application
/// never sees it).
///
/// # Safety
/// `jni` must be the calling thread's JNIEnv, and that thread a Java thread that may run Java
/// code (the agent's worker).
pub unsafe fn list(jni: *mut JNIEnv) -> (Vec<jobject>, bool) {
    let skip = NEXT.load(Ordering::Relaxed);
    let mut taking = Taking {
        out: Vec::new(),
        skip,
        seen: 0,
        full: false,
    };
    let left_out = collect(jni, &mut taking).unwrap_or(false);
    thrown(jni);
    // The next search goes on from here, or starts over past the end.
    let next = if taking.full { taking.seen } else { 0 };
    NEXT.store(next, Ordering::Relaxed);
    let skipped = skip.min(taking.seen) > 0;
    (taking.out, left_out || taking.full || skipped)
}

/// The virtual threads a search takes: past the first `skip` seen, until full.
struct Taking {
    out: Vec<jobject>,
    skip: usize,
    seen: usize,
    full: bool,
}

/// A virtual thread's id (`Thread.threadId()`, JDK 19+), which names it when it has no name,
/// as the JDK's thread dumps do (`#21`).
///
/// # Safety
/// As [`list`]; `thread` a live reference.
pub unsafe fn id(jni: *mut JNIEnv, thread: jobject) -> Option<i64> {
    let class = jni!(jni, GetObjectClass, thread);
    let method = jni!(
        jni,
        GetMethodID,
        class,
        c"threadId".as_ptr(),
        c"()J".as_ptr()
    );
    jni!(jni, DeleteLocalRef, class);
    if method.is_null() {
        thrown(jni);
        return None;
    }
    let none: [jvalue; 0] = [];
    let id = jni!(jni, CallLongMethodA, thread, method, none.as_ptr());
    (!thrown(jni)).then_some(id)
}

struct Ids {
    virtual_class: jclass,
    threads: jmethodID,
    children: jmethodID,
    to_array: jmethodID,
}

fn collect(jni: *mut JNIEnv, out: &mut Taking) -> Option<bool> {
    // SAFETY: the caller's own JNIEnv; every local made below is freed with this frame.
    let _frame = unsafe { LocalFrame::push(jni, 64) }?;
    let class = |name: &std::ffi::CStr| -> Option<jclass> {
        let class = jni!(jni, FindClass, name.as_ptr());
        if class.is_null() {
            jni!(jni, ExceptionClear);
            return None;
        }
        Some(class)
    };
    let method = |class: jclass, name: &std::ffi::CStr, signature: &std::ffi::CStr| {
        let id = jni!(jni, GetMethodID, class, name.as_ptr(), signature.as_ptr());
        (!id.is_null()).then_some(id)
    };
    let containers = class(c"jdk/internal/vm/ThreadContainers")?;
    let virtual_class = class(c"java/lang/VirtualThread")?;
    let container = class(c"jdk/internal/vm/ThreadContainer")?;
    let stream = class(c"java/util/stream/Stream")?;
    let root = jni!(
        jni,
        GetStaticMethodID,
        containers,
        c"root".as_ptr(),
        c"()Ljdk/internal/vm/ThreadContainer;".as_ptr()
    );
    if root.is_null() {
        return None;
    }
    let ids = Ids {
        virtual_class,
        threads: method(container, c"threads", c"()Ljava/util/stream/Stream;")?,
        children: method(container, c"children", c"()Ljava/util/stream/Stream;")?,
        to_array: method(stream, c"toArray", c"()[Ljava/lang/Object;")?,
    };
    let none: [jvalue; 0] = [];
    let root = jni!(
        jni,
        CallStaticObjectMethodA,
        containers,
        root,
        none.as_ptr()
    );
    if root.is_null() || thrown(jni) {
        return None;
    }
    // Breadth first, each container's locals in a frame of their own.
    let mut pending = vec![jni!(jni, NewGlobalRef, root)];
    let mut visited = 0;
    while let Some(container) = pending.pop() {
        visited += 1;
        if visited <= MAX_CONTAINERS && !out.full {
            visit(jni, &ids, container, out, &mut pending);
        }
        jni!(jni, DeleteGlobalRef, container);
    }
    Some(visited > MAX_CONTAINERS)
}

/// Adds `container`'s virtual threads to `out` and its children to `pending` (global
/// references).
fn visit(
    jni: *mut JNIEnv,
    ids: &Ids,
    container: jobject,
    out: &mut Taking,
    pending: &mut Vec<jobject>,
) -> Option<()> {
    // SAFETY: the caller's own JNIEnv; frees this container's locals.
    let _frame = unsafe { LocalFrame::push(jni, 16) }?;
    let threads = array(jni, ids, container, ids.threads)?;
    for i in 0..jni!(jni, GetArrayLength, threads) {
        let thread = jni!(jni, GetObjectArrayElement, threads, i);
        if thread.is_null() {
            continue;
        }
        if jni!(jni, IsInstanceOf, thread, ids.virtual_class) != 0 {
            if out.out.len() >= MAX_VIRTUAL_THREADS {
                out.full = true;
                return Some(());
            }
            if out.seen >= out.skip {
                out.out.push(jni!(jni, NewGlobalRef, thread));
            }
            out.seen += 1;
        }
        jni!(jni, DeleteLocalRef, thread);
    }
    let children = array(jni, ids, container, ids.children)?;
    for i in 0..jni!(jni, GetArrayLength, children) {
        let child = jni!(jni, GetObjectArrayElement, children, i);
        if !child.is_null() {
            pending.push(jni!(jni, NewGlobalRef, child));
            jni!(jni, DeleteLocalRef, child);
        }
    }
    Some(())
}

/// `container.method().toArray()`: a stream of threads or of containers, as an array.
fn array(
    jni: *mut JNIEnv,
    ids: &Ids,
    container: jobject,
    method: jmethodID,
) -> Option<jobjectArray> {
    let none: [jvalue; 0] = [];
    let stream = jni!(jni, CallObjectMethodA, container, method, none.as_ptr());
    if stream.is_null() || thrown(jni) {
        return None;
    }
    let array = jni!(jni, CallObjectMethodA, stream, ids.to_array, none.as_ptr());
    if array.is_null() || thrown(jni) {
        return None;
    }
    Some(array as jobjectArray)
}

/// Whether the last call threw (the exception is cleared: it is memcity's, not the
/// application's).
fn thrown(jni: *mut JNIEnv) -> bool {
    if jni!(jni, ExceptionCheck) == 0 {
        return false;
    }
    jni!(jni, ExceptionClear);
    true
}

/// An `Object[]` of `threads` (global references), for the roots' enumeration to walk into;
/// null when it cannot be made.
///
/// # Safety
/// As [`list`].
pub unsafe fn as_array(jni: *mut JNIEnv, threads: &[jobject]) -> jobject {
    let make = || -> Option<jobject> {
        let object = jni!(jni, FindClass, c"java/lang/Object".as_ptr());
        if object.is_null() {
            jni!(jni, ExceptionClear);
            return None;
        }
        let array = jni!(
            jni,
            NewObjectArray,
            threads.len() as jsize,
            object,
            ptr::null_mut()
        );
        jni!(jni, DeleteLocalRef, object);
        if array.is_null() || thrown(jni) {
            return None;
        }
        for (i, &thread) in threads.iter().enumerate() {
            jni!(jni, SetObjectArrayElement, array, i as jsize, thread);
        }
        let global = jni!(jni, NewGlobalRef, array);
        jni!(jni, DeleteLocalRef, array);
        Some(global)
    };
    make().unwrap_or(ptr::null_mut())
}
