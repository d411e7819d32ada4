//! Fuzz target: see `memcity_city::fuzzing::dump_bytes`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    memcity_city::fuzzing::dump_bytes(data);
});
