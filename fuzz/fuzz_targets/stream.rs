//! Fuzz target: see `memcity_city::fuzzing::stream_bytes`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    memcity_city::fuzzing::stream_bytes(data);
});
