//! rxsteer's kernel programs, split by hook: XDP (`rx_account`, `steer`), tc (`tc_account`),
//! tracepoints (`softirq`, `xdp_trace`, and `rx_driver`: where the driver received, without
//! XDP), the flow dissector that shapes RPS's hash and the lab's wire (`dissect`). Entry points with logic are thin wrappers over a
//! `try_*` function.
#![no_std]
#![no_main]

mod diag;
mod dissect;
mod maps;
mod packet;
mod rx_account;
mod rx_driver;
mod softirq;
mod steer;
mod tc_account;
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
