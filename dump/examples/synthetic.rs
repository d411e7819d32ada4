//! Writes the unit tests' small heap dump to a file (the fuzz corpus's seed):
//! `cargo run -p memcity-dump --example synthetic -- fuzz/corpus/dump/small.hprof`.

fn main() {
    let path = std::env::args().nth(1).expect("usage: synthetic OUT.hprof");
    std::fs::write(&path, memcity_dump::synthetic::small_heap()).expect("write the dump");
}
