//! rxsteer: where receive work lands on a Linux host, and what steering it buys.
pub mod attach_cmd;
pub mod child;
pub mod compare;
pub mod cpu_arg;
pub mod host;
pub mod iface;
pub mod lab;
pub mod lab_cmd;
pub mod netns;
pub mod ports;
pub mod privilege;
pub mod serve_cmd;
pub mod signals;
pub mod top;
pub mod traffic;
pub mod tune_cmd;
pub mod view;
