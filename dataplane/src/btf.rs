//! Byte offsets of struct members, read from the kernel's BTF (`/sys/kernel/btf/vmlinux`).
//!
//! The receive tracepoints read a few fields of `struct sk_buff` and `struct net_device`
//! (see ebpf/src/rx_driver.rs). aya-ebpf has no CO-RE relocations, so the loader looks the
//! offsets up here at load time and hands them to the programs. Only what that needs is
//! read: the type section's layout (to step over every kind), struct and union members,
//! and the string section. Members of anonymous structs and unions are found through them,
//! as C finds them (`skb->dev` sits in two nested anonymous unions).
use anyhow::{anyhow, bail, Context, Result};

const MAGIC: u16 = 0xeb9f;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_TYPE_TAG: u32 = 18;

/// One member of a struct or union.
#[derive(Clone, Copy, Debug)]
struct Member {
    name_off: u32,
    type_id: u32,
    bit_offset: u32,
}

/// One type: its kind, name and (for structs and unions) members.
#[derive(Clone, Debug)]
struct Type {
    kind: u32,
    name_off: u32,
    /// The referenced type, for typedefs and qualifiers.
    refers: u32,
    members: Vec<Member>,
}

/// The parsed type and string sections. Type ids start at 1 (0 is `void`).
pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16> {
    let s = b
        .get(at..at + 2)
        .ok_or_else(|| anyhow!("BTF cut short at {at}"))?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    let s = b
        .get(at..at + 4)
        .ok_or_else(|| anyhow!("BTF cut short at {at}"))?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Bytes that follow a type's 12-byte header, by kind (include/uapi/linux/btf.h).
fn extra_bytes(kind: u32, vlen: usize) -> Result<usize> {
    Ok(match kind {
        1 | 14 | 17 => 4,             // INT, VAR, DECL_TAG
        3 => 12,                      // ARRAY
        4 | 5 | 15 | 19 => 12 * vlen, // STRUCT, UNION, DATASEC, ENUM64
        6 | 13 => 8 * vlen,           // ENUM, FUNC_PROTO
        2 | 7..=12 | 16 | 18 => 0,
        k => bail!("BTF kind {k} is unknown to rxsteer"),
    })
}

impl Btf {
    /// The running kernel's BTF.
    pub fn of_kernel() -> Result<Self> {
        let path = "/sys/kernel/btf/vmlinux";
        let data = std::fs::read(path).with_context(|| {
            format!("reading {path} (the kernel's BTF, needed to count receives without XDP)")
        })?;
        Self::parse(&data).with_context(|| format!("parsing {path}"))
    }

    pub fn parse(b: &[u8]) -> Result<Self> {
        if u16_at(b, 0)? != MAGIC {
            bail!("not little-endian BTF (bad magic)");
        }
        let hdr_len = u32_at(b, 4)? as usize;
        let (type_off, type_len) = (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize);
        let (str_off, str_len) = (u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let strings = b
            .get(hdr_len + str_off..hdr_len + str_off + str_len)
            .ok_or_else(|| anyhow!("string section outside the file"))?
            .to_vec();
        let sec = b
            .get(hdr_len + type_off..hdr_len + type_off + type_len)
            .ok_or_else(|| anyhow!("type section outside the file"))?;
        let mut types = Vec::new();
        let mut at = 0;
        while at < sec.len() {
            let (name_off, info, size_or_type) =
                (u32_at(sec, at)?, u32_at(sec, at + 4)?, u32_at(sec, at + 8)?);
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let bitfields = info >> 31 == 1;
            let mut members = Vec::new();
            if kind == KIND_STRUCT || kind == KIND_UNION {
                for m in 0..vlen {
                    let p = at + 12 + 12 * m;
                    let offset = u32_at(sec, p + 8)?;
                    members.push(Member {
                        name_off: u32_at(sec, p)?,
                        type_id: u32_at(sec, p + 4)?,
                        bit_offset: if bitfields {
                            offset & 0xff_ffff
                        } else {
                            offset
                        },
                    });
                }
            }
            types.push(Type {
                kind,
                name_off,
                refers: size_or_type,
                members,
            });
            at += 12 + extra_bytes(kind, vlen)?;
        }
        Ok(Self { types, strings })
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = self.strings.get(off as usize..).unwrap_or_default();
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    }

    fn get(&self, id: u32) -> Option<&Type> {
        self.types.get((id as usize).checked_sub(1)?)
    }

    /// Through typedefs and qualifiers to the type itself.
    fn resolve(&self, mut id: u32) -> Option<&Type> {
        for _ in 0..16 {
            let t = self.get(id)?;
            match t.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.refers
                }
                _ => return Some(t),
            }
        }
        None
    }

    /// Byte offset of `member` in `struct name`.
    pub fn member_offset(&self, name: &str, member: &str) -> Result<u32> {
        let t = self
            .types
            .iter()
            .find(|t| t.kind == KIND_STRUCT && self.name(t.name_off) == name.as_bytes())
            .ok_or_else(|| anyhow!("the kernel's BTF has no struct {name}"))?;
        let bits = self
            .find_member(t, member.as_bytes(), 0)
            .ok_or_else(|| anyhow!("the kernel's struct {name} has no member {member}"))?;
        if bits % 8 != 0 {
            bail!("{name}.{member} is a bitfield");
        }
        Ok(bits / 8)
    }

    /// Bit offset of `member` in `t`, looking inside anonymous members too.
    fn find_member(&self, t: &Type, member: &[u8], depth: u32) -> Option<u32> {
        if depth > 8 {
            return None;
        }
        for m in &t.members {
            let name = self.name(m.name_off);
            if name == member {
                return Some(m.bit_offset);
            }
            if name.is_empty() {
                let inner = self.resolve(m.type_id)?;
                if let Some(off) = self.find_member(inner, member, depth + 1) {
                    return Some(m.bit_offset + off);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob with `struct outer { int a; union { struct { int b; long c; }; }; }`.
    fn crafted() -> Vec<u8> {
        let strings = b"\0outer\0a\0b\0c\0int\0long\0".to_vec();
        let s = |n: &str| {
            let hay = std::str::from_utf8(&strings).unwrap();
            hay.find(&format!("\0{n}\0")).unwrap() as u32 + 1
        };
        let mut t = Vec::new();
        let mut ty = |name: u32, info: u32, size: u32, extra: &[u32]| {
            for v in [name, info, size].iter().chain(extra) {
                t.extend_from_slice(&v.to_le_bytes());
            }
        };
        ty(s("int"), 1 << 24, 4, &[32]); // 1: int
        ty(s("long"), 1 << 24, 8, &[64]); // 2: long
        ty(0, (4 << 24) | 2, 16, &[s("b"), 1, 0, s("c"), 2, 64]); // 3: anonymous struct
        ty(0, (5 << 24) | 1, 16, &[0, 3, 0]); // 4: anonymous union
        ty(s("outer"), (4 << 24) | 2, 24, &[s("a"), 1, 0, 0, 4, 64]); // 5: outer
        let mut b = Vec::new();
        for v in [
            u32::from(MAGIC) | (1 << 16),
            24,
            0,
            t.len() as u32,
            t.len() as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        b.extend_from_slice(&t);
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn members_are_found_through_anonymous_unions() {
        let btf = Btf::parse(&crafted()).unwrap();
        assert_eq!(btf.member_offset("outer", "a").unwrap(), 0);
        assert_eq!(btf.member_offset("outer", "b").unwrap(), 8);
        assert_eq!(btf.member_offset("outer", "c").unwrap(), 16);
        let e = btf.member_offset("outer", "d").unwrap_err().to_string();
        assert_eq!(e, "the kernel's struct outer has no member d");
        assert!(btf.member_offset("inner", "a").is_err());
    }

    #[test]
    #[ignore = "needs the kernel's BTF (/sys/kernel/btf/vmlinux); cargo xtask test runs it"]
    fn the_running_kernels_skb_layout_reads() {
        let btf = Btf::of_kernel().unwrap();
        // sk_buff starts with next/prev, then the dev union: dev is the third pointer.
        assert_eq!(btf.member_offset("sk_buff", "dev").unwrap(), 16);
        assert!(btf.member_offset("sk_buff", "mac_header").unwrap() > 100);
        assert!(btf.member_offset("net_device", "ifindex").is_ok());
    }
}
