//! Compiles `proto/memcity/v1/memcity.proto` with protox, a pure-Rust protobuf compiler, so a
//! build needs nothing but cargo (no protoc on the PATH).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/memcity/v1/memcity.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
