//! rxload: the HTTP/1.1 and ZAP load generator. Not built yet (see the loadgen issue): this
//! binary says so and exits non-zero, so nothing can mistake it for a measurement.
fn main() {
    eprintln!("rxload: not implemented yet; the load generator is tracked in its own issue");
    std::process::exit(2);
}
