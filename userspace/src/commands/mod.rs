//! One module per command of `rxsteer`. A command uses the shared machinery (the crate's
//! other modules) and never another command: what two commands share moves down into it.
pub mod attach;
pub mod compare;
pub mod generate;
pub mod install;
pub mod lab;
pub mod predict;
pub mod report;
pub mod selftest;
pub mod serve;
pub mod top;
pub mod tune;
