//! The BPF side of rxsteer, as one room: the embedded kernel programs and the only code that
//! loads, attaches and detaches them (`loader`), the clsact qdisc the tc witnesses may need,
//! and the sampler that turns the maps and /proc into per-CPU samples. Its surface is small:
//! [`Dataplane`] to load, attach (XDP, tc, tracepoints) and fill the steering maps, whose
//! handles come back as [`Counters`]; [`sampler::Sampler`] to take samples from them; and
//! `clsact::recover_crashed` for what a killed run left. Nothing else in rxsteer touches BPF.
pub mod btf;
pub mod clsact;
pub mod cputime;
pub mod lab_wire;
mod loader;
pub mod procfs;
pub mod sampler;

pub use loader::*;
