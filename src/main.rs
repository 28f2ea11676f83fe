//! The `zeroclaw` command line.

fn main() {
    println!("zeroclaw {}", env!("CARGO_PKG_VERSION"));
}
