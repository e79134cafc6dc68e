//! The plugins' output buffers, allocated by Polars' own allocator when Python hands it
//! over (`register_polars_allocator`), else by the system's.
//!
//! Why: in the streaming engine a plugin's outputs (one per morsel) live until the
//! query's result is dropped, then all are freed at once. glibc's malloc often gives those
//! pages back to the kernel, and the next query faults each one in again (measured: up to
//! 50,000 page faults and 0.1 s of system time a 10M x 3 `add_noise` query, against 600
//! for a plain Polars expression, whose allocator keeps freed pages for reuse). Polars
//! exports its allocator for plugins as a capsule of four functions, which this module
//! calls.
//!
//! Each buffer remembers the function that frees it, so a buffer made before the
//! allocator was registered is still freed by the system's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The layout of Polars' capsule (`polars._plr._allocator`): sizes and alignments in bytes.
#[repr(C)]
struct AllocatorCapsule {
    alloc: unsafe extern "C" fn(usize, usize) -> *mut u8,
    dealloc: unsafe extern "C" fn(*mut u8, usize, usize),
    _alloc_zeroed: unsafe extern "C" fn(usize, usize) -> *mut u8,
    _realloc: unsafe extern "C" fn(*mut u8, usize, usize, usize) -> *mut u8,
}

/// The two functions a buffer needs, from Polars or from the system.
#[derive(Clone, Copy)]
struct Allocator {
    alloc: unsafe extern "C" fn(usize, usize) -> *mut u8,
    dealloc: unsafe extern "C" fn(*mut u8, usize, usize),
}

unsafe extern "C" fn system_alloc(size: usize, align: usize) -> *mut u8 {
    unsafe { System.alloc(Layout::from_size_align_unchecked(size, align)) }
}

unsafe extern "C" fn system_dealloc(ptr: *mut u8, size: usize, align: usize) {
    unsafe { System.dealloc(ptr, Layout::from_size_align_unchecked(size, align)) }
}

const SYSTEM: Allocator = Allocator { alloc: system_alloc, dealloc: system_dealloc };

static POLARS: OnceLock<Allocator> = OnceLock::new();

/// How many buffers Polars' allocator has made in this process (`buffers_from_polars`:
/// what the tests check the plugins' outputs by).
static FROM_POLARS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn buffers_from_polars() -> u64 {
    FROM_POLARS.load(Ordering::Relaxed)
}

/// The name of Polars' allocator capsule (`polars.polars` was its module's name before
/// the module became `polars._plr`; the capsule kept it). A capsule of another name may
/// hold anything, so it is not read.
const CAPSULE_NAME: &str = "polars.polars._allocator";

/// Takes Polars' allocator from its capsule, once per process; false (the system's
/// allocator serves) when `capsule` is not one of Polars' allocator capsules.
///
/// # Safety
/// `capsule` must be a live Python object (the GIL is held by the caller).
pub(crate) unsafe fn register(capsule: *mut pyo3::ffi::PyObject) -> bool {
    use pyo3::ffi::{PyCapsule_CheckExact, PyCapsule_GetName, PyCapsule_GetPointer, PyErr_Clear};
    unsafe {
        if PyCapsule_CheckExact(capsule) == 0 {
            return false;
        }
        let name = PyCapsule_GetName(capsule);
        if name.is_null() {
            PyErr_Clear();
            return false;
        }
        let known = std::ffi::CStr::from_ptr(name).to_str() == Ok(CAPSULE_NAME);
        if !known {
            return false;
        }
        let table = PyCapsule_GetPointer(capsule, name) as *const AllocatorCapsule;
        let Some(table) = table.as_ref() else {
            PyErr_Clear();
            return false;
        };
        // The functions live in Polars' extension, which is never unloaded.
        POLARS.get_or_init(|| Allocator { alloc: table.alloc, dealloc: table.dealloc });
    }
    true
}

/// A zero-filled float64 buffer that frees itself with the allocator that made it.
pub(crate) struct Floats {
    ptr: NonNull<f64>,
    len: usize,
    free: unsafe extern "C" fn(*mut u8, usize, usize),
}

// The buffer is owned memory like a Vec<f64>.
unsafe impl Send for Floats {}

impl Floats {
    pub(crate) fn zeroed(len: usize) -> Self {
        let allocator = match POLARS.get() {
            Some(polars) => {
                FROM_POLARS.fetch_add(1, Ordering::Relaxed);
                *polars
            }
            None => SYSTEM,
        };
        if len == 0 {
            return Floats { ptr: NonNull::dangling(), len, free: allocator.dealloc };
        }
        let layout = Layout::array::<f64>(len).expect("a buffer of len float64 fits in memory");
        let raw = unsafe { (allocator.alloc)(layout.size(), layout.align()) } as *mut f64;
        let Some(ptr) = NonNull::new(raw) else { std::alloc::handle_alloc_error(layout) };
        // Zeroed here, not by the allocator's alloc_zeroed: Polars 1.34's took fresh pages
        // from the kernel for each zeroed request (29,000 page faults a 5M x 3 query, 600
        // this way). And zeroed at all, though the plugins write every element: a reused
        // page held another buffer (another query's values or noise), and none of it may
        // reach an output whatever a later change to a plugin forgets to write.
        unsafe { std::ptr::write_bytes(raw, 0, len) };
        Floats { ptr, len, free: allocator.dealloc }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [f64] {
        // Zero-filled (a valid f64 each), owned, and `len` long.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn as_slice(&self) -> &[f64] {
        // As as_mut_slice.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn as_ptr(&self) -> *const c_void {
        self.ptr.as_ptr() as *const c_void
    }
}

impl Drop for Floats {
    fn drop(&mut self) {
        if self.len != 0 {
            unsafe { (self.free)(self.ptr.as_ptr() as *mut u8, self.len * size_of::<f64>(), align_of::<f64>()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_zero_filled_writable_and_freed_by_its_maker() {
        let mut buffer = Floats::zeroed(1000);
        assert!(buffer.as_mut_slice().iter().all(|&x| x == 0.0));
        buffer.as_mut_slice()[999] = 1.5;
        assert_eq!(buffer.as_mut_slice()[999], 1.5);
        assert!(std::ptr::fn_addr_eq(buffer.free, system_dealloc as unsafe extern "C" fn(*mut u8, usize, usize)));
        assert!(Floats::zeroed(0).as_mut_slice().is_empty());
    }
}
