//! rxload's pieces that work on bytes alone, apart from the binary so the fuzzer drives the
//! same response parsing the load threads run: the request and its checks, the response
//! reader, the error kinds and the target.
pub mod protocol;
pub mod response;
pub mod scenario;
pub mod stats;
pub mod target;
