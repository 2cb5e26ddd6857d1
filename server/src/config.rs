//! What every connection of both engines is held to: request and frame limits, timeouts, the
//! worker's connection limit. Below both engines and the framings, which read it.
use std::time::Duration;

use rxsteer_wire::http1::Limits;

/// Per-connection limits and timeouts.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    pub http: Limits,
    /// Largest ZAP frame (the reference default is 64 MiB); larger closes the connection.
    pub max_frame: usize,
    /// A connection with nothing to read for this long is closed.
    pub idle: Duration,
    /// A request must arrive whole within this long of its first byte; otherwise the
    /// connection is closed. The idle timeout alone never closes a slowloris client that
    /// trickles a byte at a time.
    pub request: Duration,
    /// Bodies at least this long are not copied into the response buffer: the head and the
    /// body go out in one vectored write. `usize::MAX` always copies.
    pub vectored_min: usize,
    /// Connections one worker holds at most (nginx's `worker_connections`); a new one past
    /// it is closed at once and counted in `Served::refused`.
    pub max_connections: usize,
}

/// Default for [`ConnConfig::vectored_min`].
pub const VECTORED_MIN: usize = 16 << 10;
