//! rxsteer's kernel programs. Each entry point is a thin wrapper over a `try_*` function.
#![no_std]
#![no_main]

mod maps;
mod packet;
mod rx_account;
mod softirq;
mod steer;
mod xdp_trace;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

// GPL-compatible: the tracepoint programs need GPL-only helpers.
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
