//! The `rpc` scenario's native ZAP record (hanzoai/benchmarks `framework/zip/record`, spec
//! §3.4): fixed 32-byte objects laid out by zap's StructBuilder, text/bytes tails in field
//! order. Inside ZAP-HTTP this message is the body, with no extra prefix.
use crate::zap::{self, u64_at, Message, ZapError};

const FIXED: usize = 32;

/// `EthCallReq{id u64@0, block u64@8, method text@16, account bytes@24}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthCallReq<'a> {
    pub id: u64,
    pub block: u64,
    pub method: &'a [u8],
    pub account: &'a [u8],
}

/// `EthCallResp{id u64@0, balance u64@8, nonce u64@16, blockHash bytes@24}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthCallResp<'a> {
    pub id: u64,
    pub balance: u64,
    pub nonce: u64,
    pub block_hash: &'a [u8],
}

impl<'a> EthCallReq<'a> {
    pub fn decode(msg: &'a [u8]) -> Result<Self, ZapError> {
        let m = Message::parse(msg)?;
        let r = m.root;
        Ok(Self {
            id: u64_at(m.bytes, r),
            block: u64_at(m.bytes, r + 8),
            method: m.bytes_slot(r + 16),
            account: m.bytes_slot(r + 24),
        })
    }

    /// Appends the message (no length prefix).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = zap::begin(out, 0);
        let root = out.len();
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.block.to_le_bytes());
        out.resize(root + FIXED, 0);
        for (slot, data) in [(16, self.method), (24, self.account)] {
            let at = out.len();
            out.extend_from_slice(data);
            zap::set_slot(out, root + slot, at, data.len());
        }
        zap::finish(out, start);
    }
}

impl<'a> EthCallResp<'a> {
    pub fn decode(msg: &'a [u8]) -> Result<Self, ZapError> {
        let m = Message::parse(msg)?;
        let r = m.root;
        Ok(Self {
            id: u64_at(m.bytes, r),
            balance: u64_at(m.bytes, r + 8),
            nonce: u64_at(m.bytes, r + 16),
            block_hash: m.bytes_slot(r + 24),
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = zap::begin(out, 0);
        let root = out.len();
        for v in [self.id, self.balance, self.nonce] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.resize(root + FIXED, 0);
        let at = out.len();
        out.extend_from_slice(self.block_hash);
        zap::set_slot(out, root + 24, at, self.block_hash.len());
        zap::finish(out, start);
    }
}
