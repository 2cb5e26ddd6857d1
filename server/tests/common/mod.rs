//! Every server test runs on both engines: `on_each_engine!(a, b)` makes `epoll::a`,
//! `uring::a`, ... from test bodies `fn a(io: ServerIo)`, so a behaviour is written once and
//! the two engines cannot drift apart unseen.
#![allow(unused_macros)]

macro_rules! on_each_engine {
    ($($test:ident),* $(,)?) => {
        mod epoll {
            $(#[test]
            fn $test() {
                super::$test(rxsteer_server::ServerIo::Epoll)
            })*
        }
        mod uring {
            $(#[test]
            fn $test() {
                super::$test(rxsteer_server::ServerIo::Uring)
            })*
        }
    };
}

/// One lazily started server per engine, shared by a test file's tests.
macro_rules! server_per_engine {
    ($cfg:expr) => {
        fn server(io: rxsteer_server::ServerIo) -> &'static rxsteer_server::Server {
            static S: [std::sync::OnceLock<rxsteer_server::Server>; 2] =
                [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
            S[io as usize].get_or_init(|| {
                let mut cfg: rxsteer_server::ServeConfig = $cfg;
                cfg.io = io;
                rxsteer_server::start(cfg).unwrap()
            })
        }
    };
}
