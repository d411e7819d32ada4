//! A thin, checked layer over the raw JVMTI function table: every call returns `Result`, and
//! memory JVMTI allocates for us is released by RAII guards.

#[allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)] // generated bindings
pub(crate) mod sys;
#[cfg(test)]
mod sys_layout;
pub(crate) mod tags;

mod java_error;
pub(crate) use java_error::JavaError;

use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::ptr;

use crate::jvmti::sys::jthread;
use jni::sys::{jclass, jint, jlong, jmethodID, jobject, JNIEnv};

/// Calls one function of the JNI table, the one way the agent does: `$env` must be the current
/// thread's JNIEnv. (JNI's calls beside JVMTI's, which `Jvmti` wraps; a macro, since the table's
/// functions take their own arguments each.)
macro_rules! jni {
    ($env:expr, $name:ident $(, $arg:expr)*) => {{
        let env: *mut jni::sys::JNIEnv = $env;
        // SAFETY: callers pass the worker thread's own JNIEnv, whose table the VM fills
        // completely; arguments are valid references in it (each call site says why).
        unsafe { ((**env).$name.expect(stringify!($name)))(env $(, $arg)*) }
    }};
}

/// A JVMTI error code, with the function that returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JvmtiError {
    pub code: sys::jvmtiError,
    pub function: &'static str,
}

impl fmt::Display for JvmtiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed with JVMTI error {}", self.function, self.code)
    }
}

impl std::error::Error for JvmtiError {}

pub type Result<T> = std::result::Result<T, JvmtiError>;

/// Error codes we react to (the rest are just reported).
pub const ERR_WRONG_PHASE: sys::jvmtiError = sys::jvmtiError_JVMTI_ERROR_WRONG_PHASE;

/// Calls one function of the JVMTI table and turns its error code into a `Result`.
macro_rules! call {
    ($env:expr, $name:ident $(, $arg:expr)*) => {{
        let env: *mut sys::jvmtiEnv = $env;
        // SAFETY: `env` is a live JVMTI environment (the invariant of `Jvmti`); the VM fills every
        // slot of the function table, so a missing entry is a broken VM, reported as an error.
        let code = unsafe {
            match (**env).$name {
                Some(function) => function(env $(, $arg)*),
                None => sys::jvmtiError_JVMTI_ERROR_NOT_AVAILABLE,
            }
        };
        if code == sys::jvmtiError_JVMTI_ERROR_NONE {
            Ok(())
        } else {
            Err(JvmtiError { code, function: stringify!($name) })
        }
    }};
}

/// A JVMTI environment. Copyable: JVMTI environments are valid for the life of the VM and usable
/// from any thread attached to it (and, for memory and raw-monitor functions, from callbacks).
#[derive(Clone, Copy)]
pub struct Jvmti {
    env: *mut sys::jvmtiEnv,
}

// SAFETY: JVMTI environments are process-global and the spec allows calling them from any thread
// that the functions' own rules allow; `Jvmti` adds no thread-affine state.
unsafe impl Send for Jvmti {}
// SAFETY: as above; all methods take `&self` and JVMTI synchronizes internally.
unsafe impl Sync for Jvmti {}

/// JVMTI-allocated memory, released with `Deallocate` when dropped.
pub struct JvmtiBuf<T> {
    jvmti: Jvmti,
    ptr: *mut T,
    len: usize,
}

impl<T> JvmtiBuf<T> {
    pub fn as_slice(&self) -> &[T] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: JVMTI returned `len` initialized elements at `ptr`, alive until we deallocate.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> Drop for JvmtiBuf<T> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            let _ = call!(self.jvmti.env, Deallocate, self.ptr.cast::<u8>());
        }
    }
}

/// A JVMTI-allocated modified-UTF-8 string.
pub struct JvmtiStr(JvmtiBuf<c_char>);

impl JvmtiStr {
    fn new(jvmti: Jvmti, ptr: *mut c_char) -> Self {
        Self(JvmtiBuf { jvmti, ptr, len: 0 })
    }

    /// The text, lossily decoded (modified UTF-8 differs from UTF-8 only for NUL and
    /// supplementary characters, which class and method names practically never contain).
    pub fn to_string_lossy(&self) -> String {
        if self.0.ptr.is_null() {
            return String::new();
        }
        // SAFETY: JVMTI returns NUL-terminated strings.
        unsafe { CStr::from_ptr(self.0.ptr) }
            .to_string_lossy()
            .into_owned()
    }
}

pub struct ThreadInfo {
    pub name: String,
}

pub struct RawMonitor {
    jvmti: Jvmti,
    id: sys::jrawMonitorID,
}

// SAFETY: raw monitors are designed to be shared across threads.
unsafe impl Send for RawMonitor {}
// SAFETY: as above.
unsafe impl Sync for RawMonitor {}

impl RawMonitor {
    /// Enters the monitor; it is exited when the guard drops.
    pub fn enter(&self) -> Result<RawMonitorGuard<'_>> {
        call!(self.jvmti.env, RawMonitorEnter, self.id)?;
        Ok(RawMonitorGuard { monitor: self })
    }
}

pub struct RawMonitorGuard<'a> {
    monitor: &'a RawMonitor,
}

impl RawMonitorGuard<'_> {
    /// Waits up to `millis` for a notification (spurious wake-ups possible).
    pub fn wait(&self, millis: jlong) -> Result<()> {
        call!(
            self.monitor.jvmti.env,
            RawMonitorWait,
            self.monitor.id,
            millis
        )
    }

    pub fn notify_all(&self) -> Result<()> {
        call!(self.monitor.jvmti.env, RawMonitorNotifyAll, self.monitor.id)
    }
}

impl Drop for RawMonitorGuard<'_> {
    fn drop(&mut self) {
        let _ = call!(self.monitor.jvmti.env, RawMonitorExit, self.monitor.id);
    }
}

impl Jvmti {
    /// # Safety
    /// `env` must be a JVMTI environment obtained from `GetEnv`, valid for the VM's life.
    pub unsafe fn from_raw(env: *mut sys::jvmtiEnv) -> Self {
        Self { env }
    }

    pub fn potential_capabilities(&self) -> Result<sys::jvmtiCapabilities> {
        let mut caps = empty_capabilities();
        call!(self.env, GetPotentialCapabilities, &mut caps)?;
        Ok(caps)
    }

    pub fn add_capabilities(&self, caps: &sys::jvmtiCapabilities) -> Result<()> {
        call!(self.env, AddCapabilities, caps)
    }

    pub fn set_event_callbacks(&self, callbacks: &sys::jvmtiEventCallbacks) -> Result<()> {
        let size = std::mem::size_of::<sys::jvmtiEventCallbacks>() as jint;
        call!(self.env, SetEventCallbacks, callbacks, size)
    }

    pub fn enable_event(&self, event: sys::jvmtiEvent) -> Result<()> {
        call!(
            self.env,
            SetEventNotificationMode,
            sys::jvmtiEventMode_JVMTI_ENABLE,
            event,
            ptr::null_mut()
        )
    }

    pub fn disable_event(&self, event: sys::jvmtiEvent) -> Result<()> {
        call!(
            self.env,
            SetEventNotificationMode,
            sys::jvmtiEventMode_JVMTI_DISABLE,
            event,
            ptr::null_mut()
        )
    }

    pub fn create_raw_monitor(&self, name: &CStr) -> Result<RawMonitor> {
        let mut id: sys::jrawMonitorID = ptr::null_mut();
        call!(self.env, CreateRawMonitor, name.as_ptr(), &mut id)?;
        Ok(RawMonitor { jvmti: *self, id })
    }

    pub fn set_heap_sampling_interval(&self, bytes: jint) -> Result<()> {
        call!(self.env, SetHeapSamplingInterval, bytes)
    }

    pub fn system_property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        let mut value: *mut c_char = ptr::null_mut();
        call!(self.env, GetSystemProperty, name.as_ptr(), &mut value).ok()?;
        Some(JvmtiStr::new(*self, value).to_string_lossy())
    }

    /// # Safety
    /// `thread` must be a live `java.lang.Thread` reference; `proc_` runs on it with `arg`.
    pub unsafe fn run_agent_thread(
        &self,
        thread: jthread,
        proc_: sys::jvmtiStartFunction,
        arg: *const c_void,
    ) -> Result<()> {
        call!(
            self.env,
            RunAgentThread,
            thread,
            proc_,
            arg,
            sys::JVMTI_THREAD_NORM_PRIORITY as jint
        )
    }

    /// All loaded classes, as JNI local references owned by the caller's local frame.
    pub fn loaded_classes(&self) -> Result<JvmtiBuf<jclass>> {
        let mut count: jint = 0;
        let mut classes: *mut jclass = ptr::null_mut();
        call!(self.env, GetLoadedClasses, &mut count, &mut classes)?;
        Ok(JvmtiBuf {
            jvmti: *self,
            ptr: classes,
            len: count.max(0) as usize,
        })
    }

    /// The live platform threads, as JNI local references owned by the caller's local frame.
    pub fn all_threads(&self) -> Result<JvmtiBuf<jthread>> {
        let mut count: jint = 0;
        let mut threads: *mut jthread = ptr::null_mut();
        call!(self.env, GetAllThreads, &mut count, &mut threads)?;
        Ok(JvmtiBuf {
            jvmti: *self,
            ptr: threads,
            len: count.max(0) as usize,
        })
    }

    /// The fields a class declares, in class-file order.
    pub fn class_fields(&self, class: jclass) -> Result<JvmtiBuf<jni::sys::jfieldID>> {
        let mut count: jint = 0;
        let mut fields: *mut jni::sys::jfieldID = ptr::null_mut();
        call!(self.env, GetClassFields, class, &mut count, &mut fields)?;
        Ok(JvmtiBuf {
            jvmti: *self,
            ptr: fields,
            len: count.max(0) as usize,
        })
    }

    /// A field's name and type signature.
    pub fn field_name(
        &self,
        class: jclass,
        field: jni::sys::jfieldID,
    ) -> Result<(JvmtiStr, JvmtiStr)> {
        let mut name: *mut c_char = ptr::null_mut();
        let mut sig: *mut c_char = ptr::null_mut();
        call!(
            self.env,
            GetFieldName,
            class,
            field,
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok((JvmtiStr::new(*self, name), JvmtiStr::new(*self, sig)))
    }

    /// The interfaces a class or interface declares directly, as local references.
    pub fn implemented_interfaces(&self, class: jclass) -> Result<JvmtiBuf<jclass>> {
        let mut count: jint = 0;
        let mut interfaces: *mut jclass = ptr::null_mut();
        call!(
            self.env,
            GetImplementedInterfaces,
            class,
            &mut count,
            &mut interfaces
        )?;
        Ok(JvmtiBuf {
            jvmti: *self,
            ptr: interfaces,
            len: count.max(0) as usize,
        })
    }

    /// A field's access flags (`ACC_STATIC` is 0x0008).
    pub fn field_modifiers(&self, class: jclass, field: jni::sys::jfieldID) -> Result<jint> {
        let mut modifiers: jint = 0;
        call!(self.env, GetFieldModifiers, class, field, &mut modifiers)?;
        Ok(modifiers)
    }

    /// `JVMTI_CLASS_STATUS_*` bits of a class.
    pub fn class_status(&self, class: jclass) -> Result<jint> {
        let mut status: jint = 0;
        call!(self.env, GetClassStatus, class, &mut status)?;
        Ok(status)
    }

    /// The objects carrying any of `tags`, with their tags, as local references owned by the
    /// caller's local frame. HotSpot scans its tag map (not the heap) for them.
    pub fn objects_with_tags(
        &self,
        tags: &[jlong],
    ) -> Result<(JvmtiBuf<jobject>, JvmtiBuf<jlong>)> {
        let mut count: jint = 0;
        let mut objects: *mut jobject = ptr::null_mut();
        let mut found: *mut jlong = ptr::null_mut();
        call!(
            self.env,
            GetObjectsWithTags,
            tags.len() as jint,
            tags.as_ptr(),
            &mut count,
            &mut objects,
            &mut found
        )?;
        let len = count.max(0) as usize;
        Ok((
            JvmtiBuf {
                jvmti: *self,
                ptr: objects,
                len,
            },
            JvmtiBuf {
                jvmti: *self,
                ptr: found,
                len,
            },
        ))
    }

    pub fn class_signature(&self, class: jclass) -> Result<JvmtiStr> {
        let mut sig: *mut c_char = ptr::null_mut();
        call!(
            self.env,
            GetClassSignature,
            class,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok(JvmtiStr::new(*self, sig))
    }

    pub fn source_file_name(&self, class: jclass) -> Result<JvmtiStr> {
        let mut name: *mut c_char = ptr::null_mut();
        call!(self.env, GetSourceFileName, class, &mut name)?;
        Ok(JvmtiStr::new(*self, name))
    }

    pub fn tag(&self, object: jobject) -> Result<jlong> {
        let mut tag: jlong = 0;
        call!(self.env, GetTag, object, &mut tag)?;
        Ok(tag)
    }

    pub fn set_tag(&self, object: jobject, tag: jlong) -> Result<()> {
        call!(self.env, SetTag, object, tag)
    }

    pub fn object_size(&self, object: jobject) -> Result<jlong> {
        let mut size: jlong = 0;
        call!(self.env, GetObjectSize, object, &mut size)?;
        Ok(size)
    }

    /// # Safety
    /// The callbacks must match the JVMTI contracts and `user_data` must be what they expect.
    pub unsafe fn follow_references(
        &self,
        callbacks: &sys::jvmtiHeapCallbacks,
        user_data: *const c_void,
    ) -> Result<()> {
        call!(
            self.env,
            FollowReferences,
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            callbacks,
            user_data
        )
    }

    /// Fills `frames` with the top of `thread`'s stack (null = current thread); returns the count.
    pub fn stack_trace(
        &self,
        thread: jthread,
        frames: &mut [sys::jvmtiFrameInfo],
    ) -> Result<usize> {
        let mut count: jint = 0;
        call!(
            self.env,
            GetStackTrace,
            thread,
            0,
            frames.len() as jint,
            frames.as_mut_ptr(),
            &mut count
        )?;
        Ok(count.max(0) as usize)
    }

    pub fn thread_local_storage(&self, thread: jthread) -> Result<*mut c_void> {
        let mut data: *mut c_void = ptr::null_mut();
        call!(self.env, GetThreadLocalStorage, thread, &mut data)?;
        Ok(data)
    }

    pub fn set_thread_local_storage(&self, thread: jthread, data: *const c_void) -> Result<()> {
        call!(self.env, SetThreadLocalStorage, thread, data)
    }

    /// The thread's name. The info's JNI references (group, loader) are left to the caller's
    /// local frame.
    pub fn thread_info(&self, thread: jthread) -> Result<ThreadInfo> {
        let mut info = sys::jvmtiThreadInfo {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        };
        call!(self.env, GetThreadInfo, thread, &mut info)?;
        Ok(ThreadInfo {
            name: JvmtiStr::new(*self, info.name).to_string_lossy(),
        })
    }

    pub fn method_name(&self, method: jmethodID) -> Result<JvmtiStr> {
        let mut name: *mut c_char = ptr::null_mut();
        call!(
            self.env,
            GetMethodName,
            method,
            &mut name,
            ptr::null_mut(),
            ptr::null_mut()
        )?;
        Ok(JvmtiStr::new(*self, name))
    }

    pub fn method_declaring_class(&self, method: jmethodID) -> Result<jclass> {
        let mut class: jclass = ptr::null_mut();
        call!(self.env, GetMethodDeclaringClass, method, &mut class)?;
        Ok(class)
    }

    pub fn line_number_table(
        &self,
        method: jmethodID,
    ) -> Result<JvmtiBuf<sys::jvmtiLineNumberEntry>> {
        let mut count: jint = 0;
        let mut table: *mut sys::jvmtiLineNumberEntry = ptr::null_mut();
        call!(self.env, GetLineNumberTable, method, &mut count, &mut table)?;
        Ok(JvmtiBuf {
            jvmti: *self,
            ptr: table,
            len: count.max(0) as usize,
        })
    }

    /// The object's identity hash (installs one if it has none, as `System.identityHashCode`).
    pub fn object_hash(&self, object: jobject) -> Result<jint> {
        let mut hash: jint = 0;
        call!(self.env, GetObjectHashCode, object, &mut hash)?;
        Ok(hash)
    }

    pub fn dispose(&self) -> Result<()> {
        call!(self.env, DisposeEnvironment)
    }
}

/// Obtains a JVMTI environment from the JavaVM, preferring the newest version we know.
///
/// # Safety
/// `vm` must be the `JavaVM` passed to `Agent_OnLoad`.
pub unsafe fn get_env(vm: *mut jni::sys::JavaVM) -> Option<Jvmti> {
    for version in [sys::JVMTI_VERSION_11, sys::JVMTI_VERSION_1_2] {
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: `vm` is valid per the contract; GetEnv is always present in the invoke table.
        let rc = unsafe {
            match (**vm).GetEnv {
                Some(get_env) => get_env(vm, &mut env, version as jint),
                None => return None,
            }
        };
        if rc == jni::sys::JNI_OK && !env.is_null() {
            // SAFETY: GetEnv returned a JVMTI environment for a JVMTI version constant.
            return Some(unsafe { Jvmti::from_raw(env.cast()) });
        }
    }
    None
}

/// Local-frame guard for JNI local references made on an agent thread.
pub struct LocalFrame {
    env: *mut JNIEnv,
}

impl LocalFrame {
    /// # Safety
    /// `env` must be the current thread's JNIEnv.
    pub unsafe fn push(env: *mut JNIEnv, capacity: jint) -> Option<Self> {
        // SAFETY: per contract; PushLocalFrame is always present in the JNI table.
        let rc = unsafe {
            match (**env).PushLocalFrame {
                Some(push) => push(env, capacity),
                None => return None,
            }
        };
        (rc == 0).then_some(Self { env })
    }
}

impl Drop for LocalFrame {
    fn drop(&mut self) {
        // SAFETY: pops the frame this guard pushed, on the same thread.
        unsafe {
            if let Some(pop) = (**self.env).PopLocalFrame {
                pop(self.env, ptr::null_mut());
            }
        }
    }
}

/// JNI weak global references, as plain numbers so that they can sit in atomics: the tracker's
/// liveness test and the sampler's class cache.
pub mod weak {
    use jni::sys::{jobject, JNIEnv};

    /// A new weak global reference to `object` (0 if the VM could not make one).
    ///
    /// # Safety
    /// `env` must be the current thread's JNIEnv and `object` a valid reference in it.
    pub unsafe fn new(env: *mut JNIEnv, object: jobject) -> usize {
        // SAFETY: per contract; NewWeakGlobalRef is in every JNI table since 1.2.
        unsafe {
            match (**env).NewWeakGlobalRef {
                Some(f) => f(env, object) as usize,
                None => 0,
            }
        }
    }

    /// # Safety
    /// `env` must be the current thread's JNIEnv and `weak` a live reference from [`new`].
    pub unsafe fn delete(env: *mut JNIEnv, weak: usize) {
        // SAFETY: per contract.
        unsafe {
            if let Some(f) = (**env).DeleteWeakGlobalRef {
                f(env, weak as jobject);
            }
        }
    }

    /// Whether `weak` refers to `object` (false once the GC cleared it).
    ///
    /// # Safety
    /// As [`delete`]; `object` a valid reference or null.
    pub unsafe fn is(env: *mut JNIEnv, weak: usize, object: jobject) -> bool {
        // SAFETY: per contract; IsSameObject accepts weak references.
        unsafe {
            match (**env).IsSameObject {
                Some(f) => f(env, weak as jobject, object) == jni::sys::JNI_TRUE,
                None => false,
            }
        }
    }

    /// Whether the GC cleared `weak` (its object is gone).
    ///
    /// # Safety
    /// As [`delete`].
    pub unsafe fn cleared(env: *mut JNIEnv, weak: usize) -> bool {
        // SAFETY: per contract.
        unsafe { is(env, weak, std::ptr::null_mut()) }
    }
}

/// The canaries' heap (`canary.rs`): plain `java.lang.Object`s made and referenced through the
/// worker thread's JNIEnv.
pub struct CanaryHeap(pub *mut jni::sys::JNIEnv);

impl crate::census::canary::Heap for CanaryHeap {
    fn make(&mut self) -> Option<usize> {
        // SAFETY: the worker thread's own JNIEnv (the only user of this type).
        let mut env = unsafe { jni::JNIEnv::from_raw(self.0) }.ok()?;
        let made = env.with_local_frame(2, |env| {
            let object = env.new_object("java/lang/Object", "()V", &[])?;
            let global = env.new_global_ref(&object)?;
            // The canary outlives this frame and the `GlobalRef` wrapper: keep a raw global.
            // SAFETY: `global` is a valid reference in this thread's env.
            let raw = unsafe { global_new(self.0, global.as_obj().as_raw()) };
            Ok::<_, jni::errors::Error>(raw)
        });
        match made {
            Ok(raw) if raw != 0 => Some(raw),
            _ => {
                // An OutOfMemoryError must not stay pending on the worker thread.
                let _ = env.exception_clear();
                None
            }
        }
    }

    fn let_go(&mut self, global: usize) -> Option<usize> {
        // SAFETY: the worker's JNIEnv; `global` came from `make` and is deleted once, here.
        let weak = unsafe { weak::new(self.0, global as jni::sys::jobject) };
        // SAFETY: as above.
        unsafe { global_delete(self.0, global) };
        (weak != 0).then_some(weak)
    }

    fn cleared(&mut self, weak: usize) -> bool {
        // SAFETY: the worker's JNIEnv; `weak` came from `let_go` and is not deleted yet.
        unsafe { weak::cleared(self.0, weak) }
    }

    fn delete_weak(&mut self, weak: usize) {
        // SAFETY: as above; deleted once.
        unsafe { weak::delete(self.0, weak) }
    }

    fn delete_global(&mut self, global: usize) {
        // SAFETY: as above; deleted once.
        unsafe { global_delete(self.0, global) }
    }
}

/// A new global reference (0 if the VM could not make one).
///
/// # Safety
/// `env` must be the current thread's JNIEnv and `object` a valid reference in it.
unsafe fn global_new(env: *mut jni::sys::JNIEnv, object: jni::sys::jobject) -> usize {
    // SAFETY: per contract.
    unsafe {
        match (**env).NewGlobalRef {
            Some(f) => f(env, object) as usize,
            None => 0,
        }
    }
}

/// # Safety
/// `env` must be the current thread's JNIEnv and `global` a live reference from [`global_new`].
unsafe fn global_delete(env: *mut jni::sys::JNIEnv, global: usize) {
    // SAFETY: per contract.
    unsafe {
        if let Some(f) = (**env).DeleteGlobalRef {
            f(env, global as jni::sys::jobject);
        }
    }
}

/// A capability set with nothing in it.
pub fn empty_capabilities() -> sys::jvmtiCapabilities {
    // SAFETY: a plain bitfield struct, for which all-zero means "no capability".
    unsafe { std::mem::zeroed() }
}

/// What kind of GC root holds an object (JVMTI's root kinds, plus static fields, which JVMTI
/// reports from class mirrors and which tools since MAT treat as roots).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RootKind {
    StaticField,
    Thread,
    StackLocal,
    JniLocal,
    JniGlobal,
    Monitor,
    Other,
}

/// The root kind of a JVMTI root reference (`None` for system classes and non-roots).
pub fn root_kind(kind: sys::jvmtiHeapReferenceKind) -> Option<RootKind> {
    Some(match kind {
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_THREAD => RootKind::Thread,
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STACK_LOCAL => RootKind::StackLocal,
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_JNI_LOCAL => RootKind::JniLocal,
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_JNI_GLOBAL => RootKind::JniGlobal,
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_MONITOR => RootKind::Monitor,
        sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_OTHER => RootKind::Other,
        _ => return None,
    })
}
