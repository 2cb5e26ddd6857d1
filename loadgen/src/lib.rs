//! rxload's pieces that work on bytes alone, apart from the binary so the fuzzer drives the
//! same response parsing the load threads run: the request and its checks, the response
//! reader, the error kinds and the target. And its command line (`cli`, with `bind`, which it
//! parses), so that `rxsteer generate` writes rxload's man page from the real one.
pub mod bind;
pub mod cli;
pub mod protocol;
pub mod response;
pub mod scenario;
pub mod stats;
pub mod target;
