//! Compiles `proto/memcity/v1/memcity.proto` with protox, a pure-Rust protobuf compiler, so a
//! build needs nothing but cargo (no protoc on the PATH).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/memcity/v1/memcity.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    // The services only with the `grpc` feature: without it the messages need prost alone.
    let grpc = std::env::var_os("CARGO_FEATURE_GRPC").is_some();
    tonic_prost_build::configure()
        .build_client(grpc)
        .build_server(grpc)
        .compile_fds(fds)?;
    Ok(())
}
