//! Prints each thread's stack as a dump names it: a development aid.
fn main() {
    let path = std::env::args().nth(1).expect("usage: stacks DUMP");
    let heap = memcity_dump::read(std::path::Path::new(&path)).expect("a dump");
    for (serial, frames) in &heap.stacks {
        let name = heap
            .thread_objects
            .get(serial)
            .and_then(|o| heap.thread_names.get(o));
        println!("thread {serial} {name:?}");
        for f in frames.iter().take(4) {
            println!("    {}", f.name);
        }
    }
}
