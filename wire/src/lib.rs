//! The protocols rxsteer's servers and load generator share.
//!
//! - [`zap`]: the 16-byte ZAP message header and its slots.
//! - [`zaphttp`]: ZAP-HTTP v0.3 request/response frames (zap-proto/http), byte-compatible with
//!   the reference encoder, decoded as borrowed views.
//! - [`native`]: the `rpc` scenario's native record (EthCallReq / EthCallResp).
//! - [`http1`]: HTTP/1.1 request parsing (into a stack array) and response encoding.
//! - [`rpc`]: the rpc handler's compute and its JSON form, shared by both transports.
//!
//! Decoders borrow from the input; encoders append to a caller's reused `Vec<u8>`, so a warm
//! connection encodes and decodes without allocating.
pub mod http1;
pub mod native;
pub mod native_bench;
pub mod rpc;
pub mod zap;
pub mod zaphttp;
