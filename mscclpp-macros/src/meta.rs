//! Parsing and checking the attribute's metadata: `#[collective_program(key = value, ...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, LitStr};

use crate::eval::{Bounds, eval_i64, eval_range, eval_u64};

/// The keys the attribute accepts, as listed in errors.
pub const KEYS: &[&str] = &[
    "name",
    "collective",
    "world_sizes",
    "ranks_per_node",
    "nodes",
    "message_sizes",
    "buffer_mode",
    "protocol",
    "tags",
    "description",
    "thread_blocks",
    "check",
];

/// The collectives, as `(attribute spelling, variant of mscclpp_lang::plan::Collective)`.
pub const COLLECTIVES: &[(&str, &str)] = &[
    ("allgather", "AllGather"),
    ("allreduce", "AllReduce"),
    ("reducescatter", "ReduceScatter"),
    ("alltoall", "AllToAll"),
    ("sendrecv", "SendRecv"),
    ("broadcast", "Broadcast"),
    ("test", "Test"),
    ("custom", "Custom"),
];

/// A protocol named in the attribute or recognized in the signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolName {
    Simple,
    Ll,
    Ll128,
}

impl ProtocolName {
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolName::Simple => "Simple",
            ProtocolName::Ll => "LL",
            ProtocolName::Ll128 => "LL128",
        }
    }
    /// The marker type's name in the eDSL.
    pub fn marker(self) -> &'static str {
        match self {
            ProtocolName::Simple => "Simple",
            ProtocolName::Ll => "LL",
            ProtocolName::Ll128 => "LL128",
        }
    }
}

/// Ranks per node: one node holding the whole world, a range, or a number of equal nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RanksPerNode {
    World,
    Range(Bounds),
    Nodes(u64),
}

/// Which buffer placements the program supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferMode {
    InPlace,
    OutOfPlace,
    Both,
}

/// Everything the attribute said.
#[derive(Debug)]
pub struct Meta {
    pub name: Option<LitStr>,
    pub collective: Option<(&'static str, Span)>,
    pub protocol: Option<(ProtocolName, Span)>,
    pub world_sizes: Option<Bounds>,
    pub ranks_per_node: RanksPerNode,
    pub message_sizes: Bounds,
    pub buffer_mode: BufferMode,
    pub tags: Vec<(String, i64)>,
    pub description: Option<String>,
    /// `(from message size, thread blocks per rank, threads per block or 0 for the default)`, sorted by size.
    pub thread_blocks: Vec<(u64, u64, u32)>,
    /// Whether to generate the `#[test]` that checks every declared world size (`check = false` turns it off).
    pub check: bool,
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            name: None,
            collective: None,
            protocol: None,
            world_sizes: None,
            ranks_per_node: RanksPerNode::World,
            message_sizes: Bounds { lo: 0, hi: None },
            buffer_mode: BufferMode::Both,
            tags: Vec::new(),
            description: None,
            thread_blocks: Vec::new(),
            check: true,
        }
    }
}

/// Parses the attribute's arguments. Errors are spanned at the offending key or value.
pub fn parse(attr: TokenStream) -> syn::Result<Meta> {
    let mut meta = Meta::default();
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|m| parse_key(&mut meta, &mut seen, m));
    syn::parse::Parser::parse2(parser, attr)?;
    let mut missing = Vec::new();
    if meta.collective.is_none() {
        missing.push("`collective = \"...\"` (one of allgather, allreduce, reducescatter, alltoall, sendrecv, broadcast, test, custom)");
    }
    if meta.world_sizes.is_none() {
        missing.push("`world_sizes = A..=B` (the world sizes the program supports)");
    }
    if !missing.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            format!("#[collective_program] is missing required metadata: {}", missing.join(" and ")),
        ));
    }
    Ok(meta)
}

fn parse_key(meta: &mut Meta, seen: &mut Vec<String>, m: ParseNestedMeta<'_>) -> syn::Result<()> {
    let key = m.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
    let key_span = m.path.span();
    if !KEYS.contains(&key.as_str()) {
        let shown = if key.is_empty() { "this".to_string() } else { format!("`{key}`") };
        return Err(syn::Error::new(
            key_span,
            format!("unknown #[collective_program] key {shown}; the valid keys are: {}", KEYS.join(", ")),
        ));
    }
    if seen.contains(&key) {
        return Err(syn::Error::new(key_span, format!("`{key}` is given twice")));
    }
    let other = if key == "nodes" { "ranks_per_node" } else { "nodes" };
    if (key == "nodes" || key == "ranks_per_node") && seen.iter().any(|k| k == other) {
        return Err(syn::Error::new(
            key_span,
            "give either `ranks_per_node` (a number or range) or `nodes` (that many equal nodes), not both",
        ));
    }
    seen.push(key.clone());
    match key.as_str() {
        "name" => {
            let s: LitStr = m.value()?.parse()?;
            let v = s.value();
            if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
                return Err(syn::Error::new(
                    s.span(),
                    "a program name must be non-empty and use only ASCII letters, digits, `_`, `-` and `.` (it names plan files)",
                ));
            }
            meta.name = Some(s);
        }
        "collective" => {
            let s: LitStr = m.value()?.parse()?;
            let v = s.value().to_ascii_lowercase().replace(['_', '-'], "");
            let found = COLLECTIVES.iter().find(|(n, _)| *n == v).ok_or_else(|| {
                let names: Vec<&str> = COLLECTIVES.iter().map(|(n, _)| *n).collect();
                syn::Error::new(
                    s.span(),
                    format!("unknown collective `{}`; expected one of {}", s.value(), names.join(", ")),
                )
            })?;
            meta.collective = Some((found.1, s.span()));
        }
        "protocol" => {
            let s: LitStr = m.value()?.parse()?;
            let p = match s.value().to_ascii_lowercase().as_str() {
                "simple" => ProtocolName::Simple,
                "ll" => ProtocolName::Ll,
                "ll128" => ProtocolName::Ll128,
                _ => {
                    return Err(syn::Error::new(
                        s.span(),
                        format!("unknown protocol `{}`; expected \"Simple\", \"LL\" or \"LL128\"", s.value()),
                    ));
                }
            };
            meta.protocol = Some((p, s.span()));
        }
        "world_sizes" => {
            let e: Expr = m.value()?.parse()?;
            let b = eval_range(&e, "world_sizes")?;
            if b.lo == 0 {
                return Err(syn::Error::new(
                    e.span(),
                    "a world has at least one rank: start `world_sizes` at 1 or more",
                ));
            }
            meta.world_sizes = Some(b);
        }
        "ranks_per_node" => {
            let v = m.value()?;
            if v.peek(LitStr) {
                let s: LitStr = v.parse()?;
                if s.value() != "world" {
                    return Err(syn::Error::new(
                        s.span(),
                        "`ranks_per_node` takes \"world\" (all ranks on one node) or a number or range such as `8` or `1..=8`",
                    ));
                }
                meta.ranks_per_node = RanksPerNode::World;
            } else {
                let e: Expr = v.parse()?;
                let b = eval_range(&e, "ranks_per_node")?;
                if b.lo == 0 {
                    return Err(syn::Error::new(
                        e.span(),
                        "a node holds at least one rank: start `ranks_per_node` at 1",
                    ));
                }
                meta.ranks_per_node = RanksPerNode::Range(b);
            }
        }
        "nodes" => {
            let e: Expr = m.value()?.parse()?;
            let n = eval_u64(&e)?;
            if n == 0 {
                return Err(syn::Error::new(e.span(), "`nodes` is the number of nodes: at least 1"));
            }
            meta.ranks_per_node = RanksPerNode::Nodes(n);
        }
        "message_sizes" => {
            let e: Expr = m.value()?.parse()?;
            meta.message_sizes = eval_range(&e, "message_sizes")?;
        }
        "buffer_mode" => {
            let s: LitStr = m.value()?.parse()?;
            meta.buffer_mode = match s.value().to_ascii_lowercase().replace(['_', '-'], "").as_str() {
                "inplace" => BufferMode::InPlace,
                "outofplace" => BufferMode::OutOfPlace,
                "both" => BufferMode::Both,
                _ => {
                    return Err(syn::Error::new(
                        s.span(),
                        format!(
                            "unknown buffer mode `{}`; expected \"in_place\", \"out_of_place\" or \"both\"",
                            s.value()
                        ),
                    ));
                }
            };
        }
        "tags" => {
            m.parse_nested_meta(|t| {
                let tag = t.path.get_ident().map(|i| i.to_string()).ok_or_else(|| {
                    syn::Error::new(t.path.span(), "a tag is a plain identifier, as in `tags(default = 1)`")
                })?;
                if meta.tags.iter().any(|(k, _)| *k == tag) {
                    return Err(syn::Error::new(t.path.span(), format!("tag `{tag}` is given twice")));
                }
                let value = if t.input.peek(syn::Token![=]) {
                    let e: Expr = t.value()?.parse()?;
                    eval_i64(&e)?
                } else {
                    1
                };
                meta.tags.push((tag, value));
                Ok(())
            })?;
        }
        "description" => {
            let s: LitStr = m.value()?.parse()?;
            meta.description = Some(s.value());
        }
        "thread_blocks" => {
            let e: Expr = m.value()?.parse()?;
            meta.thread_blocks = parse_thread_blocks(&e)?;
        }
        "check" => {
            let b: syn::LitBool = m.value()?.parse()?;
            meta.check = b.value;
        }
        _ => unreachable_key(key_span)?,
    }
    Ok(())
}

/// `thread_blocks = [(from_bytes, blocks), ...]` or `[(from_bytes, blocks, threads_per_block), ...]`: sizes
/// strictly increasing, blocks at least 1, threads a multiple of 32 up to 1024.
fn parse_thread_blocks(e: &Expr) -> syn::Result<Vec<(u64, u64, u32)>> {
    let usage = "`thread_blocks` takes a list of `(from message size in bytes, thread blocks per rank)` pairs, or \
                 `(size, blocks, threads per block)` triples, with increasing sizes, as in \
                 `thread_blocks = [(0, 1, 256), (64 * 1024, 8), (4 << 20, 64)]`";
    let Expr::Array(list) = e else {
        return Err(syn::Error::new(e.span(), usage));
    };
    let mut out: Vec<(u64, u64, u32)> = Vec::new();
    for item in &list.elems {
        let Expr::Tuple(t) = item else {
            return Err(syn::Error::new(item.span(), usage));
        };
        if t.elems.len() != 2 && t.elems.len() != 3 {
            return Err(syn::Error::new(item.span(), usage));
        }
        let threads = match t.elems.get(2) {
            None => 0,
            Some(x) => {
                let v = eval_u64(x)?;
                if v == 0 || v > 1024 || v % 32 != 0 {
                    return Err(syn::Error::new(
                        x.span(),
                        "threads per block must be a multiple of 32 (a whole warp) between 32 and 1024",
                    ));
                }
                v as u32
            }
        };
        let size = eval_u64(&t.elems[0])?;
        let blocks = eval_u64(&t.elems[1])?;
        if blocks == 0 {
            return Err(syn::Error::new(t.elems[1].span(), "a program runs at least one thread block per rank"));
        }
        if out.last().is_some_and(|&(prev, _, _)| prev >= size) {
            return Err(syn::Error::new(t.elems[0].span(), "message sizes in `thread_blocks` must increase"));
        }
        out.push((size, blocks, threads));
    }
    if out.is_empty() {
        return Err(syn::Error::new(e.span(), usage));
    }
    Ok(out)
}

fn unreachable_key(span: Span) -> syn::Result<()> {
    Err(syn::Error::new(span, "internal error: a key in KEYS has no parser"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn full_attribute() {
        let m = parse(quote!(
            name = "x",
            collective = "allreduce",
            world_sizes = 2..=8,
            ranks_per_node = 1..=8,
            message_sizes = 0..=64 * 1024,
            buffer_mode = "in_place",
            protocol = "LL",
            tags(default = 1, prio = -2, nvls)
        ))
        .unwrap();
        assert_eq!(m.name.unwrap().value(), "x");
        assert_eq!(m.collective.unwrap().0, "AllReduce");
        assert_eq!(m.world_sizes, Some(Bounds { lo: 2, hi: Some(8) }));
        assert_eq!(m.ranks_per_node, RanksPerNode::Range(Bounds { lo: 1, hi: Some(8) }));
        assert_eq!(m.message_sizes, Bounds { lo: 0, hi: Some(65536) });
        assert_eq!(m.buffer_mode, BufferMode::InPlace);
        assert_eq!(m.protocol.unwrap().0, ProtocolName::Ll);
        assert_eq!(m.tags, vec![("default".into(), 1), ("prio".into(), -2), ("nvls".into(), 1)]);
    }

    #[test]
    fn errors() {
        let err = |t: TokenStream| parse(t).unwrap_err().to_string();
        assert!(err(quote!(collective = "allgather")).contains("missing required metadata"));
        assert!(err(quote!(colective = "allgather", world_sizes = 2)).contains("valid keys are"));
        assert!(err(quote!(collective = "gather", world_sizes = 2)).contains("unknown collective"));
        assert!(err(quote!(collective = "allgather", world_sizes = 0..=2)).contains("at least one rank"));
        assert!(err(quote!(collective = "allgather", world_sizes = 2, world_sizes = 3)).contains("twice"));
        assert!(err(quote!(collective = "allgather", world_sizes = 2, buffer_mode = "x")).contains("buffer mode"));
    }

    #[test]
    fn thread_blocks_with_threads_per_block() {
        let m = parse(quote!(
            collective = "allreduce",
            world_sizes = 2,
            thread_blocks = [(0, 4, 256), (8 * 1024, 8), (1 << 20, 16, 1024)]
        ))
        .unwrap();
        assert_eq!(m.thread_blocks, vec![(0, 4, 256), (8192, 8, 0), (1 << 20, 16, 1024)]);
        let err = |t: TokenStream| parse(t).unwrap_err().to_string();
        for bad in [quote!([(0, 1, 100)]), quote!([(0, 1, 0)]), quote!([(0, 1, 2048)])] {
            let e = err(quote!(collective = "allreduce", world_sizes = 2, thread_blocks = #bad));
            assert!(e.contains("multiple of 32"), "{e}");
        }
        let e = err(quote!(collective = "allreduce", world_sizes = 2, thread_blocks = [(0, 1, 256, 1)]));
        assert!(e.contains("triples"), "{e}");
    }
}
